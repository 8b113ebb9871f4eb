"""`IngestSpec`: one durable consumer of one stream, landing in one bronze table."""

from __future__ import annotations

from dataclasses import dataclass

from resources.backports import StrEnum
from resources.jetstream import ConsumerSpec, KeyValueSpec
from resources.jetstream.core.validation import validate_name, validate_subject
from resources.jetstream.errors import InvalidArgumentError


class OnDataLoss(StrEnum):
    """What a run does when the stream's limits removed messages before they were read."""

    FAIL = "fail"  # stop with DataLossError naming the range (the default, like Spark's Kafka)
    SKIP = "skip"  # go on, recording the gap in the checkpoint and the run's metadata


@dataclass(frozen=True)
class IngestSpec:
    """Declares an ingest; `assets.bronze.build_bronze_asset` turns it into an asset.

    Examples:
        >>> IngestSpec(name="file_events", stream="FILE_EVENTS", durable="lakehouse-bronze",
        ...            filter_subjects=("files.>",), table="bronze/file_events")

    Attributes:
        name: the asset's name (its key is `bronze/<name>`).
        stream: the JetStream stream to read.
        durable: the durable consumer that is this ingest's server-side cursor.
        table: the Delta table, relative to the lakehouse root.
        filter_subjects: subjects of the stream this ingest takes (empty: all).
        max_messages: the most stream sequences one run takes; the rest waits.
        max_bytes: the most bytes one run takes (estimated from the stream's average size).
        readers: parallel Spark tasks reading a run's range.
        pull_batch: messages per pull request of a reader.
        rows_per_batch: rows per Arrow record batch a reader hands to Spark.
        on_data_loss: fail (default) or skip when the stream's limits removed unread messages.
        lease_ttl: seconds a run's lease lasts unless renewed; a working run renews it every
            third of that, and a run that died blocks the next one no longer than this.
        lease_wait: seconds a run waits for another run's lease; 0 fails at once.
        checkpoint_bucket: the KV bucket holding checkpoints and leases.
        checkpoint_replicas: replicas of the checkpoint bucket when a run creates it (None:
            the server's default, 1; 3 on a three-node JetStream cluster).
        ack_wait: seconds the durable consumer waits for an ack before redelivering (used
            when the stream is a work queue: a whole run's messages stay unacknowledged).
        max_lag_messages: the `consumer_lag` check fails when more messages wait (None: no
            bound on the count).
        max_lag_age: the check fails when the oldest waiting message has waited longer, in
            seconds (None: no bound on the age).
    """

    name: str
    stream: str
    durable: str
    table: str
    filter_subjects: tuple[str, ...] = ()
    max_messages: int = 1_000_000
    max_bytes: int = 1 << 30
    readers: int = 2
    pull_batch: int = 1_000
    rows_per_batch: int = 10_000
    on_data_loss: OnDataLoss = OnDataLoss.FAIL
    lease_ttl: float = 30  # seconds
    lease_wait: float = 0  # seconds
    checkpoint_bucket: str = "lakehouse-checkpoints"
    checkpoint_replicas: int | None = None
    ack_wait: float = 600  # seconds
    max_lag_messages: int | None = None
    max_lag_age: float | None = 3_600  # seconds

    def __post_init__(self) -> None:
        validate_name("stream", self.stream)
        validate_name("consumer", self.durable)
        validate_name("bucket", self.checkpoint_bucket)
        for subject in self.filter_subjects:
            validate_subject(subject)
        object.__setattr__(self, "on_data_loss", OnDataLoss(self.on_data_loss))
        sizes = (self.max_messages, self.max_bytes, self.readers, self.pull_batch)
        if min(*sizes, self.rows_per_batch) < 1:
            raise InvalidArgumentError(
                f"ingest {self.name!r}: max_messages, max_bytes, readers, pull_batch and "
                "rows_per_batch must be >= 1"
            )
        if (self.max_lag_messages is not None and self.max_lag_messages < 0) or (
            self.max_lag_age is not None and self.max_lag_age <= 0
        ):
            raise InvalidArgumentError(
                f"ingest {self.name!r}: max_lag_messages must be >= 0 and max_lag_age positive "
                "(or None for no bound)"
            )
        if self.lease_ttl <= 0 or self.lease_wait < 0 or self.ack_wait <= 0:
            raise InvalidArgumentError(
                f"ingest {self.name!r}: lease_ttl and ack_wait must be positive and lease_wait "
                "not negative"
            )
        if self.checkpoint_replicas is not None and not 1 <= self.checkpoint_replicas <= 5:
            raise InvalidArgumentError(
                f"ingest {self.name!r}: checkpoint_replicas must be between 1 and 5 (or None "
                f"for the server's default), got {self.checkpoint_replicas!r}"
            )

    @property
    def app_id(self) -> str:
        """Delta's txnAppId for this ingest's commits: `<stream>:<durable>`."""
        return f"{self.stream}:{self.durable}"

    def checkpoint_bucket_spec(self) -> KeyValueSpec:
        """The checkpoint bucket (history kept for inspection)."""
        return KeyValueSpec(
            self.checkpoint_bucket,
            description="Ingest checkpoints: planned and committed ranges, leases.",
            history=10,
            replicas=self.checkpoint_replicas,
        )

    def consumer_spec(self) -> ConsumerSpec:
        """The durable consumer this ingest advances (its ack floor is the committed position)."""
        return ConsumerSpec(
            stream=self.stream,
            durable=self.durable,
            filter_subjects=self.filter_subjects,
            description=f"lakehouse ingest {self.name!r} into {self.table!r}",
            # Used when the stream is a work queue (the run fetches and acks after the commit):
            # deliveries must outlive a run and a whole run's messages may be unacknowledged.
            ack_wait=self.ack_wait,
            max_ack_pending=max(1_000, min(self.max_messages, 1_000_000)),
        )
