"""What a publish expects of the stream, and the headers that carry it.

The server checks `Nats-Expected-*` headers before storing a message and rejects it when
one is not met, which makes optimistic concurrency possible (publish only if nothing
reached the subject since the sequence read).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from nats.js.api import Header

from resources.jetstream.core.messages import MSG_ID_HEADER
from resources.jetstream.core.validation import validate_name, validate_seq
from resources.jetstream.errors import (
    EXPECTED_STREAM_MISMATCH,
    WRONG_LAST_MSG_ID,
    InvalidArgumentError,
)


@dataclass(frozen=True)
class Expectations:
    """What the stream must look like for a publish to be accepted (None: no expectation)."""

    stream: str | None = None
    last_seq: int | None = None
    last_msg_id: str | None = None
    last_subject_seq: int | None = None

    def __post_init__(self) -> None:
        if self.stream is not None:
            validate_name("stream", self.stream)
        for name in ("last_seq", "last_subject_seq"):
            if getattr(self, name) is not None:  # 0: no message yet
                validate_seq(f"expected_{name}", getattr(self, name), minimum=0)
        if self.last_msg_id is not None and not self.last_msg_id:
            raise InvalidArgumentError("expected_last_msg_id must not be empty")

    @classmethod
    def from_headers(cls, headers: Mapping[str, str] | None) -> Expectations:
        """Reads the expectations back from outbound headers (for error messages)."""
        hdrs = headers or {}

        def seq(header: Header) -> int | None:
            value = hdrs.get(header.value)
            return int(value) if value is not None and value.isdigit() else None

        try:
            return cls(
                stream=hdrs.get(Header.EXPECTED_STREAM.value),
                last_seq=seq(Header.EXPECTED_LAST_SEQUENCE),
                last_msg_id=hdrs.get(Header.EXPECTED_LAST_MSG_ID.value),
                last_subject_seq=seq(Header.EXPECTED_LAST_SUBJECT_SEQUENCE),
            )
        except InvalidArgumentError:  # a raw header the server read differently
            return cls()

    def headers(self) -> dict[str, str]:
        pairs = (
            (Header.EXPECTED_STREAM, self.stream),
            (Header.EXPECTED_LAST_SEQUENCE, self.last_seq),
            (Header.EXPECTED_LAST_MSG_ID, self.last_msg_id),
            (Header.EXPECTED_LAST_SUBJECT_SEQUENCE, self.last_subject_seq),
        )
        return {header.value: str(value) for header, value in pairs if value is not None}

    def describe_violation(self, err_code: int, actual: str) -> str:
        """States which expectation failed, given the server's error code and actual value."""
        if err_code == EXPECTED_STREAM_MISMATCH:
            return f"expected stream {self.stream!r} but the subject is stored in {actual!r}"
        if err_code == WRONG_LAST_MSG_ID:
            return f"expected last msg-id {self.last_msg_id!r} but it is {actual!r}"
        wanted = [
            f"{label} {value}"
            for label, value in (
                ("last sequence of the stream", self.last_seq),
                ("last sequence of the subject", self.last_subject_seq),
            )
            if value is not None
        ]
        return f"expected {' and '.join(wanted) or 'a last sequence'} but it is {actual}"


# How nats-py writes the header block of an HPUB (`Client._send_publish` in
# nats/aio/client.py): the status line, one `name: value` line per header (name and value
# stripped, CR/LF in a value turned into spaces, both UTF-8), then an empty line. nats-py
# refuses a name outside these characters (`BadHeaderError`) and skips an empty one.
_HEADER_STATUS_LINE = b"NATS/1.0\r\n"
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HEADER_VALUE_NEWLINES = str.maketrans({"\r": " ", "\n": " "})


def header_block_size(headers: Mapping[str, str] | None) -> int:
    """Bytes of the header block nats-py sends with `headers`, as the server counts them.

    The server checks header block + payload against its `max_payload`. None sends a plain
    PUB (0 bytes); any mapping, even an empty one, sends an HPUB with at least the status
    line and the closing empty line (12 bytes).
    """
    if headers is None:
        return 0
    size = len(_HEADER_STATUS_LINE) + 2  # the status line, and the empty line ending the block
    for key, value in headers.items():
        name = key.strip()
        if name:
            line = value.strip().translate(_HEADER_VALUE_NEWLINES)
            size += len(name.encode()) + 2 + len(line.encode()) + 2  # "name: value\r\n"
    return size


def outbound_headers(
    headers: Mapping[str, str] | None, msg_id: str | None, expect: Expectations
) -> dict[str, str] | None:
    """Merges the caller's headers, the msg-id and the expectation headers (checked first)."""
    merged = dict(headers or {})
    for key, value in merged.items():
        if not isinstance(key, str) or not key or not isinstance(value, str):
            raise InvalidArgumentError(f"header {key!r}: {value!r} must map a name to a str")
        if not _HEADER_NAME.fullmatch(key.strip()):
            raise InvalidArgumentError(
                f"header name {key!r} is not a valid NATS header name (letters, digits and "
                "!#$%&'*+-.^_`|~, no spaces or colons)"
            )
    if msg_id is not None:
        if not isinstance(msg_id, str) or not msg_id:
            raise InvalidArgumentError(f"msg_id must be a non-empty str, got {msg_id!r}")
        merged[MSG_ID_HEADER] = msg_id
    merged.update(expect.headers())
    return merged or None
