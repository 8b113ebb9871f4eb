"""How far an ingest is behind its stream, and whether that is within the declared bounds.

The ingest's durable consumer stands at its committed position (the engine moves it after each
Delta commit), so its pending count is what the stream holds for the ingest and bronze does
not yet, and the first stored message after its ack floor is the oldest one waiting. The
`consumer_lag` asset check (`assets/lag.py`) reports this, on each tick of the stream's
observation sensor and whenever the check is run.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from pipelines.ingest.spec import IngestSpec
from resources.jetstream import JetStreamClient


@dataclass(frozen=True)
class Lag:
    """An ingest's distance behind its stream at one moment.

    Attributes:
        pending: messages under the ingest's filter that are not committed to bronze yet.
        ack_floor: the last stream sequence committed (the consumer's ack floor).
        last_seq: the stream's last sequence.
        oldest_pending_at: when the oldest waiting message was stored (None: none waits).
    """

    stream: str
    consumer: str
    pending: int
    ack_floor: int
    last_seq: int
    oldest_pending_at: dt.datetime | None

    def age(self, now: dt.datetime) -> float:
        """Seconds the oldest waiting message has waited (0 when none waits)."""
        if self.oldest_pending_at is None:
            return 0.0
        return max(0.0, (now - self.oldest_pending_at).total_seconds())


@dataclass(frozen=True)
class LagOutcome:
    """The lag judged against the ingest's bounds."""

    lag: Lag
    age: float  # seconds
    passed: bool
    description: str


def read_lag(client: JetStreamClient, spec: IngestSpec) -> Lag:
    """Reads the ingest's lag from its durable consumer and the stream.

    Raises:
        JetStreamError: the stream or consumer cannot be read.
    """
    consumer = client.consumers.info(spec.stream, spec.durable)
    stream = client.streams.info(spec.stream)
    pending = consumer.num_pending + consumer.num_ack_pending
    oldest = None
    if pending:
        after = consumer.ack_floor_stream_seq + 1
        waiting = [
            client.streams.get_next_message(spec.stream, after, subject)
            for subject in spec.filter_subjects or (None,)
        ]
        times = [message.time for message in waiting if message is not None]
        oldest = min(times) if times else None
    return Lag(
        stream=spec.stream,
        consumer=spec.durable,
        pending=pending,
        ack_floor=consumer.ack_floor_stream_seq,
        last_seq=stream.last_seq,
        oldest_pending_at=oldest,
    )


def judge_lag(lag: Lag, spec: IngestSpec, now: dt.datetime) -> LagOutcome:
    """Whether `lag` is within `spec.max_lag_messages` and `spec.max_lag_age` at `now`."""
    age = lag.age(now)
    broken = []
    if spec.max_lag_messages is not None and lag.pending > spec.max_lag_messages:
        broken.append(f"{lag.pending} messages wait (bound {spec.max_lag_messages})")
    if spec.max_lag_age is not None and age > spec.max_lag_age:
        broken.append(f"the oldest has waited {age:.0f} s (bound {spec.max_lag_age:.0f} s)")
    where = f"consumer {lag.consumer!r} of stream {lag.stream!r}"
    if broken:
        description = (
            f"{where} is behind: {'; '.join(broken)}. Check that its sensor is running and its "
            "runs succeed (jsl status shows the checkpoint and lease)"
        )
    else:
        description = f"{where}: {lag.pending} messages wait, the oldest for {age:.0f} s"
    return LagOutcome(lag=lag, age=age, passed=not broken, description=description)


__all__ = ["Lag", "LagOutcome", "judge_lag", "read_lag"]
