"""Planning a run's range, the part of it a stream's limits removed, and splitting it among
readers: pure functions, no server."""

from __future__ import annotations

import datetime as dt
import itertools

import pytest

from pipelines.ingest.plan import StreamPosition, plan_range, removed_by_limits
from pipelines.ingest.reader import RangeRead
from resources.jetstream import ConnectionSettings

UNLIMITED = {"max_messages": 1_000_000, "max_bytes": 1 << 30}


def stream(first: int, last: int, *, size: int = 100) -> StreamPosition:
    """A stream holding every sequence from `first` to `last`, each `size` bytes."""
    messages = max(0, last - first + 1)
    return StreamPosition(first, last, messages, messages * size)


# -- plan_range ------------------------------------------------------------------------------


def test_plan_takes_everything_after_the_committed_end_up_to_the_last_sequence():
    assert plan_range(0, stream(1, 250), **UNLIMITED) == (1, 250)
    assert plan_range(100, stream(1, 250), **UNLIMITED) == (101, 250)


@pytest.mark.parametrize(
    ("committed_end", "position"),
    [
        (250, stream(1, 250)),  # caught up
        (0, StreamPosition(0, 0, 0, 0)),  # a stream that never held a message
        (300, stream(1, 250)),  # committed past the end (the stream was recreated shorter)
        (250, StreamPosition(251, 250, 0, 0)),  # everything purged, nothing new since
    ],
)
def test_plan_is_none_when_nothing_is_new(committed_end, position):
    assert plan_range(committed_end, position, **UNLIMITED) is None


def test_plan_of_one_new_message_is_that_message():
    assert plan_range(249, stream(1, 250), **UNLIMITED) == (250, 250)


def test_plan_is_bounded_by_max_messages():
    assert plan_range(0, stream(1, 250), max_messages=100, max_bytes=1 << 30) == (1, 100)
    assert plan_range(200, stream(1, 250), max_messages=100, max_bytes=1 << 30) == (201, 250)


def test_plan_stops_at_until_a_backfill_pieces_end():
    assert plan_range(0, stream(1, 250), **UNLIMITED, until=100) == (1, 100)
    assert plan_range(0, stream(1, 250), max_messages=50, max_bytes=1 << 30, until=100) == (1, 50)
    assert plan_range(0, stream(1, 250), **UNLIMITED, until=900) == (1, 250)


def test_plan_is_none_when_the_committed_end_is_at_or_past_until():
    # A piece whose range an earlier piece (or the live ingest) already landed does nothing.
    assert plan_range(100, stream(1, 250), **UNLIMITED, until=100) is None
    assert plan_range(180, stream(1, 250), **UNLIMITED, until=100) is None


def test_plan_is_bounded_by_max_bytes_at_the_streams_average_message_size():
    # 100 bytes a message on average: 1,050 bytes allow 10 messages (rounded down).
    assert plan_range(0, stream(1, 250), max_messages=1_000, max_bytes=1_050) == (1, 10)


def test_plan_takes_the_tighter_of_the_message_and_byte_bounds():
    assert plan_range(0, stream(1, 250), max_messages=5, max_bytes=1_000) == (1, 5)
    assert plan_range(0, stream(1, 250), max_messages=50, max_bytes=1_000) == (1, 10)


def test_plan_takes_one_message_when_one_message_exceeds_max_bytes():
    assert plan_range(7, stream(1, 250, size=5_000), max_messages=100, max_bytes=10) == (8, 8)


def test_plan_of_a_stream_reporting_no_bytes_ignores_the_byte_bound():
    assert plan_range(0, StreamPosition(1, 50, 0, 0), max_messages=100, max_bytes=1) == (1, 50)


def test_plan_starts_after_the_committed_end_even_when_the_stream_dropped_those_messages():
    # The head moved past the committed end: the plan still starts there, so the removed
    # part shows up as a gap instead of being skipped silently.
    planned = plan_range(10, stream(31, 80), **UNLIMITED)

    assert planned == (11, 80)
    assert removed_by_limits(*planned, 31) == (11, 30)


# -- removed_by_limits -----------------------------------------------------------------------


@pytest.mark.parametrize("first_seq", [0, 1, 10, 11])
def test_nothing_is_removed_while_the_streams_first_sequence_is_not_past_the_start(first_seq):
    assert removed_by_limits(11, 80, first_seq) is None


@pytest.mark.parametrize(
    ("first_seq", "removed"),
    [
        (12, (11, 11)),  # just the first message
        (31, (11, 30)),  # the head of the range
        (80, (11, 79)),  # all but the last
        (81, (11, 80)),  # all of it, the stream's first sequence right after
        (500, (11, 80)),  # all of it, and more beyond
    ],
)
def test_removed_part_runs_from_the_start_to_before_the_first_sequence_within_the_range(
    first_seq, removed
):
    assert removed_by_limits(11, 80, first_seq) == removed


def test_removed_part_of_a_one_message_range():
    assert removed_by_limits(5, 5, 5) is None
    assert removed_by_limits(5, 5, 6) == (5, 5)


# -- RangeRead.slices --------------------------------------------------------------------------


def range_read(start: int, end: int, readers: int) -> RangeRead:
    return RangeRead(
        settings=ConnectionSettings(servers=("nats://127.0.0.1:4222",)),
        stream="S",
        filter_subjects=(),
        start=start,
        end=end,
        readers=readers,
        pull_batch=100,
        rows_per_batch=1_000,
        run_id="run",
        ingested_at=dt.datetime(2026, 11, 21, tzinfo=dt.timezone.utc),
    )


@pytest.mark.parametrize(
    ("start", "end", "readers"),
    [
        (1, 100, 1),
        (1, 100, 2),
        (1, 100, 3),
        (1, 101, 4),
        (101, 250, 2),
        (1_000_001, 1_000_007, 3),
        (5, 5, 1),
        (5, 5, 8),
        (1, 3, 8),
        (1, 8, 8),
    ],
)
def test_slices_cover_the_range_contiguously_in_near_equal_parts(start, end, readers):
    slices = range_read(start, end, readers).slices()

    assert len(slices) == min(readers, end - start + 1)
    assert slices[0][0] == start and slices[-1][1] == end
    for (_, previous_end), (next_start, _) in itertools.pairwise(slices):
        assert next_start == previous_end + 1  # no gap, no overlap
    sizes = [last - first + 1 for first, last in slices]
    assert min(sizes) >= 1
    assert max(sizes) - min(sizes) <= 1


def test_slices_of_an_uneven_range():
    assert range_read(1, 10, 3).slices() == [(1, 3), (4, 6), (7, 10)]
    assert range_read(101, 250, 2).slices() == [(101, 175), (176, 250)]


def test_more_readers_than_messages_gives_one_slice_per_message():
    assert range_read(1, 3, 8).slices() == [(1, 1), (2, 2), (3, 3)]
