"""The pipeline's state at one moment, gathered for `jsl status`: a snapshot, no printing.

`take_snapshot` reads, in a handful of JetStream requests and without Spark:

- each declared stream: last sequence, messages, bytes, first and last message time;
- each ingest's durable consumer (ack floor, pending, redeliveries), its checkpoint
  (committed end, the last run and its range, a planned range left by a run in flight or
  stopped part-way, recorded gaps) and its lease (holder, expiry);
- each stage watermark and how far it is behind bronze (the bronze ingest's committed end);
- the replay requests not finished yet (no status, or `launched`).

`table_statuses` adds each Delta table's version, rows and last commit time (Spark).
Every KV value is read with the decoder its writer uses (`CheckpointStore`, `LeaseValue`,
`WatermarkStore`); the commands module renders the snapshot as text or JSON.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pipelines.file_trash import downstream
from pipelines.file_trash.tables import GOLD_TABLES, SILVER_TABLES
from pipelines.file_trash.topology import (
    BRONZE_FILE_EVENTS,
    FILE_EVENTS,
    FILE_TRASH_TOPOLOGY,
    INGESTS,
)
from pipelines.file_trash.topology import REPLAY_REQUESTS as REPLAY_BUCKET
from pipelines.ingest.checkpoint import Checkpoint, CheckpointStore, checkpoint_key
from pipelines.ingest.lease import LeaseValue, lease_key
from pipelines.ingest.spec import IngestSpec
from pipelines.lakehouse.watermarks import WatermarkStore
from pipelines.silver.stage import stage_name
from resources.jetstream import JetStreamClient, KeyValueBucket, KvOperation
from resources.jetstream.errors import (
    BucketNotFoundError,
    ConsumerNotFoundError,
    StreamNotFoundError,
)
from resources.jetstream.streams.source import parse_timestamp
from resources.jetstream.streams.state import StreamState
from resources.lakehouse import LakehouseResource
from sensors.replays import DONE as FINISHED_REPLAY
from sensors.replays import decode_record

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Silver's and the downstream publisher's positions, both bronze sequences.
STAGES = (stage_name(FILE_EVENTS.name), downstream.STAGE)
TABLES = tuple(ingest.table for ingest in INGESTS) + SILVER_TABLES + GOLD_TABLES
PROVISION = (
    "provision the topology first: `make demo` or `jsl dev` do, or `jsl generate --provision` "
    "(it reconciles pipelines.file_trash.topology.FILE_TRASH_TOPOLOGY)"
)


@dataclass(frozen=True)
class StreamStatus:
    name: str
    subjects: tuple[str, ...]
    first_seq: int
    last_seq: int
    messages: int
    bytes: int
    first_time: dt.datetime | None  # None: the stream is empty
    last_time: dt.datetime | None


@dataclass(frozen=True)
class LeaseStatus:
    holder: str
    expires_at: dt.datetime
    expired: bool  # a holder that died: the next run takes the lease over


@dataclass(frozen=True)
class IngestStatus:
    name: str
    stream: str
    consumer: str
    table: str
    consumer_exists: bool  # False: the ingest's first run creates it
    ack_floor: int | None
    pending: int | None  # messages past the consumer's position: the lag
    ack_pending: int | None
    redelivered: int | None
    checkpoint: str  # "none" (never ran), "committed", or "planned" (a run in flight or stopped)
    committed_end: int
    committed_version: int | None  # the bronze table's Delta version of that commit
    last_run_id: str | None
    last_run_at: str | None
    last_run_range: tuple[int, int] | None  # None: not in the checkpoint's kept history
    last_recovered_by: str | None  # the run that finished the last run's range after it stopped
    planned: tuple[int, int] | None
    planned_run_id: str | None
    gaps: tuple[tuple[int, int], ...]  # ranges the stream dropped unread (on_data_loss="skip")
    lease: LeaseStatus | None


@dataclass(frozen=True)
class StageStatus:
    stage: str
    position: int  # the highest bronze sequence the stage has processed (0: never ran)
    run_id: str | None
    at: str | None
    bronze_end: int  # the bronze ingest's committed end
    lag: int  # bronze sequences it has not processed yet


@dataclass(frozen=True)
class ReplayStatus:
    key: str
    status: str  # "requested" (the sensor has not picked it up) or "launched"
    request: str  # what is asked: "1001-5000", "<start_time>..<end_time>", or why unreadable
    run_ids: tuple[str, ...]


@dataclass(frozen=True)
class TableStatus:
    name: str
    path: str
    version: int | None  # None: no table yet
    rows: int | None
    last_commit: dt.datetime | None


@dataclass(frozen=True)
class StatusSnapshot:
    server: str
    taken_at: dt.datetime
    streams: tuple[StreamStatus, ...]
    ingests: tuple[IngestStatus, ...]
    stages: tuple[StageStatus, ...]
    replays: tuple[ReplayStatus, ...]
    tables: tuple[TableStatus, ...] | None = None  # None: not asked for (no Spark)

    def to_json(self) -> dict[str, Any]:
        """The snapshot as JSON-ready values (times as ISO-8601, ranges as [start, end])."""
        return _plain(dataclasses.asdict(self))


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dt.datetime):
        return value.isoformat()
    return value


def take_snapshot(
    client: JetStreamClient,
    *,
    server: str,
    now: dt.datetime,
    streams: Sequence[str] = tuple(s.name for s in FILE_TRASH_TOPOLOGY.streams),
    ingests: Sequence[IngestSpec] = INGESTS,
    stages: Sequence[str] = STAGES,
    bronze: IngestSpec = BRONZE_FILE_EVENTS,
    replay_bucket: str = REPLAY_BUCKET.bucket,
) -> StatusSnapshot:
    """Reads the state of the streams, ingests, stage watermarks and replay requests.

    Args:
        client: a connected client.
        server: the server's URL, for error messages.
        now: the clock (whether a lease has expired).
        streams: the streams to report.
        ingests: the ingests to report (their consumers, checkpoints and leases).
        stages: the stages whose watermarks to report.
        bronze: the ingest whose committed end the stages' lag is measured against.
        replay_bucket: the KV bucket of replay requests.

    Returns:
        The snapshot (without tables).

    Raises:
        StreamNotFoundError: a stream is missing (the message says how to provision it).
        BucketNotFoundError: the checkpoint or replay bucket is missing (likewise).
    """
    stream_states = tuple(_stream(client, name, server) for name in streams)
    names = {bronze.checkpoint_bucket, *(spec.checkpoint_bucket for spec in ingests)}
    buckets = {name: _bucket(client, name, server) for name in sorted(names)}
    ingest_states = tuple(
        _ingest(client, spec, buckets[spec.checkpoint_bucket], now) for spec in ingests
    )
    bronze_end = next((i.committed_end for i in ingest_states if i.name == bronze.name), 0)
    watermarks = WatermarkStore(buckets[bronze.checkpoint_bucket])
    stage_states = []
    for stage in stages:
        mark = watermarks.load(stage)
        lag = max(bronze_end - mark.position, 0)
        stage_states.append(
            StageStatus(stage, mark.position, mark.run_id, mark.at, bronze_end, lag)
        )
    replays = _open_replays(_bucket(client, replay_bucket, server))
    return StatusSnapshot(server, now, stream_states, ingest_states, tuple(stage_states), replays)


def _stream(client: JetStreamClient, name: str, server: str) -> StreamStatus:
    try:
        info = client.api_request(f"STREAM.INFO.{name}", what=f"read stream {name!r}", stream=name)
    except StreamNotFoundError as error:
        raise StreamNotFoundError(
            f"stream {name!r} does not exist on NATS server {server}; {PROVISION}",
            server=server,
            stream=name,
        ) from error
    state, raw = StreamState.from_json(info), info.get("state") or {}
    return StreamStatus(
        name=state.name,
        subjects=state.subjects,
        first_seq=state.first_seq,
        last_seq=state.last_seq,
        messages=state.messages,
        bytes=state.bytes,
        first_time=parse_timestamp(raw.get("first_ts")) if state.messages else None,
        last_time=parse_timestamp(raw.get("last_ts")) if state.messages else None,
    )


def _bucket(client: JetStreamClient, name: str, server: str) -> KeyValueBucket:
    try:
        return client.key_value(name)
    except BucketNotFoundError as error:
        raise BucketNotFoundError(
            f"KV bucket {name!r} does not exist on NATS server {server}; {PROVISION}",
            server=server,
            bucket=name,
        ) from error


def _ingest(
    client: JetStreamClient, spec: IngestSpec, bucket: KeyValueBucket, now: dt.datetime
) -> IngestStatus:
    try:
        consumer = client.consumers.info(spec.stream, spec.durable)
    except ConsumerNotFoundError:
        consumer = None
    checkpoint = CheckpointStore(bucket).load(spec.stream, spec.durable)
    lease_entry = bucket.try_get(lease_key(spec.stream, spec.durable))
    lease = None
    if lease_entry is not None:
        value = LeaseValue.from_json(lease_entry.value)
        lease = LeaseStatus(value.holder, value.expires_at, value.expires_at <= now)
    point = checkpoint or Checkpoint(spec.stream, spec.durable)
    planned = point.planned
    return IngestStatus(
        name=spec.name,
        stream=spec.stream,
        consumer=spec.durable,
        table=spec.table,
        consumer_exists=consumer is not None,
        ack_floor=consumer.ack_floor_stream_seq if consumer else None,
        pending=consumer.num_pending if consumer else None,
        ack_pending=consumer.num_ack_pending if consumer else None,
        redelivered=consumer.num_redelivered if consumer else None,
        checkpoint="none" if checkpoint is None else "planned" if planned else "committed",
        committed_end=point.committed_end,
        committed_version=point.committed_version,
        last_run_id=point.committed_run_id,
        last_run_at=point.committed_at,
        last_run_range=_last_run_range(bucket, point),
        last_recovered_by=point.recovered_by,
        planned=(planned.start, planned.end) if planned else None,
        planned_run_id=planned.run_id if planned else None,
        gaps=tuple((gap.start, gap.end) for gap in point.gaps),
        lease=lease,
    )


def _last_run_range(bucket: KeyValueBucket, checkpoint: Checkpoint) -> tuple[int, int] | None:
    """The range the last committed run planned, found in the checkpoint key's kept history.

    The checkpoint records only the committed end; the run's plan, written before its
    commit, is an earlier revision of the same key (the bucket keeps 10).
    """
    if checkpoint.committed_run_id is None:
        return None
    key = checkpoint_key(checkpoint.stream, checkpoint.consumer)
    for entry in reversed(bucket.history(key)):
        if entry.operation is not KvOperation.PUT:
            continue
        planned = Checkpoint.from_json(entry.value, entry.revision).planned
        if planned and planned.run_id == checkpoint.committed_run_id:
            return planned.start, planned.end
    return None


def _open_replays(bucket: KeyValueBucket) -> tuple[ReplayStatus, ...]:
    """The replay requests the sensor has not finished: no status yet, or `launched`."""
    found, stored = [], bucket.keys()
    for key in stored:
        entry = bucket.try_get(key)
        if entry is None:
            continue
        doc = decode_record(entry.value)
        if doc is None:
            found.append(ReplayStatus(key, "requested", "not a JSON object (will be rejected)", ()))
            continue
        status = doc.get("status") or "requested"
        if status in FINISHED_REPLAY:
            continue
        found.append(ReplayStatus(key, status, _asked(doc), tuple(doc.get("run_ids") or ())))
    return tuple(found)


def _asked(doc: dict[str, Any]) -> str:
    resolved = doc.get("range") or {}
    if "start_seq" in resolved:
        return f"{resolved['start_seq']}-{resolved['end_seq']}"
    if doc.get("start_seq") is not None or doc.get("end_seq") is not None:
        return f"{doc.get('start_seq')}-{doc.get('end_seq')}"
    return f"{doc.get('start_time')}..{doc.get('end_time')}"


def table_statuses(
    spark: SparkSession, root: str, tables: Sequence[str] = TABLES
) -> tuple[TableStatus, ...]:
    """Each Delta table's version, rows and last commit time (None for a missing table).

    Args:
        spark: a SparkSession with Delta.
        root: the lakehouse root (`LAKEHOUSE_ROOT`).
        tables: table names relative to the root.
    """
    from pipelines.lakehouse.delta_tables import last_commit

    lakehouse = LakehouseResource(root=root)
    found = []
    for name in tables:
        path = lakehouse.table_path(name)
        last = last_commit(spark, path)
        if last is None:
            found.append(TableStatus(name, path, None, None, None))
            continue
        rows = spark.read.format("delta").option("versionAsOf", last["version"]).load(path).count()
        committed = last["timestamp"].astimezone(dt.timezone.utc)  # Spark hands back local time
        found.append(TableStatus(name, path, last["version"], rows, committed))
    return tuple(found)
