"""`StreamSensorOptions`: how a stream sensor decides, names itself and ticks.

`build_stream_sensor(spec=..., job=..., options=...)` takes what differs per ingest (the spec
and the job) as parameters and everything else here, with its defaults in this one place.
docs/automation.md ("Freshness and load") weighs the values.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from dagster import DefaultSensorStatus

from pipelines.ingest.lease import Clock, utc_now
from pipelines.ingest.spec import IngestSpec

TICK_LIMIT = 60  # seconds Dagster gives a sensor tick before it fails it


@dataclass(frozen=True)
class StreamSensorOptions:
    """Options of one stream sensor; the defaults suit a sensor deployed stopped.

    Examples:
        >>> StreamSensorOptions(min_messages=100, max_wait=dt.timedelta(minutes=5))

    Attributes:
        min_messages: new messages that justify a run at once.
        max_wait: after this long since the last requested run, any new message does; None
            waits for `min_messages` forever.
        minimum_interval_seconds: seconds between ticks (the daemon evaluates at most every
            5 s, so lower values act as 5).
        tick_budget: seconds a tick may spend on NATS, under Dagster's 60 s.
        max_runs_per_tick: the most range runs one tick requests (the rest: later ticks).
        max_retries: failed runs of one range after which ticks fail instead of retrying.
        default_status: whether the sensor runs once deployed.
        name: the sensor's name; None: `<spec.name>_stream_sensor`.
        key_prefix: the bronze asset's key prefix (as given to `build_bronze_asset`).
        follow_seconds: tag each run of a lone range to keep taking new batches for up to
            this long once its first is done (`assets.follow`; the job must take silver in
            the same run); 0: one batch per run.
        clock: the current time (UTC).

    Raises:
        ValueError: a bound out of range, naming the field.
    """

    min_messages: int = 1
    max_wait: dt.timedelta | None = dt.timedelta(minutes=15)
    minimum_interval_seconds: int = 30
    tick_budget: float = 20.0  # seconds
    max_runs_per_tick: int = 50
    max_retries: int = 3
    default_status: DefaultSensorStatus = DefaultSensorStatus.STOPPED
    name: str | None = None
    key_prefix: str = "bronze"
    follow_seconds: int = 0
    clock: Clock = utc_now

    def __post_init__(self) -> None:
        which = f" (sensor {self.name!r})" if self.name else ""
        counts = ("min_messages", "minimum_interval_seconds", "max_runs_per_tick", "max_retries")
        for field in counts:
            if getattr(self, field) < 1:
                raise ValueError(
                    f"StreamSensorOptions.{field} must be 1 or more, got "
                    f"{getattr(self, field)!r}{which}"
                )
        if self.follow_seconds < 0:
            raise ValueError(
                f"StreamSensorOptions.follow_seconds must be 0 (off) or more, got "
                f"{self.follow_seconds!r}{which}"
            )
        if not 0 < self.tick_budget < TICK_LIMIT:
            raise ValueError(
                f"StreamSensorOptions.tick_budget must be more than 0 and less than {TICK_LIMIT} "
                f"seconds (Dagster fails a longer tick), got {self.tick_budget!r}{which}"
            )

    def sensor_name(self, spec: IngestSpec) -> str:
        """The sensor's name for `spec`: `name`, else `<spec.name>_stream_sensor`."""
        return self.name or f"{spec.name}_stream_sensor"


DEFAULT_STREAM_SENSOR_OPTIONS = StreamSensorOptions()
