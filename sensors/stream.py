"""`build_stream_sensor`: request bronze runs when a stream's sequence moves past an ingest.

Each tick compares the stream's last sequence with the ingest's committed position (its KV
checkpoint, or the durable consumer's ack floor before the first run) and requests runs for
exactly the ranges in between, each bounded by `bronze_run_config(spec, end)` and keyed
`<stream>:<consumer>:<start>-<end>`. A backlog larger than one run may take becomes several
range runs in one tick (a backfill, tagged `jsl/backfill`). With `follow_seconds`, a lone
range's run is tagged `jsl/follow` and, once its range is in silver, goes on to the next
ones (`assets.follow`); the sensor skips while it runs. docs/automation.md explains the
decisions, the tags and the run-queue settings they rely on.
"""

import datetime as dt
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace

from dagster import (
    AssetKey,
    DagsterInstance,
    DagsterRunStatus,
    RunRecord,
    RunRequest,
    RunsFilter,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from assets.bronze import bronze_asset_key, bronze_run_config
from assets.follow import FOLLOW_TAG
from assets.liveness import WORKING, dead_runs
from pipelines.ingest.checkpoint import Checkpoint, CheckpointStore
from pipelines.ingest.engine import initial_checkpoint
from pipelines.ingest.lease import LeaseValue, lease_key
from pipelines.ingest.plan import StreamPosition, plan_range
from pipelines.ingest.spec import IngestSpec
from resources.jetstream import JetStreamClient, JetStreamResource, StreamState
from resources.jetstream.errors import BucketNotFoundError, JetStreamError
from sensors.cursor import StreamSensorCursor
from sensors.stream_options import DEFAULT_STREAM_SENSOR_OPTIONS, StreamSensorOptions

INGEST_TAG = "jsl/ingest"  # <stream>:<consumer>, on every run the sensor requests
RANGE_TAG = "jsl/range"  # <start>-<end>, the range the run key names
BACKFILL_TAG = "jsl/backfill"  # <stream>:<consumer>:<first>-<last>, on each piece of a backlog
PIECE_TAG = "jsl/piece"  # <i>/<n> within a backfill
RECOVERS_TAG = "jsl/recovers-run"  # the crashed run whose planned range this run finishes

UNFINISHED = [
    DagsterRunStatus.QUEUED,
    DagsterRunStatus.NOT_STARTED,
    DagsterRunStatus.STARTING,
    DagsterRunStatus.STARTED,
    DagsterRunStatus.CANCELING,
    DagsterRunStatus.SUSPENDED,
]
FAILED = [DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED]
FINISHED = [DagsterRunStatus.SUCCESS, *FAILED]


class SensorTickError(RuntimeError):
    """A tick cannot decide: the stream, consumer or bucket is unreachable, missing or stuck."""

    def __init__(self, message: str, *, sensor: str, stream: str | None = None, **names) -> None:
        super().__init__(message)
        self.sensor = sensor
        self.stream = stream
        self.consumer = names.get("consumer")
        self.bucket = names.get("bucket")
        self.server = names.get("server")


@contextmanager
def tick_client(jetstream: JetStreamResource, tick_budget: float) -> Iterator[JetStreamClient]:
    """A client for one tick: connecting may take a quarter of the budget, a request an eighth."""
    settings = jetstream.connection_settings()
    bounded = replace(
        settings,
        connect_timeout=min(settings.connect_timeout, tick_budget / 4),
        request_timeout=min(settings.request_timeout, tick_budget / 8),
    )
    client = JetStreamClient(bounded)
    try:
        yield client.connect()
    finally:
        client.close()


@dataclass(frozen=True)
class IngestPosition:
    """Where an ingest stands against its stream."""

    stream: StreamState
    committed: int  # everything up to here is in Delta
    planned: tuple[int, int] | None = None  # the range a crashed run planned and left
    planned_by: str | None = None  # that run's id


def read_position(client: JetStreamClient, spec: IngestSpec) -> IngestPosition:
    """The stream's state and the ingest's committed position (checkpoint, else ack floor).

    Raises:
        JetStreamError: the server, stream or consumer cannot be read.
    """
    stream = client.streams.info(spec.stream)
    client.consumers.info(spec.stream, spec.durable)  # a missing consumer fails the tick
    try:
        store = CheckpointStore(client.key_value(spec.checkpoint_bucket))
        checkpoint: Checkpoint | None = store.load(spec.stream, spec.durable)
    except BucketNotFoundError:  # no run created it yet
        checkpoint = None
    if checkpoint is None:
        checkpoint = initial_checkpoint(client, spec, stream)
    planned = checkpoint.planned
    return IngestPosition(
        stream=stream,
        committed=checkpoint.committed_end,
        planned=(planned.start, planned.end) if planned else None,
        planned_by=planned.run_id if planned else None,
    )


@dataclass(frozen=True)
class Decision:
    """What a tick does: request runs for `ranges`, or skip for `skip`."""

    ranges: tuple[tuple[int, int], ...]
    skip: str | None
    cursor: StreamSensorCursor


def plan_pieces(after: int, stream: StreamState, spec: IngestSpec, limit: int) -> list:
    """Up to `limit` consecutive ranges after `after`, each what one run of `spec` takes."""
    position = StreamPosition(stream.first_seq, stream.last_seq, stream.messages, stream.bytes)
    pieces: list[tuple[int, int]] = []
    while len(pieces) < limit:
        bounds = plan_range(
            after, position, max_messages=spec.max_messages, max_bytes=spec.max_bytes
        )
        if bounds is None:
            break
        pieces.append(bounds)
        after = bounds[1]
    return pieces


def decide(
    position: IngestPosition,
    cursor: StreamSensorCursor,
    now: dt.datetime,
    *,
    spec: IngestSpec,
    options: StreamSensorOptions,
) -> Decision:
    """The tick's decision, a pure function of the position, the cursor and the time."""
    min_messages, max_wait = options.min_messages, options.max_wait
    ranges = [position.planned] if position.planned else []
    after = max(position.committed, position.planned[1] if position.planned else 0)
    last = position.stream.last_seq
    new = max(0, last - after)
    where = f"stream {spec.stream!r} last seq {last}, consumer {spec.durable!r} committed {after}"
    due = new >= min_messages
    if new and not due:
        started = cursor.wait_started()
        due = bool(max_wait is not None and started and now - started >= max_wait)
    if due:
        limit = max(1, options.max_runs_per_tick - len(ranges))
        ranges += plan_pieces(after, position.stream, spec, limit)
    if ranges:
        return Decision(tuple(ranges), None, cursor.requested(ranges[-1][1], now))
    if not new:
        return Decision((), f"nothing new: {where}", cursor.caught_up())
    cursor = cursor.waiting(now)
    if max_wait is None:
        wait = "max_wait is off"
    else:
        wait = f"max_wait {max_wait} is reached at {(cursor.wait_started() + max_wait).isoformat()}"
    reason = (
        f"{new} new message(s) ({after + 1}-{last}) are fewer than min_messages={min_messages} "
        f"and {wait}: {where}"
    )
    return Decision((), reason, cursor)


def run_requests(
    ranges: Sequence[tuple[int, int]],
    position: IngestPosition,
    spec: IngestSpec,
    instance: DagsterInstance,
    *,
    options: StreamSensorOptions,
    assets: Sequence[AssetKey] = (),
) -> list[RunRequest]:
    """One run request per range, keyed and tagged (a backfill when there are several), of
    `assets` when given (see `build_stream_sensor`), else of the whole job. A lone range's
    run is tagged to keep going for `options.follow_seconds` when they are set.

    Raises:
        SensorTickError: a range already failed `options.max_retries` times.
    """
    sensor_name = options.sensor_name(spec)
    ingest_id = f"{spec.stream}:{spec.durable}"
    requests = []
    for index, (start, end) in enumerate(ranges, 1):
        tags = {INGEST_TAG: ingest_id, RANGE_TAG: f"{start}-{end}"}
        if len(ranges) > 1:
            tags[BACKFILL_TAG] = f"{ingest_id}:{ranges[0][0]}-{ranges[-1][1]}"
            tags[PIECE_TAG] = f"{index}/{len(ranges)}"
        if position.planned == (start, end) and position.planned_by:
            tags[RECOVERS_TAG] = position.planned_by
        if options.follow_seconds and len(ranges) == 1:  # a backfill's pieces each stop
            tags[FOLLOW_TAG] = str(options.follow_seconds)
        earlier = instance.get_runs(
            RunsFilter(tags={INGEST_TAG: ingest_id, RANGE_TAG: f"{start}-{end}"}, statuses=FINISHED)
        )
        failed = [run.run_id for run in earlier if run.status in FAILED]
        if len(failed) >= options.max_retries:
            raise SensorTickError(
                f"sensor {sensor_name!r}: range {start}-{end} of stream {spec.stream!r} "
                f"(consumer {spec.durable!r}) failed {len(failed)} times (runs "
                f"{', '.join(failed)}); read the last run's log and fix the cause, then "
                "materialise the asset once by hand: the sensor continues from where it lands",
                sensor=sensor_name,
                stream=spec.stream,
                consumer=spec.durable,
            )
        key = f"{ingest_id}:{start}-{end}"
        if earlier:  # a finished run already used the plain key: Dagster would skip a repeat
            key += f":attempt-{len(earlier) + 1}"
        run_config = bronze_run_config(spec, end, options.key_prefix)
        requests.append(
            RunRequest(
                run_key=key,
                run_config=run_config,
                tags=tags,
                asset_selection=list(assets) if assets else None,
            )
        )
    return requests


def settle_dead_runs(
    context: SensorEvaluationContext,
    records: Sequence[RunRecord],
    jetstream: JetStreamResource,
    *,
    spec: IngestSpec,
    options: StreamSensorOptions,
) -> None:
    """Marks failed the runs among `records` whose process is gone (`assets.liveness`), so
    that neither this sensor nor the run queue waits behind them.

    A run is judged dead only when it stopped saying it is alive *and* holds no unexpired
    lease on the ingest (read from NATS only when a run looks dead by the first sign).
    """
    now = options.clock()
    bronze = bronze_asset_key(spec, options.key_prefix)
    ttl = spec.lease_ttl
    if not dead_runs(records, now=now, lease=None, ttl=ttl, bronze=bronze):
        return
    try:
        with tick_client(jetstream, options.tick_budget) as client:
            entry = client.key_value(spec.checkpoint_bucket).try_get(
                lease_key(spec.stream, spec.durable)
            )
    except BucketNotFoundError:
        entry = None
    except JetStreamError as error:  # cannot tell: judge nobody on this tick
        context.log.warning(
            f"cannot read the lease of {spec.stream}/{spec.durable} to judge runs that look "
            f"dead ({error}); waiting for them this tick"
        )
        return
    lease = None if entry is None else LeaseValue.from_json(entry.value)
    dead = dead_runs(records, now=now, lease=lease, ttl=ttl, bronze=bronze)
    sensor_name = options.sensor_name(spec)
    for run in dead:
        message = (
            f"sensor {sensor_name!r} marks this run failed: {run.why} and holds no lease on "
            f"{spec.stream}/{spec.durable}, so its process is gone (killed, or its machine "
            "lost). The sensor recovers the range it planned, if it planned one, from its "
            "next run."
        )
        context.instance.report_run_failed(run.record.dagster_run, message=message)
        context.log.warning(f"run {run.run_id}: {message}")


def build_stream_sensor(
    *,
    spec: IngestSpec,
    job,
    options: StreamSensorOptions = DEFAULT_STREAM_SENSOR_OPTIONS,
    assets: Sequence[AssetKey] = (),
) -> SensorDefinition:
    """Builds the sensor that requests `job` runs as `spec`'s stream advances.

    Args:
        spec: the ingest.
        job: the job materialising `spec`'s bronze asset (e.g. a `define_asset_job`).
        options: when a tick requests runs (`min_messages`, `max_wait`), how often and how
            long it ticks, its retries, name, status, key prefix and clock; see
            `StreamSensorOptions` (which checks the bounds when it is built).
        assets: the assets `job` materialises, named on each run request (with their
            checks), so that each run records them as its asset selection. Declarative
            automation reads it: an asset made in the same run as its upstream (silver in
            the ingest's run) is not requested again for that commit. Empty: no selection
            is recorded, and automation would run such an asset once more.

    Returns:
        The sensor; it needs the `jetstream` resource.
    """
    sensor_name = options.sensor_name(spec)
    ingest_id = f"{spec.stream}:{spec.durable}"

    @sensor(
        name=sensor_name,
        job=job,
        minimum_interval_seconds=options.minimum_interval_seconds,
        default_status=options.default_status,
        description=f"Requests runs of {options.key_prefix}/{spec.name} when stream "
        f"{spec.stream} moves past consumer {spec.durable}'s committed position "
        f"(>= {options.min_messages} messages, or any after {options.max_wait}).",
    )
    def stream_sensor(context: SensorEvaluationContext, jetstream: JetStreamResource):
        cursor = StreamSensorCursor.decode(context.cursor, warn=context.log.warning)
        # Every working run is judged, however many runs are queued behind them: the queue
        # starts none of those while a dead one holds the ingest's slot.
        working = context.instance.get_run_records(
            RunsFilter(tags={INGEST_TAG: ingest_id}, statuses=list(WORKING))
        )
        if working:
            settle_dead_runs(context, working, jetstream, spec=spec, options=options)
        active = context.instance.get_runs(
            RunsFilter(tags={INGEST_TAG: ingest_id}, statuses=UNFINISHED), limit=5
        )
        if active:
            ids = ", ".join(run.run_id for run in active)
            reason = f"a run of ingest {ingest_id!r} is queued or in progress ({ids}); waiting"
            return SensorResult(skip_reason=SkipReason(reason), cursor=cursor.to_json())
        try:
            with tick_client(jetstream, options.tick_budget) as client:
                position = read_position(client, spec)
        except JetStreamError as error:
            raise SensorTickError(
                f"sensor {sensor_name!r} cannot read stream {spec.stream!r} / consumer "
                f"{spec.durable!r} on NATS {jetstream.servers!r}: {error}",
                sensor=sensor_name,
                stream=spec.stream,
                consumer=spec.durable,
                server=jetstream.servers,
            ) from error
        decision = decide(position, cursor, options.clock(), spec=spec, options=options)
        if decision.skip is not None:
            return SensorResult(
                skip_reason=SkipReason(decision.skip), cursor=decision.cursor.to_json()
            )
        requests = run_requests(
            decision.ranges, position, spec, context.instance, options=options, assets=assets
        )
        context.log.info(f"{ingest_id}: requesting {', '.join(r.run_key for r in requests)}")
        return SensorResult(run_requests=requests, cursor=decision.cursor.to_json())

    return stream_sensor
