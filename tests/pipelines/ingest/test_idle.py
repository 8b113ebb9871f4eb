"""`nothing_to_land`: an ingest with nothing to land is found without Spark, and a range a
crashed run left planned is never "nothing new".

Real nats-server; the checkpoint is written as the engine's steps leave it (docs/semantics.md,
"What a crash leaves behind"); no Spark and no bronze table.
"""

from __future__ import annotations

import datetime as dt

import pytest

from pipelines.ingest.checkpoint import Checkpoint, CheckpointStore, SeqRange
from pipelines.ingest.idle import nothing_to_land
from pipelines.ingest.spec import IngestSpec
from resources.jetstream import Retention, StreamSpec

NOW = dt.datetime(2026, 11, 21, 12, tzinfo=dt.timezone.utc)


@pytest.fixture
def spec(js, unique_name) -> IngestSpec:
    """A fresh stream, its ingest and its durable consumer; five messages published."""
    js.streams.add(StreamSpec(unique_name, (f"{unique_name}.>",)))
    spec = IngestSpec(
        name=unique_name.lower(), stream=unique_name, durable="bronze", table="bronze/t"
    )
    js.consumers.add(spec.consumer_spec())
    js.publish_batch([(f"{unique_name}.files.deleted", b"%d" % i, None) for i in range(5)])
    return spec


def idle(js, spec, table_root, until=None):
    checkpoints = js.create_key_value(spec.checkpoint_bucket_spec())
    return nothing_to_land(
        js, spec, str(table_root / "bronze"), checkpoints=checkpoints, until=until
    )


def save(js, spec, committed_end: int, planned: tuple[int, int] | None = None) -> None:
    store = CheckpointStore(js.create_key_value(spec.checkpoint_bucket_spec()))
    current = store.load(spec.stream, spec.durable)
    checkpoint = Checkpoint(
        spec.stream,
        spec.durable,
        committed_end=committed_end,
        planned=SeqRange.new(*planned, "dead-run", NOW) if planned else None,
        revision=None if current is None else current.revision,
    )
    store.save(checkpoint)


def test_messages_past_the_consumers_start_are_new_before_any_run(js, spec, table_root):
    assert idle(js, spec, table_root) is None


def test_a_committed_checkpoint_at_the_streams_end_is_nothing_new(js, spec, table_root):
    save(js, spec, 5)
    js.consumers.reset(spec.stream, spec.durable, 6)

    found = idle(js, spec, table_root)

    assert found is not None
    assert dict(found.finding.compared) == {
        "stream_last_seq": 5,
        "checkpoint_committed_end": 5,
        "ack_floor": 5,
    }
    assert (found.result.start, found.result.messages, found.result.lag) == (None, 0, 0)
    assert found.rows is None  # no table yet
    assert "no range pending" in found.finding.describe()


@pytest.mark.parametrize("consumer_moved", [False, True], ids=["committed", "consumer_advanced"])
def test_a_planned_range_left_by_a_crash_is_never_nothing_new(js, spec, table_root, consumer_moved):
    # A run died after its Delta commit of 1-5: before the consumer moved, or after.
    save(js, spec, 0, planned=(1, 5))
    if consumer_moved:
        js.consumers.reset(spec.stream, spec.durable, 6)

    assert idle(js, spec, table_root) is None


def test_a_backfill_piece_whose_end_is_committed_has_nothing_new(js, spec, table_root):
    save(js, spec, 3)
    js.consumers.reset(spec.stream, spec.durable, 4)

    assert idle(js, spec, table_root) is None
    assert idle(js, spec, table_root, until=3) is not None


def test_a_missing_consumer_is_left_to_the_run_which_creates_it(js, spec, table_root):
    save(js, spec, 5)
    js.consumers.delete(spec.stream, spec.durable)

    assert idle(js, spec, table_root) is None


def test_an_empty_stream_never_ingested_is_nothing_new(js, unique_name, table_root):
    js.streams.add(StreamSpec(unique_name, (f"{unique_name}.>",)))
    spec = IngestSpec(name="t", stream=unique_name, durable="bronze", table="bronze/t")
    js.consumers.add(spec.consumer_spec())

    found = idle(js, spec, table_root)

    assert found is not None and "no checkpoint yet" in found.finding.reason


def test_a_work_queue_is_idle_only_with_nothing_pending(js, unique_name, table_root):
    js.streams.add(StreamSpec(unique_name, (f"{unique_name}.>",), retention=Retention.WORK_QUEUE))
    spec = IngestSpec(name="q", stream=unique_name, durable="bronze", table="bronze/q")
    js.consumers.add(spec.consumer_spec())
    assert idle(js, spec, table_root) is not None

    js.publish_batch([(f"{unique_name}.files.deleted", b"1", None)])

    assert idle(js, spec, table_root) is None
