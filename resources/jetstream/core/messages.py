"""Plain values for what JetStream hands back: publish acknowledgements and messages."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nats.aio.msg import Msg

from resources.jetstream.errors import InvalidArgumentError

if TYPE_CHECKING:
    from resources.jetstream.core.session import Session

MSG_ID_HEADER = "Nats-Msg-Id"


@dataclass(frozen=True)
class PubAck:
    """The server's acknowledgement of a publish: where the message was stored.

    Attributes:
        stream: the stream that stored the message.
        seq: its sequence in that stream (for a duplicate, the original's sequence).
        duplicate: True when the stream dropped the message as a repeat of an earlier
            `Nats-Msg-Id` inside its duplicate window.
    """

    stream: str
    seq: int
    duplicate: bool = False
    domain: str | None = None

    @classmethod
    def from_response(cls, response: dict[str, Any]) -> PubAck:
        """Builds the ack from the server's JSON answer (unknown fields are ignored)."""
        return cls(
            stream=response["stream"],
            seq=int(response["seq"]),
            duplicate=bool(response.get("duplicate", False)),
            domain=response.get("domain"),
        )


@dataclass
class JsMessage:
    """A message delivered by a JetStream consumer, with its metadata and ack methods.

    Exactly one of `ack`, `nak` and `term` settles a message; `in_progress` may be sent any
    number of times before that. Messages from an ordered read are not acknowledged.

    Attributes:
        stream_seq: the message's sequence in the stream (its identity).
        consumer_seq: the delivery sequence of this consumer.
        timestamp: when the server stored the message (UTC).
        num_delivered: how many times this message has been delivered (1 the first time).
        num_pending: messages left for this consumer after this one.
    """

    stream: str
    consumer: str
    subject: str
    data: bytes
    headers: dict[str, str]
    stream_seq: int
    consumer_seq: int
    timestamp: dt.datetime
    num_delivered: int
    num_pending: int
    _raw: Msg = field(repr=False)
    _client: Session = field(repr=False)

    @property
    def msg_id(self) -> str | None:
        """The publisher's `Nats-Msg-Id` header, if any."""
        return self.headers.get(MSG_ID_HEADER)

    @property
    def redelivered(self) -> bool:
        return self.num_delivered > 1

    @property
    def is_settled(self) -> bool:
        """Whether `ack`, `nak` or `term` was already sent for this delivery."""
        return self._raw.is_acked

    def ack(self) -> None:
        """Acknowledges the message (fire and forget).

        Raises:
            InvalidArgumentError: the message was already settled.
        """
        self._settle(self._raw.ack(), "ack")

    def ack_sync(self) -> None:
        """Acknowledges the message and waits for the server to confirm it.

        Raises:
            InvalidArgumentError: the message was already settled.
            RequestTimeoutError: the server did not confirm within the request timeout.
        """
        self._settle(self._raw.ack_sync(timeout=self._client.settings.request_timeout), "ack")

    def nak(self, delay: float | None = None) -> None:
        """Asks for redelivery, after `delay` seconds if given (else at once).

        Raises:
            InvalidArgumentError: `delay` is negative, or the message was already settled.
        """
        if delay is not None and delay < 0:
            raise InvalidArgumentError(f"nak delay must not be negative, got {delay!r}")
        self._settle(self._raw.nak(delay=delay), "nak")

    def in_progress(self) -> None:
        """Tells the server the message is still being worked on (restarts its ack_wait).

        Raises:
            InvalidArgumentError: the message was already settled.
        """
        self._settle(self._raw.in_progress(), "in-progress")

    def term(self) -> None:
        """Tells the server never to redeliver this message.

        Raises:
            InvalidArgumentError: the message was already settled.
        """
        self._settle(self._raw.term(), "term")

    def _settle(self, coro, verb: str) -> None:
        what = f"{verb} message {self.stream_seq} of consumer {self.consumer!r}"
        if self._raw.is_acked:
            coro.close()
            raise InvalidArgumentError(
                f"cannot {what}: it was already settled (ack, nak or term); "
                "each delivery takes exactly one of them",
                stream=self.stream,
                consumer=self.consumer,
                seq=self.stream_seq,
            )
        self._client.run(
            coro, what=what, stream=self.stream, consumer=self.consumer, seq=self.stream_seq
        )

    @classmethod
    def from_nats(cls, msg: Msg, client: Session) -> JsMessage:
        meta = msg.metadata
        return cls(
            stream=meta.stream,
            consumer=meta.consumer,
            subject=msg.subject,
            data=msg.data,
            headers={str(getattr(k, "value", k)): v for k, v in (msg.headers or {}).items()},
            stream_seq=meta.sequence.stream,
            consumer_seq=meta.sequence.consumer,
            timestamp=meta.timestamp,
            num_delivered=meta.num_delivered,
            num_pending=meta.num_pending,
            _raw=msg,
            _client=client,
        )
