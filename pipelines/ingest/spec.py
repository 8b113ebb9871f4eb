"""`IngestSpec`: one durable consumer of one stream, landing in one bronze table."""

from __future__ import annotations

from dataclasses import dataclass

from resources.jetstream import ConsumerSpec
from resources.jetstream.errors import InvalidArgumentError
from resources.jetstream.streams import validate_name, validate_subject


@dataclass(frozen=True)
class IngestSpec:
    """Declares an ingest; `assets.bronze.build_bronze_asset` turns it into an asset.

    Examples:
        >>> IngestSpec(name="file_events", stream="FILE_EVENTS", durable="lakehouse-bronze",
        ...            filter_subjects=("files.>",), table="bronze/file_events")

    Attributes:
        name: the asset's name (its key is `bronze/<name>`).
        stream: the JetStream stream to read.
        durable: the durable pull consumer that is this ingest's cursor.
        filter_subjects: subjects of the stream this ingest takes (empty: all).
        table: the Delta table, relative to the lakehouse root.
        max_messages: the most messages one run takes; the rest waits for the next run.
        fetch_batch: messages per pull request.
        commit_every: messages per Delta commit; at most the consumer's max_ack_pending.
        ack_wait: seconds the server waits for an ack before redelivering.
    """

    name: str
    stream: str
    durable: str
    table: str
    filter_subjects: tuple[str, ...] = ()
    max_messages: int = 100_000
    fetch_batch: int = 1_000
    commit_every: int = 10_000
    ack_wait: float = 300  # seconds

    def __post_init__(self) -> None:
        validate_name("stream", self.stream)
        validate_name("consumer", self.durable)
        for subject in self.filter_subjects:
            validate_subject(subject)
        if min(self.max_messages, self.fetch_batch, self.commit_every) < 1:
            raise InvalidArgumentError(
                f"ingest {self.name!r}: max_messages, fetch_batch and commit_every must be >= 1"
            )

    def consumer_spec(self) -> ConsumerSpec:
        """The durable pull consumer this ingest reads through."""
        return ConsumerSpec(
            stream=self.stream,
            durable=self.durable,
            filter_subjects=self.filter_subjects,
            description=f"lakehouse ingest {self.name!r} into {self.table!r}",
            ack_wait=self.ack_wait,
            max_ack_pending=self.commit_every * 2,
        )
