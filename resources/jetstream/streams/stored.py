"""Messages stored in a stream: read one by sequence or subject, delete one, purge many.

`StreamMessages` is a base of `streams.manage.Streams`, so these are `client.streams.<method>`.
"""

from __future__ import annotations

import base64
import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nats.js import api

from resources.jetstream.core.validation import validate_name, validate_seq, validate_subject
from resources.jetstream.errors import InvalidArgumentError, MessageNotFoundError, ServerAPIError

if TYPE_CHECKING:
    from resources.jetstream.core.session import Session

SEQUENCE_NOT_FOUND = 10043  # "sequence N not found": a delete in a memory stream, or a gap
DELETE_FAILED = 10057  # a file stream's delete fails with the store's sentinel errors:
STORE_MISSES = frozenset({"stream store EOF", "no message found"})  # beyond last; purged
_HEADER_LINE = b"NATS/1.0"


@dataclass(frozen=True)
class StoredMessage:
    """A message as the stream stores it.

    Attributes:
        stream: the stream that stores it.
        seq: its sequence in the stream.
        subject: the subject it was published to.
        data: the payload, exactly as published.
        headers: the publisher's headers (e.g. `Nats-Msg-Id`); empty if none.
        time: when the server stored it (UTC, to the microsecond).
    """

    stream: str
    seq: int
    subject: str
    data: bytes
    headers: dict[str, str] = field(hash=False)
    time: dt.datetime

    @classmethod
    def from_api(cls, stream: str, message: dict[str, Any]) -> StoredMessage:
        """From the `message` object of a `STREAM.MSG.GET` answer (base64 headers and data)."""
        return cls(
            stream=stream,
            seq=message["seq"],
            subject=message["subject"],
            data=base64.b64decode(message.get("data") or b""),
            headers=parse_headers(base64.b64decode(message.get("hdrs") or b"")),
            time=api.Base._parse_utc_iso(message["time"]),
        )


def parse_headers(raw: bytes) -> dict[str, str]:
    """The headers of a stored message (`NATS/1.0\\r\\nName: Value\\r\\n...`); last one wins."""
    headers: dict[str, str] = {}
    if not raw.startswith(_HEADER_LINE):
        return headers
    for line in raw.split(b"\r\n")[1:]:
        name, sep, value = line.partition(b":")
        if sep and name.strip():
            headers[name.strip().decode("ascii", "replace")] = value.strip().decode(
                "utf-8", "replace"
            )
    return headers


class StreamMessages:
    """Reading, deleting and purging stored messages (part of `client.streams`)."""

    _client: Session

    def get_message(self, stream: str, seq: int) -> StoredMessage:
        """Reads the message stored at `seq`.

        Args:
            stream: the stream.
            seq: the stream sequence (>= 1).

        Returns:
            The stored message.

        Raises:
            InvalidArgumentError: a bad stream name or sequence.
            StreamNotFoundError: the stream does not exist.
            MessageNotFoundError: nothing is stored at `seq` (deleted, purged, expired, or
                beyond the last sequence).
        """
        validate_name("stream", stream)
        validate_seq("seq", seq)
        return self._get(stream, {"seq": seq}, f"read message {seq} of stream {stream!r}", seq=seq)

    def get_last_message(self, stream: str, subject: str) -> StoredMessage:
        """Reads the newest message stored for `subject`.

        Args:
            stream: the stream.
            subject: a subject, or a wildcard filter (the newest match wins).

        Returns:
            The stored message.

        Raises:
            StreamNotFoundError: the stream does not exist.
            MessageNotFoundError: the stream holds no message on `subject`.
        """
        validate_name("stream", stream)
        validate_subject(subject)
        what = f"read the last message on {subject!r} of stream {stream!r}"
        return self._get(stream, {"last_by_subj": subject}, what)

    def get_next_message(
        self, stream: str, seq: int, subject: str | None = None
    ) -> StoredMessage | None:
        """Reads the first message stored at or after `seq` (on `subject`, if given).

        Args:
            stream: the stream.
            seq: the first sequence to look at (>= 1).
            subject: a subject or wildcard filter; None: any subject.

        Returns:
            The message, or None if nothing matching is stored at or after `seq`.

        Raises:
            StreamNotFoundError: the stream does not exist.
        """
        validate_name("stream", stream)
        validate_seq("seq", seq)
        request = {"seq": seq, "next_by_subj": validate_subject(subject or ">")}
        what = f"read the next message at or after {seq} of stream {stream!r}"
        try:
            return self._get(stream, request, what, seq=seq)
        except MessageNotFoundError:
            return None

    def first_seq_at(self, stream: str, moment: dt.datetime) -> int | None:
        """The sequence of the first message the stream stored at or after `moment`.

        Args:
            stream: the stream.
            moment: a timezone-aware time.

        Returns:
            The sequence, or None if the stream stored nothing at or after `moment`.

        Raises:
            InvalidArgumentError: `moment` has no time zone.
            StreamNotFoundError: the stream does not exist.
        """
        validate_name("stream", stream)
        if moment.tzinfo is None:
            raise InvalidArgumentError(f"moment {moment!r} must be timezone-aware (e.g. UTC)")
        start_time = moment.astimezone(dt.timezone.utc).isoformat().replace("+00:00", "Z")
        what = f"find the first message of stream {stream!r} at or after {start_time}"
        try:
            return self._get(stream, {"start_time": start_time}, what).seq
        except MessageNotFoundError:
            return None

    def delete_message(self, stream: str, seq: int, *, erase: bool = False) -> None:
        """Deletes the message stored at `seq`.

        Args:
            stream: the stream.
            seq: the stream sequence (>= 1).
            erase: overwrite the stored bytes with random data before removing them (secure
                erase; slower). A plain delete only marks the message removed.

        Raises:
            StreamNotFoundError: the stream does not exist.
            MessageNotFoundError: nothing is stored at `seq`.
            ServerAPIError: the stream denies deletes (`deny_delete`).
        """
        validate_name("stream", stream)
        validate_seq("seq", seq)
        what = f"{'erase' if erase else 'delete'} message {seq} of stream {stream!r}"
        try:
            self._request(
                "STREAM.MSG.DELETE",
                stream,
                {"seq": seq, "no_erase": not erase},
                what,
                repeatable=False,
            )
        except ServerAPIError as error:
            description = getattr(error.__cause__, "description", None)
            missing = error.err_code == SEQUENCE_NOT_FOUND or (
                error.err_code == DELETE_FAILED and description in STORE_MISSES
            )
            if not missing:
                raise
            raise MessageNotFoundError(
                f"cannot {what}: nothing is stored at sequence {seq} (already deleted, purged "
                "or expired, or beyond the last sequence)",
                stream=stream,
                seq=seq,
            ) from error

    def purge(
        self,
        stream: str,
        *,
        subject: str | None = None,
        keep: int | None = None,
        before_seq: int | None = None,
    ) -> int:
        """Removes stored messages: all of them, or those matching the options.

        Args:
            stream: the stream.
            subject: only messages on this subject or wildcard filter.
            keep: keep the newest `keep` messages (of those matching `subject`).
            before_seq: only messages with a sequence below this one (it is kept).

        Returns:
            How many messages were removed.

        Raises:
            InvalidArgumentError: both `keep` and `before_seq`, or a bad value.
            StreamNotFoundError: the stream does not exist.
        """
        validate_name("stream", stream)
        request: dict[str, Any] = {}
        if subject is not None:
            request["filter"] = validate_subject(subject)
        if keep is not None and before_seq is not None:
            raise InvalidArgumentError(
                f"purge of stream {stream!r}: give keep or before_seq, not both "
                f"(got keep={keep!r}, before_seq={before_seq!r})"
            )
        if keep is not None and validate_seq("keep", keep, minimum=0):
            request["keep"] = keep
        if before_seq is not None:
            request["seq"] = validate_seq("before_seq", before_seq)
        answer = self._request(
            "STREAM.PURGE", stream, request, f"purge stream {stream!r}", repeatable=False
        )
        return int(answer.get("purged", 0))

    def _get(self, stream: str, request: dict[str, Any], what: str, **names) -> StoredMessage:
        answer = self._request("STREAM.MSG.GET", stream, request, what, **names)
        return StoredMessage.from_api(stream, answer["message"])

    def _request(
        self,
        endpoint: str,
        stream: str,
        request: dict[str, Any],
        what: str,
        *,
        repeatable: bool = True,
        **names,
    ):
        return self._client.api_request(
            f"{endpoint}.{stream}",
            request,
            what=what,
            repeatable=repeatable,
            stream=stream,
            **names,
        )


__all__ = ["StoredMessage", "StreamMessages", "parse_headers"]
