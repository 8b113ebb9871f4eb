"""The parts of a `JetStreamStream` declaration: the stream, each ingest, an AsyncAPI
envelope, declared gold aggregates."""

from __future__ import annotations

from dagster import AssetKey, Model
from pydantic import Field

from pipelines.contract import ContractError, Envelope
from pipelines.ingest.declaration import ingest_spec, stream_spec
from pipelines.lakehouse.aggregates import Aggregate, parse_measure
from pipelines.wiring.streams import DEFAULT_SENSOR_INTERVAL, BronzeIngest
from resources.jetstream import StreamSpec


class StreamModel(Model):
    """The JetStream stream, as `jsl provision` creates it (only what is declared)."""

    name: str = Field(description="The stream's name, e.g. ORDERS.")
    subjects: list[str] = Field(description="Subjects it captures, e.g. ['orders.>'].")
    description: str | None = Field(default=None, description="Shown in the UI and the server.")
    max_age_seconds: float | None = Field(
        default=None, description="How long messages are kept (unset: the server's default)."
    )
    max_bytes: int | None = Field(default=None, description="Size limit of the stream.")
    duplicate_window_seconds: float | None = Field(
        default=None, description="Window of publish de-duplication by Nats-Msg-Id."
    )
    replicas: int | None = Field(
        default=None,
        description="1 to 5 (3 on a three-node cluster); unset: JSL_NATS_REPLICAS if set, "
        "else the server's. The checkpoint buckets take the same.",
    )

    def spec(self) -> StreamSpec:
        """The stream's spec; replicas unset come from `JSL_NATS_REPLICAS` (if set)."""
        return stream_spec(self.model_dump())


class IngestModel(Model):
    """One durable consumer of the stream, landing in its own bronze Delta table."""

    name: str = Field(description="The bronze asset's name (key `<key_prefix>/<name>`).")
    durable: str = Field(description="The durable consumer (created if missing).")
    table: str = Field(description="The Delta table, relative to the lakehouse root.")
    filter_subjects: list[str] = Field(
        default_factory=list, description="Subjects of the stream it takes (empty: all)."
    )
    key_prefix: str = Field(default="bronze", description="First part of the asset key.")
    replay: bool = Field(default=False, description="Build the replay job and request sensor.")
    upstream: list[str] = Field(
        default_factory=list,
        description="Asset keys (a/b) that publish what this ingest reads, for lineage.",
    )
    sensor_interval_seconds: int = Field(
        default=DEFAULT_SENSOR_INTERVAL,
        description="Seconds between the stream sensor's ticks: lower is fresher, and costs "
        "a few JetStream requests per tick (docs/automation.md).",
    )
    max_messages: int | None = Field(default=None, description="Most messages per run.")
    readers: int | None = Field(default=None, description="Parallel Spark reader tasks.")
    max_lag_messages: int | None = Field(
        default=None, description="The consumer_lag check fails above this many waiting."
    )
    max_lag_age_seconds: float | None = Field(
        default=None, description="The check fails when the oldest waiting is older."
    )

    def ingest(self, stream: StreamSpec) -> BronzeIngest:
        """The ingest of `stream`, with its Dagster parts (key prefix, lineage, replays)."""
        if self.sensor_interval_seconds < 1:
            raise ValueError(
                f"ingest {self.name!r}: sensor_interval_seconds must be at least 1, got "
                f"{self.sensor_interval_seconds!r}"
            )
        return BronzeIngest(
            ingest_spec(stream, self.model_dump()),
            key_prefix=self.key_prefix,
            upstream=tuple(AssetKey.from_user_string(key) for key in self.upstream),
            replay=self.replay,
            sensor_interval=self.sensor_interval_seconds,
        )


class EnvelopeModel(Model):
    """Field paths of the envelope, for a contract read from AsyncAPI: JSON paths,
    `header:<Name>` or `subject:<index>` (docs/envelopes.md)."""

    event_type: str | None = Field(default=None, description="The event-type discriminator.")
    event_id: str | None = Field(
        default=None,
        description="The event id (de-duplication key), e.g. eventId or header:Nats-Msg-Id.",
    )
    event_time: str | None = Field(default=None, description="The event time.")


def envelope_of(declared: EnvelopeModel | str | None) -> Envelope:
    """The envelope a component declares: its paths, or a preset's name (`cloudevents`).

    Raises:
        ValueError: an unknown preset or a path that is none of the forms, saying what to write.
    """
    try:
        if isinstance(declared, str):
            return Envelope(preset=declared)
        declared = declared or EnvelopeModel()
        return Envelope(declared.event_type, declared.event_id, declared.event_time)
    except ContractError as error:
        where = f"envelope.{error.path[-1]}: " if len(error.path) > 1 else "envelope: "
        raise ValueError(where + error.problem) from None


class TimeModel(Model):
    """The time bucket of a declared aggregate."""

    column: str = Field(description="A timestamp or date column of the silver table.")
    grain: str = Field(description="hour, day, week or month (the key column's name).")


class AggregateModel(Model):
    """A gold table declared as an aggregate of one event type's silver table."""

    table: str = Field(description="The gold Delta table, e.g. gold/daily_orders.")
    event_type: str = Field(description="The event type whose silver table it reads.")
    measures: dict[str, str] = Field(
        description="Column -> count, count(col), sum(col), min(col) or max(col)."
    )
    group_by: list[str] = Field(default_factory=list, description="Columns to group by.")
    time: TimeModel | None = Field(default=None, description="Bucket a time column by a grain.")
    description: str | None = Field(default=None, description="Shown in the UI.")

    def aggregate(self) -> Aggregate:
        """The aggregate.

        Raises:
            ValueError: a measure, the grain or a repeated column, naming the table.
        """
        try:
            measures = tuple(parse_measure(name, text) for name, text in self.measures.items())
        except ValueError as error:
            raise ValueError(f"aggregate {self.table!r}: {error}") from None
        return Aggregate(
            table=self.table,
            event_type=self.event_type,
            measures=measures,
            group_by=tuple(self.group_by),
            time_column=self.time.column if self.time else None,
            grain=self.time.grain if self.time else None,
            description=self.description,
        )
