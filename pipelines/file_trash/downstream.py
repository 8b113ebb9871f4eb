"""Downstream events: a FilePlacedInTrashEvent on `files.trashed` for each newly trashed file.

The publisher reads the `silver/file_deleted` rows after its watermark (the highest silver
row, by bronze sequence, it has published for) in sequence order, publishes one event per
row in batches, and moves the watermark (KV compare-and-set) after each acknowledged batch.

No duplicates on a re-run: a crash repeats at most the batch in flight, whose events carry
a msg-id derived from their source (`trashed-<eventId>`), so the stream drops the repeat
inside its duplicate window (the acknowledgement says `duplicate`). A repeat after the window
(a batch retried minutes later) is stored again; its eventId is a uuid5 of the source's, so
silver's eventId uniqueness rule keeps it out of `silver/file_trashed`.

`nothing_to_publish` finds a run with nothing to publish before it starts Spark, from the
watermark and the largest `seq` silver's Delta log records for its files.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines.file_trash.events import (
    FILE_TRASHED_SUBJECT,
    placed_in_trash_event,
    trashed_msg_id,
)
from pipelines.lakehouse.delta_tables import table_version
from pipelines.lakehouse.nothing_new import CannotTell, NothingNew, largest, table_files
from pipelines.lakehouse.watermarks import Watermark, WatermarkStore
from resources.jetstream import JetStreamClient
from resources.jetstream.core.messages import MSG_ID_HEADER

STAGE = "downstream.file_trashed"
COLUMNS = ("seq", "event_id", "file_id", "file_name", "user_id", "deleted_at", "expires_at")


@dataclass(frozen=True)
class PublishResult:
    """What one publisher run did."""

    published: int  # events the stream stored
    duplicates: int  # events the stream dropped as repeats of an earlier msg-id
    silver_start: int | None  # the silver rows (by bronze seq) published for
    silver_end: int | None
    first_seq: int | None  # where the stream stored them
    last_seq: int | None
    watermark: Watermark | None = None


def _chunks(rows: Iterator, size: int) -> Iterator[list]:
    chunk = []
    for row in rows:
        chunk.append(row)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def nothing_to_publish(
    watermarks: WatermarkStore, silver_path: str
) -> tuple[PublishResult, NothingNew] | None:
    """What `publish_trashed` would return when no silver row is past the watermark, read
    from the KV watermark and silver's Delta log alone (its files' largest `seq`, no Spark),
    with what was compared; None when a row may be, or the log cannot be read here (a table
    off the local filesystem): run `publish_trashed` then."""
    watermark = watermarks.load(STAGE)
    try:
        files = table_files(silver_path, ("seq",))
        newest = largest(files, "seq")
    except CannotTell:
        return None
    if newest is not None and newest > watermark.position:
        return None
    held = "no table yet" if files is None else f"v{files.version} holds up to seq {newest}"
    finding = NothingNew(
        "events/file_trashed",
        (
            ("silver_version", None if files is None else files.version),
            ("silver_max_seq", newest),
            ("watermark", watermark.position),
        ),
        f"silver/file_deleted {held}, events are published up to seq {watermark.position}",
    )
    return PublishResult(0, 0, None, None, None, None, watermark), finding


def publish_trashed(
    client: JetStreamClient,
    spark: SparkSession,
    silver_path: str,
    *,
    watermarks: WatermarkStore,
    now: dt.datetime,
    run_id: str,
    batch_size: int = 500,
    progress: Callable[[int], None] | None = None,
) -> PublishResult:
    """Publishes a FilePlacedInTrashEvent for each silver row after the watermark.

    Args:
        client: a connected JetStream client.
        spark: the session.
        silver_path: the `silver/file_deleted` table.
        watermarks: the KV store of stage watermarks.
        now: the events' timestamp.
        run_id: recorded with the watermark.
        batch_size: events per publish batch (acknowledgements awaited per batch).
        progress: called with the running count of events sent.

    Returns:
        How many events the stream stored and dropped as duplicates, and where.
    """
    watermark = watermarks.load(STAGE)
    version = table_version(spark, silver_path)
    if version is None:
        return PublishResult(0, 0, None, None, None, None, watermark)
    rows = (
        spark.read.format("delta")
        .option("versionAsOf", version)
        .load(silver_path)
        .where(F.col("seq") > watermark.position)
        .select(*COLUMNS)
        .orderBy("seq")
    )
    published = duplicates = sent = 0
    silver_start = silver_end = first_seq = last_seq = None
    for chunk in _chunks(rows.toLocalIterator(), batch_size):
        messages = []
        for row in chunk:
            event = placed_in_trash_event(
                source_event_id=row["event_id"],
                file_id=row["file_id"],
                file_name=row["file_name"],
                user_id=row["user_id"],
                trashed_at=row["deleted_at"],
                expires_at=row["expires_at"],
                now=now,
            )
            headers = {MSG_ID_HEADER: trashed_msg_id(row["event_id"])}
            messages.append((FILE_TRASHED_SUBJECT, event.to_json(), headers))
        acks = client.publish_batch(messages)
        for ack in acks:
            duplicates += ack.duplicate
            published += not ack.duplicate
            if not ack.duplicate:
                first_seq = ack.seq if first_seq is None else first_seq
                last_seq = ack.seq
        silver_start = chunk[0]["seq"] if silver_start is None else silver_start
        silver_end = chunk[-1]["seq"]
        watermark = watermarks.save(
            watermark.advanced(silver_end, run_id=run_id, now=now, silver_version=version)
        )
        sent += len(chunk)
        if progress:
            progress(sent)
    return PublishResult(
        published, duplicates, silver_start, silver_end, first_seq, last_seq, watermark
    )
