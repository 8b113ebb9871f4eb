"""The pull request protocol: one request to a consumer's `MSG.NEXT` subject, and its replies.

A pull request is published to `$JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>` with a fresh
inbox as reply subject. The server sends up to `batch` messages (at most `max_bytes` in all),
then a status message unless the batch filled: 404 (nothing more), 408 (the request expired)
or 409 (a conflict: the next message exceeds `max_bytes`, the consumer was deleted, ...).
nats-py's `fetch` cannot send `max_bytes`, so the request is made here.

Requests carry `no_wait`: with `expires`, the server answers as soon as any message is ready
and waits up to `expires` seconds only while there is none; without, it answers at once.
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import nats.errors
from nats.aio.msg import Msg

from resources.backports import StrEnum
from resources.jetstream.errors import (
    ConsumerNotFoundError,
    InvalidArgumentError,
    ServerAPIError,
)

if TYPE_CHECKING:
    from resources.jetstream.core.session import Session

MIN_EXPIRES = 0.001  # seconds; the shortest wait the server accepts


class PullStatus(StrEnum):
    """Status codes the server sends on a pull request's inbox."""

    HEARTBEAT = "100"
    NO_MESSAGES = "404"
    REQUEST_TIMEOUT = "408"
    CONFLICT = "409"
    NO_RESPONDERS = "503"


@dataclass(frozen=True)
class PullRequest:
    """One pull request, as sent to the consumer's `MSG.NEXT` subject."""

    batch: int
    max_bytes: int | None = None
    expires: float | None = None  # seconds; None answers at once (404 when empty)

    def to_json(self) -> bytes:
        body: dict[str, object] = {"batch": self.batch, "no_wait": True}
        if self.max_bytes is not None:
            body["max_bytes"] = self.max_bytes
        if self.expires is not None:
            body["expires"] = int(max(self.expires, MIN_EXPIRES) * 1e9)  # nanoseconds
        return json.dumps(body).encode()


async def pull(client: Session, stream: str, consumer: str, request: PullRequest) -> list[Msg]:
    """Sends one pull request and collects its messages (on the client's loop).

    Returns:
        The delivered messages in order; `[]` when none arrived before the request ended.

    Raises:
        StreamNotFoundError, ConsumerNotFoundError: via `client.run`'s translation.
        InvalidArgumentError: the consumer is a push consumer.
        ServerAPIError: the first message exceeds `max_bytes`, or another conflict.
        nats.errors.TimeoutError: the server never ended the request (translated by `run`).
    """
    nc = client.nc
    subject = f"{client.jsm._prefix}.CONSUMER.MSG.NEXT.{stream}.{consumer}"
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox, pending_msgs_limit=request.batch + 64, pending_bytes_limit=0)
    messages: list[Msg] = []
    deadline = time.monotonic() + (request.expires or 0) + client.settings.request_timeout
    try:
        await nc.publish(subject, request.to_json(), reply=inbox)
        while len(messages) < request.batch:
            try:
                msg = await sub.next_msg(timeout=max(deadline - time.monotonic(), 0.001))
            except nats.errors.TimeoutError:
                if messages:
                    return messages
                raise
            status = (msg.headers or {}).get("Status")
            if status is None:
                messages.append(msg)
            elif status != PullStatus.HEARTBEAT:
                if messages:  # already delivered to us: hand them out, whatever ended the pull
                    return messages
                await _raise_for_status(client, stream, consumer, request, msg, status)
                return []
    finally:
        with contextlib.suppress(nats.errors.Error):
            await sub.unsubscribe()
    return messages


async def _raise_for_status(
    client: Session,
    stream: str,
    consumer: str,
    request: PullRequest,
    msg: Msg,
    status: str,
) -> None:
    """Raises for a status that ended an empty pull; returns for 'nothing to deliver'."""
    description = (msg.headers or {}).get("Description", "").strip()
    where = f"consumer {consumer!r} of stream {stream!r}"
    names = {"stream": stream, "consumer": consumer}
    if status in (PullStatus.NO_MESSAGES, PullStatus.REQUEST_TIMEOUT):
        return
    if status == PullStatus.NO_RESPONDERS:
        await client.jsm.consumer_info(stream, consumer)  # raises "not found" for either
        raise ServerAPIError(
            f"cannot fetch from {where}: nothing answered the pull request; retry",
            code=503,
            **names,
        )
    if status == PullStatus.CONFLICT and "Leadership Change" in description:
        return
    if status == PullStatus.CONFLICT and "MaxBytes" in description:
        raise ServerAPIError(
            f"cannot fetch from {where}: its next message is larger than "
            f"max_bytes={request.max_bytes!r}; fetch with a larger max_bytes",
            code=409,
            **names,
        )
    if status == PullStatus.CONFLICT and "Consumer Deleted" in description:
        raise ConsumerNotFoundError(
            f"cannot fetch from {where}: the consumer was deleted during the fetch; "
            "recreate it (reconcile the topology) before fetching again",
            **names,
        )
    if status == PullStatus.CONFLICT and "push based" in description:
        raise InvalidArgumentError(
            f"cannot fetch from {where}: it is a push consumer (it has a deliver_subject); "
            "use `subscribe_push` or declare a pull consumer",
            **names,
        )
    raise ServerAPIError(
        f"cannot fetch from {where}: the server answered {status} {description!r}",
        code=int(status) if status.isdigit() else None,
        **names,
    )
