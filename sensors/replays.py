"""`build_replay_request_sensor`: replays requested through a KV bucket, outcomes written back.

A request is a JSON value put under `<ingest name>.<request id>` in the bucket (default
`lakehouse-replays`); the request id is one or more KV tokens of `[-/_=a-zA-Z0-9]`,
separated by dots:

    {"start_seq": 1001, "end_seq": 5000}
    {"start_time": "2026-11-21T00:00:00Z", "end_time": "2026-11-21T06:00:00Z"}

Each tick reads the ingest's keys. A new request (no `status`) is checked, resolved to a
sequence range, split into runs of at most `max_messages_per_run` and launched with run keys
`replay:<key>:<revision>` (`...:<start>-<end>` per piece when there are several); the value is
rewritten, with a compare-and-set on the revision read, as `status: launched` with the
pieces and run keys. Later ticks record the run ids, then `succeeded` or `failed` with
`finished_at` and `messages`. An invalid request becomes `rejected` with a `reason`.
Putting the request again (a new revision) replays again. docs/automation.md has examples.
"""

import collections
import datetime as dt
import json
import time
from dataclasses import dataclass
from typing import Any

from dagster import (
    DagsterEventType,
    DagsterInstance,
    DagsterRunStatus,
    DefaultSensorStatus,
    RunRequest,
    RunsFilter,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from pipelines.ingest.lease import Clock, utc_now
from pipelines.ingest.replay import resolve_time_window
from pipelines.ingest.spec import IngestSpec
from resources.backports import fromisoformat
from resources.jetstream import JetStreamClient, JetStreamResource, KeyValueBucket, KvEntry
from resources.jetstream.errors import JetStreamError, RevisionConflictError
from sensors.stream import RANGE_TAG, SensorTickError, tick_client

REPLAY_TAG = "jsl/replay"  # the request's key, on every run of the request
REVISION_TAG = "jsl/replay-revision"  # the request's revision
LAUNCHED, SUCCEEDED, FAILED, REJECTED = "launched", "succeeded", "failed", "rejected"
DONE = {SUCCEEDED, FAILED, REJECTED}
FINISHED = {DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED}


class RejectedRequest(ValueError):
    """A replay request that cannot be carried out; the message is recorded as its reason."""


@dataclass(frozen=True)
class Piece:
    """One run of a replay: a sequence range and its run key."""

    start: int
    end: int
    run_key: str

    def to_json(self) -> dict[str, Any]:
        return {"start_seq": self.start, "end_seq": self.end, "run_key": self.run_key}


def decode_record(value: bytes) -> dict[str, Any] | None:
    """A replay-request key's value as a JSON object, or None when it is not one (the sensor
    rejects such a request; `jsl status` lists it as such)."""
    try:
        doc = json.loads(value)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def replay_run_config(spec: IngestSpec, start: int, end: int) -> dict:
    """Run config of `build_replay_job(spec)` replaying sequences [start, end]."""
    return {"ops": {f"replay_{spec.name}_range": {"config": {"start_seq": start, "end_seq": end}}}}


def resolve_request(
    doc: dict[str, Any], client: JetStreamClient, spec: IngestSpec, now: dt.datetime
) -> tuple[int, int]:
    """The sequence range a request asks for.

    Raises:
        RejectedRequest: missing or mixed bounds, end before start, a range the stream does
            not hold, a window in the future or one that holds no message.
    """
    seqs = [doc.get("start_seq"), doc.get("end_seq")]
    times = [doc.get("start_time"), doc.get("end_time")]
    if any(v is not None for v in seqs) and any(v is not None for v in times):
        raise RejectedRequest("give either start_seq/end_seq or start_time/end_time, not both")
    stream = client.streams.info(spec.stream)
    if all(isinstance(v, int) and not isinstance(v, bool) for v in seqs):
        start, end = seqs
        if not 1 <= start <= end:
            raise RejectedRequest(f"need 1 <= start_seq <= end_seq, got {start}-{end}")
        if end > stream.last_seq or end < stream.first_seq:
            raise RejectedRequest(
                f"stream {spec.stream!r} holds {stream.first_seq}-{stream.last_seq}, so "
                f"nothing of {start}-{end} can be replayed"
                if end < stream.first_seq
                else f"end_seq {end} is past stream {spec.stream!r}'s last seq {stream.last_seq}"
            )
        return start, end
    if not all(isinstance(v, str) for v in times):
        raise RejectedRequest(
            "give integer start_seq and end_seq, or ISO-8601 start_time and end_time with a "
            'time zone (e.g. "2026-11-21T00:00:00Z")'
        )
    try:
        start_time, end_time = (fromisoformat(v) for v in times)
    except ValueError as error:
        raise RejectedRequest(f"unreadable time: {error}") from None
    if start_time.tzinfo is None or end_time.tzinfo is None or end_time <= start_time:
        raise RejectedRequest("start_time and end_time need a time zone and start < end")
    if end_time > now:
        raise RejectedRequest(f"end_time {times[1]} is in the future; replay only the past")
    bounds = resolve_time_window(client, spec.stream, start_time, end_time)
    if bounds is None:
        raise RejectedRequest(f"stream {spec.stream!r} holds no message in {times[0]}..{times[1]}")
    return bounds


def split(key: str, revision: int, start: int, end: int, size: int) -> list[Piece]:
    """[start, end] in runs of at most `size` sequences, each with its run key."""
    bounds = [(s, min(end, s + size - 1)) for s in range(start, end + 1, size)]
    base = f"replay:{key}:{revision}"
    if len(bounds) == 1:
        return [Piece(start, end, base)]
    return [Piece(s, e, f"{base}:{s}-{e}") for s, e in bounds]


def run_request(spec: IngestSpec, key: str, revision: int, piece: Piece) -> RunRequest:
    return RunRequest(
        run_key=piece.run_key,
        run_config=replay_run_config(spec, piece.start, piece.end),
        tags={
            REPLAY_TAG: key,
            REVISION_TAG: str(revision),
            RANGE_TAG: f"{piece.start}-{piece.end}",
        },
    )


def outcome(doc: dict[str, Any], key: str, instance: DagsterInstance, now: dt.datetime):
    """The launched request's next value (None: unchanged) and the pieces without a run."""
    revision = doc["request_revision"]
    pieces = [Piece(p["start_seq"], p["end_seq"], p["run_key"]) for p in doc["pieces"]]
    runs = instance.get_runs(RunsFilter(tags={REPLAY_TAG: key, REVISION_TAG: str(revision)}))
    latest = {}
    for run in runs:  # newest first: a re-executed piece counts by its latest run
        latest.setdefault(run.tags.get(RANGE_TAG), run)
    found = [latest.get(f"{p.start}-{p.end}") for p in pieces]
    missing = [p for p, run in zip(pieces, found, strict=True) if run is None]
    run_ids = [run.run_id for run in found if run is not None]
    if missing or any(run.status not in FINISHED for run in found):
        changed = run_ids != doc.get("run_ids")
        return ({**doc, "run_ids": run_ids} if changed else None), missing
    failed = [run.run_id for run in found if run.status != DagsterRunStatus.SUCCESS]
    messages = 0
    for run_id in run_ids:
        for entry in instance.all_logs(run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION):
            value = entry.asset_materialization.metadata.get("messages")
            messages += int(value.value) if value is not None else 0
    result = {**doc, "status": FAILED if failed else SUCCEEDED, "run_ids": run_ids}
    result.update(finished_at=now.isoformat(), messages=messages)
    if failed:
        result["failed_run_ids"] = failed
    return result, []


def build_replay_request_sensor(
    *,
    spec: IngestSpec,
    job,
    bucket: str = "lakehouse-replays",
    max_messages_per_run: int | None = None,
    minimum_interval_seconds: int = 30,
    tick_budget: float = 20.0,
    default_status: DefaultSensorStatus = DefaultSensorStatus.STOPPED,
    name: str | None = None,
    clock: Clock = utc_now,
) -> SensorDefinition:
    """Builds the sensor that carries out replay requests put under `<spec.name>.*` in `bucket`.

    Args:
        spec: the ingest whose stream and table the replays use.
        job: `build_replay_job(spec)`.
        bucket: the KV bucket of requests and outcomes.
        max_messages_per_run: the most sequences one replay run takes; default
            `spec.max_messages`.
        minimum_interval_seconds: seconds between ticks.
        tick_budget: seconds a tick may spend; keys left when it is used wait for the next.
        default_status: whether the sensor runs once deployed.
        name: the sensor's name; default `<spec.name>_replay_requests`.
        clock: the current time (UTC).

    Returns:
        The sensor; it needs the `jetstream` resource.
    """
    sensor_name = name or f"{spec.name}_replay_requests"
    size = max_messages_per_run or spec.max_messages
    if size < 1 or not 0 < tick_budget < 60:
        raise ValueError(
            f"sensor {sensor_name!r}: max_messages_per_run must be >= 1 and tick_budget within "
            f"(0, 60) seconds, got {max_messages_per_run!r} and {tick_budget!r}"
        )

    def handle(
        context: SensorEvaluationContext,
        client: JetStreamClient,
        kv: KeyValueBucket,
        entry: KvEntry,
    ) -> tuple[list[RunRequest], str]:
        """The runs to request for one key, and what was done (for the tick's summary)."""
        now = clock().astimezone(dt.timezone.utc)
        doc = decode_record(entry.value)
        status = doc.get("status") if doc is not None else None
        if status in DONE:
            return [], "done"
        if status == LAUNCHED:
            try:
                update, missing = outcome(doc, entry.key, context.instance, now)
                revision = int(doc["request_revision"])
            except (KeyError, TypeError, ValueError) as error:
                return reject(context, kv, entry, doc, f"malformed launched record ({error!r})")
            if update is not None:
                write(context, kv, entry, update)
            action = update["status"] if update and update["status"] in DONE else "running"
            return [run_request(spec, entry.key, revision, piece) for piece in missing], action
        if doc is None:
            doc = {"request": entry.value.decode(errors="replace")}
            return reject(context, kv, entry, doc, "the value is not a JSON object")
        if status not in (None, "requested"):
            reason = f"unknown status {status!r}; put the request again without a status"
            return reject(context, kv, entry, doc, reason)
        try:
            start, end = resolve_request(doc, client, spec, now)
        except RejectedRequest as error:
            return reject(context, kv, entry, doc, str(error))
        pieces = split(entry.key, entry.revision, start, end, size)
        launched = {
            **doc,
            "status": LAUNCHED,
            "request_revision": entry.revision,
            "range": {"start_seq": start, "end_seq": end},
            "pieces": [piece.to_json() for piece in pieces],
            "run_keys": [piece.run_key for piece in pieces],
            "run_ids": [],
            "launched_at": now.isoformat(),
        }
        if not write(context, kv, entry, launched):
            return [], "changed"
        context.log.info(f"replay request {entry.key!r}: launching {start}-{end}")
        return [run_request(spec, entry.key, entry.revision, p) for p in pieces], LAUNCHED

    def reject(context, kv, entry, doc, reason: str) -> tuple[list[RunRequest], str]:
        context.log.warning(f"replay request {entry.key!r} rejected: {reason}")
        now = clock().astimezone(dt.timezone.utc).isoformat()
        rejected = {**doc, "status": REJECTED, "reason": reason, "rejected_at": now}
        write(context, kv, entry, {**rejected, "request_revision": entry.revision})
        return [], REJECTED

    @sensor(
        name=sensor_name,
        job=job,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        description=f"Launches replays of {spec.stream} requested under '{spec.name}.*' in KV "
        f"bucket {bucket!r}, and records their outcome there.",
    )
    def replay_request_sensor(context: SensorEvaluationContext, jetstream: JetStreamResource):
        deadline = time.monotonic() + tick_budget * 0.75
        requests: list[RunRequest] = []
        actions: collections.Counter[str] = collections.Counter()
        try:
            with tick_client(jetstream, tick_budget) as client:
                kv = client.key_value(bucket)
                stored = kv.keys()
                for key in [k for k in stored if k.startswith(f"{spec.name}.")]:
                    if time.monotonic() > deadline:
                        context.log.info(f"tick budget used; {key!r} and later wait a tick")
                        break
                    entry = kv.try_get(key)
                    if entry is not None:
                        runs, action = handle(context, client, kv, entry)
                        requests += runs
                        actions[action] += 1
        except JetStreamError as error:
            raise SensorTickError(
                f"sensor {sensor_name!r} cannot read replay requests in KV bucket {bucket!r} "
                f"on NATS {jetstream.servers!r}: {error}",
                sensor=sensor_name,
                stream=spec.stream,
                bucket=bucket,
                server=jetstream.servers,
            ) from error
        if not requests:
            seen = ", ".join(f"{n} {action}" for action, n in sorted(actions.items()))
            return SkipReason(
                f"no replay of {spec.name!r} to launch: keys '{spec.name}.*' in KV bucket "
                f"{bucket!r}: {seen or 'none'}"
            )
        return SensorResult(run_requests=requests)

    return replay_request_sensor


def write(
    context: SensorEvaluationContext, kv: KeyValueBucket, entry: KvEntry, doc: dict[str, Any]
) -> bool:
    """Rewrites `entry`'s key with `doc` if it is still at `entry.revision`."""
    try:
        kv.update(entry.key, json.dumps(doc).encode(), revision=entry.revision)
    except RevisionConflictError:
        context.log.info(f"replay request {entry.key!r} changed meanwhile; read again next tick")
        return False
    return True
