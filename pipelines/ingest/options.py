"""`IngestRunOptions`: how one run of an ingest behaves, passed unchanged to the engine.

What an ingest takes and how (its stream, consumer, table, per-run limits, readers, batch
sizes, lease and ack timeouts) is declared once in its `IngestSpec`. What may differ between
two runs of the same spec without being part of it - the clock, a hook at each step, a bound
on the range - is an `IngestRunOptions`, taken by `run.ingest`, `engine.run_ingest`,
`engine.IngestRun` and `durable.run_durable_ingest` alike, with its defaults here only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pipelines.ingest.lease import Clock, utc_now

Hook = Callable[[str], None]  # called with each step a run passes (`engine.STEPS`)


@dataclass(frozen=True)
class IngestRunOptions:
    """Options of one ingest run; the defaults are a plain production run.

    Examples:
        >>> IngestRunOptions(until=5_000)  # a backfill piece ending at sequence 5000

    Attributes:
        clock: the current time (UTC); it stamps the checkpoint, the lease and the rows'
            `ingested_at`.
        hook: called with the name of each step the run passes (`engine.STEPS` for limits
            retention; "committed", "acknowledged" and "checkpoint_marked" for work-queue
            and interest streams): tests crash there, benchmarks time the steps. None: no hook.
        until: the last stream sequence the run may take (a backfill piece's end); None for
            no bound beyond the spec's per-run limits. Limits retention only: a work-queue or
            interest stream delivers in the consumer's order, so there it does not apply.

    Raises:
        ValueError: `until` is not a stream sequence.
    """

    clock: Clock = utc_now
    hook: Hook | None = None
    until: int | None = None

    def __post_init__(self) -> None:
        if self.until is not None and self.until < 1:
            raise ValueError(
                f"IngestRunOptions.until must be a stream sequence >= 1 (the last one the run "
                f"may take), or None for no bound, got {self.until!r}"
            )


DEFAULT_RUN_OPTIONS = IngestRunOptions()  # a plain run: the wall clock, no hook, no bound
