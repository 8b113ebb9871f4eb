"""Replays: a past range re-ingested in place, idempotently, without moving the consumer."""

import datetime as dt

import pytest
from delta.tables import DeltaTable

from pipelines.file_trash.events import generate_file_deleted_events
from pipelines.ingest.checkpoint import CheckpointStore
from pipelines.ingest.errors import DataLossError
from pipelines.ingest.replay import replay_range, resolve_time_window
from pipelines.ingest.run import ingest
from pipelines.ingest.spec import IngestSpec
from resources.jetstream import StreamSpec
from resources.jetstream.errors import InvalidArgumentError

NOW = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.timezone.utc)


@pytest.fixture
def landed(js, spark, unique_name, table_root):
    """A stream with 100 events, all ingested into bronze."""
    js.streams.add(StreamSpec(unique_name, (f"{unique_name}.>",)))
    spec = IngestSpec(
        name=unique_name.lower(),
        stream=unique_name,
        durable="bronze",
        table="bronze/t",
        readers=2,
        pull_batch=30,
    )
    events = generate_file_deleted_events(100, now=NOW, seed=7)
    js.publish_batch([(f"{unique_name}.files.deleted", e.to_json(), None) for e in events])
    path = f"{table_root}/bronze/t"
    checkpoints = js.create_key_value(spec.checkpoint_bucket_spec())
    ingest(js, spark, spec, path, checkpoints=checkpoints, run_id="live")
    return spec, path, checkpoints


def rows(spark, path):
    return DeltaTable.forPath(spark, path).toDF()


def test_replaying_a_committed_range_twice_changes_only_that_range_and_adds_no_rows(
    js, spark, landed
):
    spec, path, checkpoints = landed
    before = CheckpointStore(checkpoints).load(spec.stream, spec.durable)

    for replay in ("replay-1", "replay-2"):
        result = replay_range(js, spark, spec, path, start=20, end=50, run_id=replay)
        assert (result.start, result.end, result.messages) == (20, 50, 31)

    table = rows(spark, path)
    assert table.count() == table.select("seq").distinct().count() == 100
    replayed = {r.seq for r in table.where("ingest_run_id = 'replay-2'").collect()}
    assert replayed == set(range(20, 51))
    assert js.consumers.info(spec.stream, spec.durable).ack_floor_stream_seq == 100
    assert CheckpointStore(checkpoints).load(spec.stream, spec.durable) == before


def test_replay_restores_rows_lost_from_the_table(js, spark, landed):
    spec, path, _ = landed
    DeltaTable.forPath(spark, path).delete("seq BETWEEN 30 AND 40")
    assert rows(spark, path).count() == 89

    replay_range(js, spark, spec, path, start=25, end=45, run_id="repair")

    assert sorted(r.seq for r in rows(spark, path).select("seq").collect()) == list(range(1, 101))


def test_time_window_resolves_to_the_sequences_stored_inside_it(js, landed):
    spec, _, _ = landed
    start = js.streams.get_message(spec.stream, 11).time
    end = js.streams.get_message(spec.stream, 21).time

    assert resolve_time_window(js, spec.stream, start, end) == (11, 20)
    later = NOW + dt.timedelta(days=365 * 10)
    assert resolve_time_window(js, spec.stream, later, later + dt.timedelta(hours=1)) is None


def test_invalid_ranges_are_rejected_before_reading(js, spark, landed):
    spec, path, _ = landed
    with pytest.raises(InvalidArgumentError, match="invalid range"):
        replay_range(js, spark, spec, path, start=50, end=20, run_id="x")
    with pytest.raises(InvalidArgumentError, match="past the stream's last sequence 100"):
        replay_range(js, spark, spec, path, start=90, end=150, run_id="x")


def test_replay_of_a_range_the_stream_no_longer_holds_raises_data_loss(js, spark, landed):
    spec, path, _ = landed
    js.streams.purge(spec.stream, before_seq=61)

    with pytest.raises(DataLossError, match="no longer holds any of 10-40") as raised:
        replay_range(js, spark, spec, path, start=10, end=40, run_id="x")

    assert (raised.value.start, raised.value.end) == (10, 40)
    assert rows(spark, path).count() == 100  # nothing replaced
