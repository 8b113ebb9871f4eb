"""Sending publishes: one message and its ack, or a batch with bounded acks in flight.

Each publish is a request to the subject; the stream that captures it answers with a
`PubAck` or an API error. Expectations travel as headers (`Nats-Expected-*`) and the server
rejects the message when one is not met, which makes optimistic concurrency possible.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import nats.errors
import nats.js.errors

from resources.jetstream.core.messages import MSG_ID_HEADER, PubAck
from resources.jetstream.core.validation import validate_seq, validate_subject
from resources.jetstream.errors import (
    EXPECTED_STREAM_MISMATCH,
    WRONG_LAST_MSG_ID,
    WRONG_LAST_SEQUENCE,
    InvalidArgumentError,
    JetStreamError,
    NoStreamForSubjectError,
    PublishExpectationError,
    RequestTimeoutError,
    translate_api_error,
)
from resources.jetstream.publishing.expectations import (
    Expectations,
    header_block_size,
    outbound_headers,
)

if TYPE_CHECKING:
    from nats.aio.client import Client as NATS

    from resources.jetstream.core.session import Session

OutboundMessage = tuple[str, bytes, Mapping[str, str] | None]


class Retrier:
    """Retries publishes through a stream's leader election (the client's retry budget).

    A publish that got "no responders" was not stored: it is sent again as long as some
    stream captures its subject (asked once per subject). One that timed out may have been
    stored: it is sent again only with a `Nats-Msg-Id`, which makes the stream drop the
    repeat.
    """

    def __init__(self, client: Session) -> None:
        self._client = client
        self._captured: dict[str, bool] = {}

    async def request(
        self, nc: NATS, subject: str, data: bytes, headers: dict[str, str] | None, timeout: float
    ):
        async def gone() -> bool:
            if subject not in self._captured:
                self._captured[subject] = await self._captured_by_a_stream(subject)
            return not self._captured[subject]

        return await self._client.retrying(
            lambda: _checked_request(nc, subject, data, headers, timeout),
            what=f"publish to {subject!r}",
            repeatable=bool(headers and headers.get(MSG_ID_HEADER)),
            gone=gone,
        )

    async def _captured_by_a_stream(self, subject: str) -> bool:
        jsm, timeout = self._client.jsm, self._client.settings.request_timeout
        body = json.dumps({"subject": subject}).encode()
        try:
            answer = await jsm._api_request(f"{jsm._prefix}.STREAM.NAMES", body, timeout=timeout)
        except (nats.errors.Error, TimeoutError):
            return True  # not known to be missing: keep retrying
        return bool(answer.get("streams"))


async def request_publish(
    nc: NATS,
    subject: str,
    data: bytes,
    headers: dict[str, str] | None,
    *,
    timeout: float,
    retrier: Retrier | None = None,
) -> PubAck:
    """Publishes one message and waits for its ack (on the client's loop).

    Every send is checked against the server's `max_payload` first (see `check_size`).

    Raises:
        InvalidArgumentError: payload + headers exceed the server's `max_payload`; nothing
            was sent and the connection is kept.
        NoStreamForSubjectError: no stream captures `subject`.
        PublishExpectationError: the stream rejected an expectation header.
        RequestTimeoutError: no answer within `timeout` seconds (without `retrier`).
        ClusterUnavailableError: with `retrier`, the stream had no leader for its budget.
        JetStreamError: any other rejection, translated.
    """
    what = f"publish to {subject!r}"
    try:
        if retrier is None:
            reply = await _checked_request(nc, subject, data, headers, timeout)
        else:
            reply = await retrier.request(nc, subject, data, headers, timeout)
    except nats.errors.NoRespondersError:
        raise NoStreamForSubjectError(
            f"cannot {what}: no stream captures this subject; add it to a stream's subjects "
            "(see the topology) or fix the subject"
        ) from None
    except nats.errors.TimeoutError:
        raise RequestTimeoutError(
            f"cannot {what}: no acknowledgement within {timeout}s; the stream may be "
            "unavailable (publish again with the same msg_id to stay duplicate-free)"
        ) from None
    try:
        response = json.loads(reply.data)
    except ValueError:
        response = None
    if not isinstance(response, dict):
        raise NoStreamForSubjectError(
            f"cannot {what}: it was answered by a plain NATS subscriber, not a stream; "
            "no stream captures this subject"
        )
    if "error" not in response:
        return PubAck.from_response(response)
    error = _api_error(response["error"])
    stream = response.get("stream") or None
    err_code = error.err_code or 0
    if err_code in (WRONG_LAST_SEQUENCE, WRONG_LAST_MSG_ID, EXPECTED_STREAM_MISMATCH):
        description = error.description or ""
        actual = stream if err_code == EXPECTED_STREAM_MISMATCH else description.rpartition(": ")[2]
        violation = Expectations.from_headers(headers).describe_violation(err_code, actual)
        raise PublishExpectationError(
            f"publish to {subject!r} rejected by stream {stream!r}: {violation} "
            f"({description}); re-read the stream state and publish with the current "
            "expectation",
            stream=stream,
        )
    raise translate_api_error(error, what, stream=stream)


async def _checked_request(
    nc: NATS, subject: str, data: bytes, headers: dict[str, str] | None, timeout: float
):
    """`nc.request`, after checking the whole message against the server's `max_payload`
    (read at each try: a reconnect may reach a server with another limit)."""
    check_size(nc.max_payload, subject, data, headers)
    return await nc.request(subject, data, timeout=timeout, headers=headers)


def check_size(
    max_payload: int, subject: str, data: bytes, headers: Mapping[str, str] | None
) -> None:
    """Refuses a message the server would refuse for its size, before it is sent.

    The server counts payload + header block against `max_payload` (`HPUB`'s total size)
    and answers a larger message by closing the connection, which cuts off every other
    user of it; nats-py checks the payload alone. A message of exactly `max_payload` bytes
    is accepted.

    Raises:
        InvalidArgumentError: payload + headers exceed `max_payload`.
    """
    header_size = header_block_size(headers)
    total = len(data) + header_size
    if total > max_payload:
        raise InvalidArgumentError(
            f"cannot publish to {subject!r}: the message is payload {len(data)} + headers "
            f"{header_size} = {total} bytes, more than the server's max_payload of "
            f"{max_payload} bytes; nothing was sent. Send a smaller payload "
            "(or fewer headers), raise the server's max_payload (`max_payload` in the "
            "nats-server configuration), or store large payloads in the Object Store and "
            "publish a reference to them"
        )


def publish(
    client: Session,
    subject: str,
    data: bytes,
    *,
    headers: Mapping[str, str] | None = None,
    msg_id: str | None = None,
    expect: Expectations | None = None,
    timeout: float | None = None,
) -> PubAck:
    """Publishes one message and waits for the stream's acknowledgement.

    Args:
        client: the connected client.
        subject: a subject captured by a stream (no wildcards).
        data: the payload, stored exactly as given.
        headers: message headers.
        msg_id: sets `Nats-Msg-Id`; the stream drops a repeat inside its duplicate window and
            acknowledges it with `duplicate=True` and the original's sequence.
        expect: what the stream must look like (`Nats-Expected-*` headers).
        timeout: seconds to wait for the acknowledgement (default: the request timeout).

    Returns:
        Where the message was stored.

    Raises:
        InvalidArgumentError: a bad subject, payload, header or expectation (before I/O);
            or payload + headers exceed the server's `max_payload` (nothing sent, the
            connection kept).
        NoStreamForSubjectError: no stream captures `subject`.
        PublishExpectationError: an expectation was not met; nothing was stored.
        RequestTimeoutError: no acknowledgement in time, without a msg_id (publish again
            with one to stay duplicate-free).
        ClusterUnavailableError: the stream had no leader for the client's retry budget
            ("no responders", or timeouts of a publish with a msg_id, which are retried).
    """
    validate_subject(subject, wildcards=False)
    _check_payload(data)
    wait = _check_timeout(client, timeout)
    hdrs = outbound_headers(headers, msg_id, expect or Expectations())
    coro = request_publish(
        client.nc, subject, bytes(data), hdrs, timeout=wait, retrier=Retrier(client)
    )
    return client.run(
        coro,
        what=f"publish to {subject!r}",
        timeout=client.settings.retry_budget + wait + 5,
    )


def publish_batch(
    client: Session,
    messages: Iterable[OutboundMessage],
    *,
    max_in_flight: int = 256,
    timeout: float | None = None,
) -> list[PubAck]:
    """Publishes many messages with at most `max_in_flight` acknowledgements outstanding.

    Submission stops at the first failure; the publishes already in flight finish. Each
    publish rides out a stream leader's election as `publish` does (retried after "no
    responders", and after a timeout when it carries a `Nats-Msg-Id`).

    Args:
        client: the connected client.
        messages: (subject, data) pairs or (subject, data, headers) triples; put
            `Nats-Msg-Id` (and any `Nats-Expected-*`) in the headers.
        max_in_flight: the bound on unacknowledged publishes.
        timeout: seconds to wait for each acknowledgement (default: the request timeout).

    Returns:
        One acknowledgement per message, in input order.

    Raises:
        InvalidArgumentError: a bad message or bound (all checked before any I/O), or a
            message whose payload + headers exceed the server's `max_payload` (all checked
            before the first publish: nothing of the batch was sent).
        JetStreamError: the error of the first failed message in input order, with a note
            saying how many messages were acknowledged.
    """
    validate_seq("max_in_flight", max_in_flight)
    wait = _check_timeout(client, timeout)
    batch: list[tuple[str, bytes, dict[str, str] | None]] = []
    for index, item in enumerate(messages):
        if not isinstance(item, tuple) or len(item) not in (2, 3):
            raise InvalidArgumentError(
                f"batch message {index} must be (subject, data) or (subject, data, headers), "
                f"got {item!r}"
            )
        subject, data, headers = item if len(item) == 3 else (*item, None)
        validate_subject(subject, wildcards=False)
        _check_payload(data)
        batch.append((subject, bytes(data), outbound_headers(headers, None, Expectations())))
    if not batch:
        return []
    max_payload = client.nc.max_payload
    for index, (subject, data, headers) in enumerate(batch):
        try:
            check_size(max_payload, subject, data, headers)
        except InvalidArgumentError as error:
            error.add_note(
                f"batch message {index} of {len(batch)} is too large; nothing of the batch was sent"
            )
            raise
    return client.run(
        _publish_window(client.nc, batch, max_in_flight, wait, Retrier(client)),
        what=f"publish a batch of {len(batch)} messages",
        timeout=math.inf,  # each publish is bounded by `wait`
    )


async def _publish_window(
    nc: NATS,
    batch: list[tuple[str, bytes, dict[str, str] | None]],
    max_in_flight: int,
    timeout: float,
    retrier: Retrier,
) -> list[PubAck]:
    """Keeps at most `max_in_flight` publishes unacknowledged; stops submitting on a failure."""
    window = asyncio.Semaphore(max_in_flight)
    failed = False

    async def one(subject: str, data: bytes, headers: dict[str, str] | None) -> PubAck:
        nonlocal failed
        try:
            return await request_publish(
                nc, subject, data, headers, timeout=timeout, retrier=retrier
            )
        except BaseException:
            failed = True
            raise
        finally:
            window.release()

    tasks: list[asyncio.Task[PubAck]] = []
    for subject, data, headers in batch:
        await window.acquire()
        if failed:
            window.release()
            break
        tasks.append(asyncio.ensure_future(one(subject, data, headers)))
    results = await asyncio.gather(*tasks, return_exceptions=True)
    for index, result in enumerate(results):
        if isinstance(result, BaseException):
            stored = sum(isinstance(r, PubAck) for r in results)
            if isinstance(result, JetStreamError):
                result.add_note(
                    f"batch message {index} of {len(batch)} failed; {stored} messages were "
                    f"acknowledged and {len(batch) - len(tasks)} never sent. Publish the batch "
                    "again with Nats-Msg-Id headers to complete it without duplicates."
                )
            raise result
    return list(results)  # type: ignore[arg-type]


def _api_error(body: dict) -> nats.js.errors.APIError:
    try:
        nats.js.errors.APIError.from_error(body)  # raises the class for the code
    except nats.js.errors.APIError as error:
        return error
    return nats.js.errors.APIError(**body)


def _check_payload(data: object) -> None:
    if not isinstance(data, bytes | bytearray | memoryview):
        raise InvalidArgumentError(f"payload must be bytes, got {type(data).__name__}")


def _check_timeout(client: Session, timeout: float | None) -> float:
    if timeout is None:
        return client.settings.request_timeout
    if timeout <= 0:
        raise InvalidArgumentError(f"publish timeout must be positive, got {timeout!r}")
    return timeout
