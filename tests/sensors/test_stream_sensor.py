"""Stream sensor ticks against a real nats-server and a real (ephemeral) Dagster instance."""

import datetime as dt
import json
import socket
from dataclasses import replace

import pytest
from dagster import (
    AssetKey,
    AssetSelection,
    DagsterEventType,
    DagsterRunStatus,
    SensorResult,
    define_asset_job,
)

from assets.bronze import bronze_run_config, build_bronze_asset
from assets.liveness import ALIVE_TAG
from pipelines.ingest.checkpoint import Checkpoint, CheckpointStore, SeqRange
from pipelines.ingest.lease import lease_key
from resources.jetstream import JetStreamResource
from sensors import SensorTickError, StreamSensorOptions, build_stream_sensor
from sensors.cursor import StreamSensorCursor
from tests.sensors.conftest import NOW, context_for, publish, record_run


def make_sensor(spec, **fields):
    selection = AssetSelection.assets(build_bronze_asset(spec))
    job = define_asset_job(f"ingest_{spec.name}", selection=selection)
    options = StreamSensorOptions(clock=lambda: NOW, **fields)
    return build_stream_sensor(spec=spec, job=job, options=options)


def tick(sensor, instance, jetstream_resource, cursor=None) -> SensorResult:
    with context_for(instance, jetstream_resource, cursor) as context:
        result = sensor(context)
    assert isinstance(result, SensorResult)
    return result


def decoded(result: SensorResult) -> StreamSensorCursor:
    return StreamSensorCursor.decode(result.cursor)


def test_new_messages_request_one_run_keyed_by_their_range_and_bounded_at_its_end(
    js, ingest, jetstream_resource, dagster_instance
):
    publish(js, ingest, 5)

    result = tick(make_sensor(ingest), dagster_instance, jetstream_resource)

    [request] = result.run_requests
    assert request.run_key == f"{ingest.stream}:bronze:1-5"
    assert request.run_config == bronze_run_config(ingest, 5)
    assert request.tags == {"jsl/ingest": f"{ingest.stream}:bronze", "jsl/range": "1-5"}
    assert decoded(result) == StreamSensorCursor(last_end=5, requested_at=NOW)


def test_the_requests_name_the_assets_the_runs_materialise_when_given(
    js, ingest, jetstream_resource, dagster_instance
):
    publish(js, ingest, 5)
    bronze = build_bronze_asset(ingest)
    job = define_asset_job(f"ingest_{ingest.name}", selection=AssetSelection.assets(bronze))
    assets = (*bronze.keys, AssetKey(["silver", "events"]))
    sensor = build_stream_sensor(spec=ingest, job=job, assets=assets)

    [request] = tick(sensor, dagster_instance, jetstream_resource).run_requests

    # Recorded as the run's asset selection: automation does not run silver again after it.
    assert request.asset_selection == list(assets)
    [plain] = tick(make_sensor(ingest), dagster_instance, jetstream_resource).run_requests
    assert plain.asset_selection is None  # the whole job


def test_repeated_tick_requests_the_same_run_key_so_dagster_launches_it_once(
    js, ingest, jetstream_resource, dagster_instance
):
    publish(js, ingest, 3)
    sensor = make_sensor(ingest)

    first = tick(sensor, dagster_instance, jetstream_resource)
    again = tick(sensor, dagster_instance, jetstream_resource, first.cursor)

    assert [r.run_key for r in again.run_requests] == [r.run_key for r in first.run_requests]


def test_nothing_new_skips_and_names_the_positions(
    js, ingest, jetstream_resource, dagster_instance
):
    result = tick(make_sensor(ingest), dagster_instance, jetstream_resource)

    assert not result.run_requests
    assert result.skip_reason.skip_message == (
        f"nothing new: stream {ingest.stream!r} last seq 0, consumer 'bronze' committed 0"
    )


def test_committed_position_comes_from_the_checkpoint(
    js, ingest, jetstream_resource, dagster_instance
):
    publish(js, ingest, 30)
    store = CheckpointStore(js.create_key_value(ingest.checkpoint_bucket_spec()))
    store.save(Checkpoint(ingest.stream, ingest.durable, committed_end=20))

    result = tick(make_sensor(ingest), dagster_instance, jetstream_resource)

    assert [r.run_key for r in result.run_requests] == [f"{ingest.stream}:bronze:21-30"]


def test_without_a_checkpoint_the_consumer_ack_floor_is_the_committed_position(
    js, ingest, jetstream_resource, dagster_instance
):
    publish(js, ingest, 15)
    for message in js.fetch(ingest.stream, ingest.durable, batch=10):
        message.ack_sync()

    result = tick(make_sensor(ingest), dagster_instance, jetstream_resource)

    assert [r.run_key for r in result.run_requests] == [f"{ingest.stream}:bronze:11-15"]


def test_fewer_than_min_messages_skip_and_start_the_max_wait_clock(
    js, ingest, jetstream_resource, dagster_instance
):
    publish(js, ingest, 3)
    sensor = make_sensor(ingest, min_messages=10, max_wait=dt.timedelta(minutes=15))

    result = tick(sensor, dagster_instance, jetstream_resource)

    assert not result.run_requests
    assert result.skip_reason.skip_message.startswith(
        "3 new message(s) (1-3) are fewer than min_messages=10 and max_wait 0:15:00 is reached "
        "at 2026-11-21T12:15:00+00:00"
    )
    assert decoded(result) == StreamSensorCursor(pending_since=NOW)


def test_max_wait_since_the_first_wait_requests_the_few_pending_messages(
    js, ingest, jetstream_resource, dagster_instance
):
    publish(js, ingest, 3)
    sensor = make_sensor(ingest, min_messages=10, max_wait=dt.timedelta(minutes=15))
    waited = StreamSensorCursor(pending_since=NOW - dt.timedelta(minutes=15)).to_json()

    result = tick(sensor, dagster_instance, jetstream_resource, waited)

    assert [r.run_key for r in result.run_requests] == [f"{ingest.stream}:bronze:1-3"]
    assert decoded(result) == StreamSensorCursor(last_end=3, requested_at=NOW)


def test_max_wait_counts_from_the_last_requested_run(
    js, ingest, jetstream_resource, dagster_instance
):
    publish(js, ingest, 3)
    sensor = make_sensor(ingest, min_messages=10, max_wait=dt.timedelta(minutes=15))
    recent = StreamSensorCursor(last_end=0, requested_at=NOW - dt.timedelta(minutes=14))
    old = StreamSensorCursor(last_end=0, requested_at=NOW - dt.timedelta(minutes=16))

    waiting = tick(sensor, dagster_instance, jetstream_resource, recent.to_json())
    due = tick(sensor, dagster_instance, jetstream_resource, old.to_json())

    assert not waiting.run_requests
    assert "reached at 2026-11-21T12:01:00+00:00" in waiting.skip_reason.skip_message
    assert [r.run_key for r in due.run_requests] == [f"{ingest.stream}:bronze:1-3"]


def test_without_max_wait_few_messages_wait_for_min_messages(
    js, ingest, jetstream_resource, dagster_instance
):
    publish(js, ingest, 3)
    sensor = make_sensor(ingest, min_messages=10, max_wait=None)
    long_ago = StreamSensorCursor(requested_at=NOW - dt.timedelta(days=30)).to_json()

    result = tick(sensor, dagster_instance, jetstream_resource, long_ago)

    assert not result.run_requests
    assert "max_wait is off" in result.skip_reason.skip_message


@pytest.mark.parametrize("status", [DagsterRunStatus.QUEUED, DagsterRunStatus.STARTED])
def test_queued_or_running_run_of_the_ingest_skips_the_tick(
    js, ingest, jetstream_resource, dagster_instance, status
):
    publish(js, ingest, 5)
    run = record_run(dagster_instance, {"jsl/ingest": f"{ingest.stream}:bronze"}, status)

    result = tick(make_sensor(ingest), dagster_instance, jetstream_resource)

    assert not result.run_requests
    assert result.skip_reason.skip_message == (
        f"a run of ingest '{ingest.stream}:bronze' is queued or in progress ({run.run_id}); waiting"
    )


def started_run_alive_until(instance, ingest, until: dt.datetime):
    """A STARTED run of the ingest whose `jsl/alive-until` tag says `until`."""
    run = record_run(instance, {"jsl/ingest": f"{ingest.stream}:bronze"}, DagsterRunStatus.STARTED)
    instance.add_run_tags(run.run_id, {ALIVE_TAG: until.isoformat()})
    return run


def test_run_whose_process_stopped_saying_it_is_alive_is_marked_failed_and_its_range_recovered(
    js, ingest, jetstream_resource, dagster_instance
):
    publish(js, ingest, 30)
    run = started_run_alive_until(dagster_instance, ingest, NOW - dt.timedelta(seconds=1))
    store = CheckpointStore(js.create_key_value(ingest.checkpoint_bucket_spec()))
    planned = SeqRange.new(1, 10, run.run_id, NOW)
    store.save(Checkpoint(ingest.stream, ingest.durable, committed_end=0, planned=planned))

    result = tick(make_sensor(ingest, min_messages=100), dagster_instance, jetstream_resource)

    [recovery] = result.run_requests
    assert (recovery.tags["jsl/range"], recovery.tags["jsl/recovers-run"]) == ("1-10", run.run_id)
    dead = dagster_instance.get_run_by_id(run.run_id)
    assert dead.status == DagsterRunStatus.FAILURE
    [failure] = dagster_instance.all_logs(run.run_id, of_type=DagsterEventType.RUN_FAILURE)
    assert "marks this run failed: it last said it was alive until 11:59:59" in failure.message
    assert f"holds no lease on {ingest.stream}/bronze" in failure.message


def test_a_dead_run_behind_many_queued_runs_is_still_seen_and_marked_failed(
    js, ingest, jetstream_resource, dagster_instance
):
    """A backlog's pieces queue behind the run that died: the queue starts none of them
    while the dead one holds the ingest's slot, so it is judged however many are queued."""
    publish(js, ingest, 5)
    dead = started_run_alive_until(dagster_instance, ingest, NOW - dt.timedelta(seconds=1))
    tags = {"jsl/ingest": f"{ingest.stream}:bronze"}
    queued = [record_run(dagster_instance, tags, DagsterRunStatus.QUEUED) for _ in range(6)]

    result = tick(make_sensor(ingest), dagster_instance, jetstream_resource)

    assert dagster_instance.get_run_by_id(dead.run_id).status == DagsterRunStatus.FAILURE
    assert not result.run_requests  # the queued pieces go on; the sensor waits for them
    assert "is queued or in progress" in result.skip_reason.skip_message
    assert dead.run_id not in result.skip_reason.skip_message
    assert queued[-1].run_id in result.skip_reason.skip_message


def test_run_that_says_it_is_alive_or_still_holds_its_lease_is_waited_for(
    js, ingest, jetstream_resource, dagster_instance
):
    publish(js, ingest, 5)
    alive = started_run_alive_until(dagster_instance, ingest, NOW + dt.timedelta(seconds=20))
    silent = started_run_alive_until(dagster_instance, ingest, NOW - dt.timedelta(seconds=20))
    bucket = js.create_key_value(ingest.checkpoint_bucket_spec())
    bucket.put(
        lease_key(ingest.stream, ingest.durable),
        json.dumps(
            {"holder": silent.run_id, "expires_at": (NOW + dt.timedelta(seconds=5)).isoformat()}
        ).encode(),
    )

    result = tick(make_sensor(ingest), dagster_instance, jetstream_resource)

    assert not result.run_requests
    assert "is queued or in progress" in result.skip_reason.skip_message
    for run in (alive, silent):
        assert dagster_instance.get_run_by_id(run.run_id).status == DagsterRunStatus.STARTED


def test_run_of_another_ingest_does_not_hold_this_one_back(
    js, ingest, jetstream_resource, dagster_instance
):
    publish(js, ingest, 5)
    record_run(dagster_instance, {"jsl/ingest": "OTHER:bronze"}, DagsterRunStatus.STARTED)

    result = tick(make_sensor(ingest), dagster_instance, jetstream_resource)

    assert len(result.run_requests) == 1


def test_range_planned_by_a_crashed_run_is_requested_first_and_exactly(
    js, ingest, jetstream_resource, dagster_instance
):
    publish(js, ingest, 30)
    store = CheckpointStore(js.create_key_value(ingest.checkpoint_bucket_spec()))
    planned = SeqRange.new(1, 10, "crashed-run", NOW)
    store.save(Checkpoint(ingest.stream, ingest.durable, committed_end=0, planned=planned))

    only_recovery = tick(
        make_sensor(ingest, min_messages=100, max_wait=None), dagster_instance, jetstream_resource
    )
    with_the_rest = tick(make_sensor(ingest), dagster_instance, jetstream_resource)

    [recovery] = only_recovery.run_requests
    assert recovery.run_key == f"{ingest.stream}:bronze:1-10"
    assert recovery.run_config == bronze_run_config(ingest, 10)
    assert recovery.tags["jsl/recovers-run"] == "crashed-run"
    assert [r.tags["jsl/range"] for r in with_the_rest.run_requests] == ["1-10", "11-30"]


def test_backlog_beyond_one_run_is_requested_as_a_backfill_of_range_pieces(
    js, ingest, jetstream_resource, dagster_instance
):
    spec = replace(ingest, max_messages=10)
    publish(js, spec, 35)

    result = tick(make_sensor(spec), dagster_instance, jetstream_resource)

    ingest_id = f"{spec.stream}:bronze"
    assert [(r.run_key, r.run_config) for r in result.run_requests] == [
        (f"{ingest_id}:1-10", bronze_run_config(spec, 10)),
        (f"{ingest_id}:11-20", bronze_run_config(spec, 20)),
        (f"{ingest_id}:21-30", bronze_run_config(spec, 30)),
        (f"{ingest_id}:31-35", bronze_run_config(spec, 35)),
    ]
    assert {r.tags["jsl/backfill"] for r in result.run_requests} == {f"{ingest_id}:1-35"}
    assert [r.tags["jsl/piece"] for r in result.run_requests] == ["1/4", "2/4", "3/4", "4/4"]
    assert decoded(result).last_end == 35


def test_with_follow_seconds_a_lone_range_is_tagged_to_keep_going_and_backfill_pieces_not(
    js, ingest, jetstream_resource, dagster_instance
):
    publish(js, ingest, 5)
    sensor = make_sensor(ingest, follow_seconds=120)

    [lone] = tick(sensor, dagster_instance, jetstream_resource).run_requests
    spec = replace(ingest, max_messages=2)
    pieces = tick(make_sensor(spec, follow_seconds=120), dagster_instance, jetstream_resource)

    assert lone.tags["jsl/follow"] == "120"
    assert len(pieces.run_requests) == 3
    assert not any("jsl/follow" in r.tags for r in pieces.run_requests)  # each stops at its end


def test_max_runs_per_tick_leaves_the_rest_of_the_backlog_to_later_ticks(
    js, ingest, jetstream_resource, dagster_instance
):
    spec = replace(ingest, max_messages=10)
    publish(js, spec, 35)

    result = tick(make_sensor(spec, max_runs_per_tick=2), dagster_instance, jetstream_resource)

    assert [r.tags["jsl/range"] for r in result.run_requests] == ["1-10", "11-20"]
    assert decoded(result).last_end == 20


def test_range_whose_run_failed_is_requested_again_under_a_new_key(
    js, ingest, jetstream_resource, dagster_instance
):
    publish(js, ingest, 5)
    tags = {"jsl/ingest": f"{ingest.stream}:bronze", "jsl/range": "1-5"}
    record_run(dagster_instance, tags, DagsterRunStatus.FAILURE)

    result = tick(make_sensor(ingest), dagster_instance, jetstream_resource)

    assert [r.run_key for r in result.run_requests] == [f"{ingest.stream}:bronze:1-5:attempt-2"]


def test_range_that_failed_max_retries_times_fails_the_tick_naming_the_runs(
    js, ingest, jetstream_resource, dagster_instance
):
    publish(js, ingest, 5)
    tags = {"jsl/ingest": f"{ingest.stream}:bronze", "jsl/range": "1-5"}
    runs = [record_run(dagster_instance, tags, DagsterRunStatus.FAILURE) for _ in range(2)]
    with (
        context_for(dagster_instance, jetstream_resource, "{}") as context,
        pytest.raises(SensorTickError, match=r"range 1-5 .* failed 2 times") as raised,
    ):
        make_sensor(ingest, max_retries=2)(context)

    assert all(run.run_id in str(raised.value) for run in runs)
    assert context.cursor == "{}"


@pytest.mark.parametrize(
    "garbage", ["not json {", "1234", '{"v": 99}', '{"v": 1, "last_end": "x"}']
)
def test_unreadable_cursor_is_replaced_by_a_fresh_one(
    js, ingest, jetstream_resource, dagster_instance, garbage
):
    publish(js, ingest, 2)

    result = tick(make_sensor(ingest), dagster_instance, jetstream_resource, garbage)

    assert [r.run_key for r in result.run_requests] == [f"{ingest.stream}:bronze:1-2"]
    assert json.loads(result.cursor)["last_end"] == 2


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_unreachable_server_fails_the_tick_naming_the_server_and_keeps_the_cursor(
    ingest, dagster_instance
):
    url = f"nats://127.0.0.1:{closed_port()}"
    unreachable = JetStreamResource(servers=url, connect_timeout=2, max_reconnect_attempts=0)
    cursor = StreamSensorCursor(last_end=7, requested_at=NOW).to_json()
    with (
        context_for(dagster_instance, unreachable, cursor) as context,
        pytest.raises(SensorTickError, match="cannot connect to NATS server") as raised,
    ):
        make_sensor(ingest).evaluate_tick(context)

    assert url in str(raised.value)
    assert ingest.stream in str(raised.value)
    assert context.cursor == cursor


def test_missing_consumer_fails_the_tick_saying_how_to_create_it(
    js, ingest, jetstream_resource, dagster_instance
):
    js.consumers.delete(ingest.stream, ingest.durable)

    with (
        context_for(dagster_instance, jetstream_resource) as context,
        pytest.raises(SensorTickError, match="has no consumer 'bronze'; create it"),
    ):
        make_sensor(ingest)(context)


def test_missing_stream_fails_the_tick_naming_it(js, ingest, jetstream_resource, dagster_instance):
    js.streams.delete(ingest.stream)

    with (
        context_for(dagster_instance, jetstream_resource) as context,
        pytest.raises(SensorTickError, match=f"stream '{ingest.stream}' does not exist"),
    ):
        make_sensor(ingest)(context)
