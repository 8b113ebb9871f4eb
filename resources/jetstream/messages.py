"""Plain values for what JetStream hands back: publish acknowledgements and messages."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nats.aio.msg import Msg

if TYPE_CHECKING:
    from resources.jetstream.client import JetStreamClient

MSG_ID_HEADER = "Nats-Msg-Id"


@dataclass(frozen=True)
class PubAck:
    """The server's acknowledgement of a publish: where the message was stored."""

    stream: str
    seq: int
    duplicate: bool = False
    domain: str | None = None


@dataclass
class JsMessage:
    """A message delivered by a JetStream consumer, with its metadata and ack methods.

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
    _client: JetStreamClient = field(repr=False)

    @property
    def msg_id(self) -> str | None:
        """The publisher's `Nats-Msg-Id` header, if any."""
        return self.headers.get(MSG_ID_HEADER)

    @property
    def redelivered(self) -> bool:
        return self.num_delivered > 1

    def ack(self) -> None:
        """Acknowledges the message (fire and forget)."""
        self._settle(self._raw.ack(), "ack")

    def ack_sync(self) -> None:
        """Acknowledges the message and waits for the server to confirm it."""
        self._settle(self._raw.ack_sync(timeout=self._client.settings.request_timeout), "ack")

    def nak(self, delay: float | None = None) -> None:
        """Asks for redelivery, after `delay` seconds if given."""
        self._settle(self._raw.nak(delay=delay), "nak")

    def in_progress(self) -> None:
        """Tells the server the message is still being worked on (resets ack_wait)."""
        self._settle(self._raw.in_progress(), "in-progress")

    def term(self) -> None:
        """Tells the server never to redeliver this message."""
        self._settle(self._raw.term(), "term")

    def _settle(self, coro, verb: str) -> None:
        self._client.run(
            coro,
            what=f"{verb} message {self.stream_seq} of consumer {self.consumer!r}",
            stream=self.stream,
            consumer=self.consumer,
            seq=self.stream_seq,
        )

    @classmethod
    def from_nats(cls, msg: Msg, client: JetStreamClient) -> JsMessage:
        meta = msg.metadata
        return cls(
            stream=meta.stream,
            consumer=meta.consumer,
            subject=msg.subject,
            data=msg.data,
            headers=dict(msg.headers or {}),
            stream_seq=meta.sequence.stream,
            consumer_seq=meta.sequence.consumer,
            timestamp=meta.timestamp,
            num_delivered=meta.num_delivered,
            num_pending=meta.num_pending,
            _raw=msg,
            _client=client,
        )
