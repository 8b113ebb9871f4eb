"""Moving a consumer without changing its config: pause, resume, reset.

`ConsumerControl` is a base of `manage.Consumers`, so these are `client.consumers.<method>`.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from resources.jetstream.consumers.state import ConsumerState
from resources.jetstream.core.validation import validate_aware_datetime, validate_name, validate_seq
from resources.jetstream.errors import InvalidArgumentError, ServerAPIError

if TYPE_CHECKING:
    from resources.jetstream.core.session import Session

INVALID_RESET = 10204  # "invalid reset: not allowed"


class ConsumerControl:
    """Pausing, resuming and resetting consumers (part of `client.consumers`)."""

    _client: Session

    def info(self, stream: str, consumer: str) -> ConsumerState:
        """The consumer's state (`Consumers.info`)."""
        raise NotImplementedError

    def pause(self, stream: str, consumer: str, until: dt.datetime) -> ConsumerState:
        """Stops deliveries until `until`; the consumer keeps its position.

        Args:
            stream: the stream.
            consumer: the consumer.
            until: a timezone-aware time in the future; deliveries resume by themselves then.

        Returns:
            The consumer, with `paused=True` and `pause_until`.

        Raises:
            InvalidArgumentError: `until` is naive or not in the future (use `resume`).
            ConsumerNotFoundError: the consumer does not exist.
        """
        validate_name("stream", stream)
        validate_name("consumer", consumer)
        until = validate_aware_datetime("pause until", until)
        if until <= dt.datetime.now(dt.timezone.utc):
            raise InvalidArgumentError(
                f"cannot pause consumer {consumer!r} of stream {stream!r} until {until!r}: that "
                "is not in the future; to deliver again now, call resume()"
            )
        stamp = until.isoformat().replace("+00:00", "Z")
        self._client.run(
            self._client.jsm.pause_consumer(stream, consumer, stamp),
            what=f"pause consumer {consumer!r} of stream {stream!r}",
            stream=stream,
            consumer=consumer,
        )
        return self.info(stream, consumer)

    def resume(self, stream: str, consumer: str) -> ConsumerState:
        """Resumes deliveries of a paused consumer now (a no-op if it is not paused).

        Args:
            stream: the stream.
            consumer: the consumer.

        Returns:
            The consumer, with `paused=False`.

        Raises:
            ConsumerNotFoundError: the consumer does not exist.
        """
        validate_name("stream", stream)
        validate_name("consumer", consumer)
        self._client.run(
            self._client.jsm.resume_consumer(stream, consumer),
            what=f"resume consumer {consumer!r} of stream {stream!r}",
            stream=stream,
            consumer=consumer,
        )
        return self.info(stream, consumer)

    def reset(self, stream: str, consumer: str, seq: int | None = None) -> ConsumerState:
        """Moves the consumer so that its next delivery is stream sequence `seq`.

        Pending acks and redelivery counts are dropped, the ack floor becomes `seq - 1`, and
        the delivery sequence restarts. Without `seq`, delivery restarts just above the
        current ack floor (everything unacknowledged is delivered again). Needs
        nats-server 2.14+.

        Args:
            stream: the stream.
            consumer: the consumer; with `seq`, its deliver policy must be 'all',
                'by_start_sequence' or 'by_start_time' (and `seq` not before its start).
            seq: the stream sequence to deliver next (>= 1).

        Returns:
            The consumer after the reset.

        Raises:
            InvalidArgumentError: `seq` is not an integer >= 1.
            ConsumerNotFoundError: the consumer does not exist.
            ServerAPIError: the server refused the reset for this consumer's deliver policy.
        """
        validate_name("stream", stream)
        validate_name("consumer", consumer)
        if seq is not None:
            validate_seq("seq", seq)
        # nats-server 2.15 does not answer a reset of a missing consumer (the request would
        # time out), so look it up first for a clear ConsumerNotFoundError.
        self.info(stream, consumer)
        what = f"reset consumer {consumer!r} of stream {stream!r}" + (
            f" to sequence {seq}" if seq is not None else ""
        )
        try:
            result = self._client.api_request(
                f"CONSUMER.RESET.{stream}.{consumer}",
                {"seq": seq} if seq else None,
                what=what,
                stream=stream,
                consumer=consumer,
                seq=seq,
            )
        except ServerAPIError as error:
            if error.err_code != INVALID_RESET:
                raise
            raise ServerAPIError(
                f"cannot {what}: the server refused it ({error.__cause__}); a reset to a "
                "sequence needs deliver_policy 'all', 'by_start_sequence' or 'by_start_time', "
                "and not a sequence before the configured start",
                code=error.code,
                err_code=error.err_code,
                stream=stream,
                consumer=consumer,
                seq=seq,
            ) from error
        return ConsumerState.from_json(result)
