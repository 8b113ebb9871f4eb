"""Messages a stream's limits removed before the ingest read them: fail by default, or skip
and record the gap."""

from __future__ import annotations

import pytest

from pipelines.ingest.bronze import table_version
from pipelines.ingest.errors import DataLossError
from tests.pipelines.ingest.harness import (
    Ingest,
    assert_landed_exactly_once,
    bronze_keys,
    make_ingest,
    publish_events,
)

KEPT = 50  # the stream's max_msgs


@pytest.fixture
def behind(js, spark, unique_name, table_root) -> Ingest:
    """An ingest that landed messages 1-10, then fell behind: the stream keeps only 31-80."""
    ingest = make_ingest(js, unique_name, table_root, stream={"max_msgs": KEPT})
    publish_events(js, unique_name, 10, seed=41)
    ingest.run(js, spark, "run-1")
    publish_events(js, unique_name, 70, seed=42)
    info = js.streams.info(unique_name)
    assert (info.first_seq, info.last_seq) == (31, 80)
    return ingest


def assert_nothing_moved(js, spark, ingest: Ingest, *, version: int, planned: tuple[int, int]):
    spec = ingest.spec
    assert table_version(spark, ingest.path) == version
    assert sorted(seq for _, seq in bronze_keys(spark, ingest.path)) == list(range(1, 11))
    assert js.consumers.info(spec.stream, spec.durable).ack_floor_stream_seq == 10
    checkpoint = ingest.checkpoint()
    assert checkpoint.committed_end == 10
    assert (checkpoint.planned.start, checkpoint.planned.end) == planned
    assert checkpoint.gaps == ()


def test_messages_removed_before_they_were_read_fail_the_run_naming_the_range(js, spark, behind):
    with pytest.raises(DataLossError) as raised:
        behind.run(js, spark, "run-2")

    error = raised.value
    assert (error.start, error.end) == (11, 30)
    assert (error.stream, error.consumer) == (behind.spec.stream, "bronze")
    assert "11-30" in str(error) and "on_data_loss='skip'" in str(error)
    # The plan is recorded (a later run finishes it), but nothing was written or moved.
    assert_nothing_moved(js, spark, behind, version=0, planned=(11, 80))


def test_on_data_loss_skip_lands_what_the_stream_still_holds_and_records_the_gap(js, spark, behind):
    result = behind.run(js, spark, "run-2", on_data_loss="skip")

    assert (result.start, result.end, result.messages) == (11, 80, 50)
    assert result.gap == (11, 30)
    assert (result.ack_floor, result.lag) == (80, 0)
    [gap] = behind.checkpoint().gaps
    assert (gap.start, gap.end, gap.run_id) == (11, 30, "run-2")
    assert_landed_exactly_once(js, spark, behind, [*range(1, 11), *range(31, 81)])


def test_skip_after_a_data_loss_failure_finishes_the_failed_runs_range(js, spark, behind):
    with pytest.raises(DataLossError):
        behind.run(js, spark, "run-2")

    result = behind.run(js, spark, "run-3", on_data_loss="skip")

    assert (result.recovered_from, result.start, result.end) == ("run-2", 11, 80)
    assert result.gap == (11, 30)
    assert_landed_exactly_once(js, spark, behind, [*range(1, 11), *range(31, 81)])


def test_skip_over_a_range_the_stream_removed_entirely_moves_past_it_writing_nothing(
    js, spark, behind
):
    result = behind.run(js, spark, "run-2", on_data_loss="skip", max_messages=20)

    assert (result.start, result.end, result.messages, result.written) == (11, 30, 0, False)
    assert result.gap == (11, 30)
    assert (result.ack_floor, result.lag) == (30, 50)
    assert table_version(spark, behind.path) == 0
    checkpoint = behind.checkpoint()
    assert (checkpoint.committed_end, checkpoint.planned) == (30, None)
    assert [(g.start, g.end) for g in checkpoint.gaps] == [(11, 30)]


def test_messages_removed_while_the_run_reads_fail_it_after_the_commit_and_nothing_moves(
    js, spark, unique_name, table_root
):
    ingest = make_ingest(js, unique_name, table_root, stream={"max_msgs": KEPT})
    publish_events(js, unique_name, 10, seed=43)
    ingest.run(js, spark, "run-1")
    publish_events(js, unique_name, 20, seed=44)  # 11-30, all kept for now

    def burst(step: str) -> None:
        if step == "planned":  # after the plan, before the read: 11-30 drop off the head
            publish_events(js, unique_name, 60, seed=45)

    with pytest.raises(DataLossError) as raised:
        ingest.run(js, spark, "run-2", hook=burst)

    assert (raised.value.start, raised.value.end) == (11, 30)
    assert "The rest of the range is committed" in str(raised.value)
    assert sorted(seq for _, seq in bronze_keys(spark, ingest.path)) == list(range(1, 11))
    assert js.consumers.info(unique_name, "bronze").ack_floor_stream_seq == 10
    checkpoint = ingest.checkpoint()
    assert checkpoint.committed_end == 10
    assert (checkpoint.planned.start, checkpoint.planned.end) == (11, 30)
