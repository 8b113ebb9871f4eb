"""Ordered reads against a real nats-server: exact ranges, filters, recovery, push ordered."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from resources.jetstream import StreamSpec
from resources.jetstream.consumers import ordered
from resources.jetstream.errors import InvalidArgumentError, StreamNotFoundError


@pytest.fixture
def stream(js, unique_name):
    """A stream of 50 messages alternating between `<name>.a` (odd seqs) and `<name>.b`."""
    js.streams.add(StreamSpec(name=unique_name, subjects=(f"{unique_name}.>",)))
    js.publish_batch([(f"{unique_name}.{'a' if i % 2 else 'b'}", b"%d" % i) for i in range(1, 51)])
    yield unique_name
    js.streams.delete(unique_name)


def test_read_ordered_returns_exactly_the_range_in_stream_order(js, stream):
    messages = list(js.read_ordered(stream, 10, 20, batch=4))

    assert [m.stream_seq for m in messages] == list(range(10, 21))
    assert [m.data for m in messages] == [b"%d" % i for i in range(10, 21)]


def test_read_ordered_pulls_nothing_beyond_end_seq(js, stream, monkeypatch):
    delivered = []
    original_pull = ordered.pull

    async def counting_pull(client, stream_name, consumer, request):
        messages = await original_pull(client, stream_name, consumer, request)
        delivered.extend(messages)
        return messages

    monkeypatch.setattr(ordered, "pull", counting_pull)
    list(js.read_ordered(stream, 5, 17, batch=5))

    assert len(delivered) == 13


def test_read_ordered_with_a_filter_skips_other_subjects_and_ends_at_the_stream_end(js, stream):
    messages = list(js.read_ordered(stream, 40, 1_000, filter_subjects=[f"{stream}.a"]))

    assert [m.stream_seq for m in messages] == [41, 43, 45, 47, 49]
    assert {m.subject for m in messages} == {f"{stream}.a"}


def test_read_ordered_of_a_range_past_the_last_message_yields_nothing(js, stream):
    assert list(js.read_ordered(stream, 51, 60)) == []


def test_read_ordered_deletes_its_consumer_also_when_stopped_early(js, stream):
    reader = js.read_ordered(stream, 1, 50, batch=10)
    next(reader)
    assert len(js.consumers.names(stream)) == 1

    reader.close()
    list(js.read_ordered(stream, 1, 50))

    assert js.consumers.names(stream) == []


def test_read_ordered_recovers_when_its_consumer_disappears_mid_read(js, stream):
    reader = js.read_ordered(stream, 1, 30, batch=5)
    head = [next(reader) for _ in range(7)]
    js.consumers.delete(stream, head[-1].consumer)

    rest = list(reader)

    assert [m.stream_seq for m in head + rest] == list(range(1, 31))


def test_parallel_range_reads_cover_the_stream_exactly_once(js, stream):
    ranges = [(1, 12), (13, 25), (26, 37), (38, 50)]

    with ThreadPoolExecutor(max_workers=4) as pool:
        parts = list(
            pool.map(lambda r: [m.stream_seq for m in js.read_ordered(stream, *r)], ranges)
        )

    assert [seq for part in parts for seq in part] == list(range(1, 51))


@pytest.mark.parametrize(
    ("start", "end", "options"),
    [(0, 5, {}), (6, 5, {}), (1, 5, {"batch": 0}), (1, 5, {"filter_subjects": ["a..b"]})],
)
def test_bad_ranges_are_rejected_when_the_reader_is_made(js, start, end, options):
    with pytest.raises(InvalidArgumentError):
        js.read_ordered("ANY", start, end, **options)


def test_read_ordered_of_a_missing_stream_raises_stream_not_found(js, unique_name):
    with pytest.raises(StreamNotFoundError):
        list(js.read_ordered(unique_name, 1, 5))


def test_subscribe_ordered_follows_the_stream_in_order_from_start_seq(js, stream):
    with js.subscribe_ordered(stream, start_seq=20, filter_subjects=[f"{stream}.b"]) as sub:
        config = js.run(js.jsm.consumer_info(stream, sub.consumer), what="read").config
        seqs = [m.stream_seq for m in sub.messages(idle_timeout=0.5)]
        js.publish(f"{stream}.b", b"new")
        newest = sub.next(timeout=2)

    assert (config.flow_control, config.idle_heartbeat, config.ack_policy) == (True, 5.0, "none")
    assert seqs == list(range(20, 51, 2))
    assert newest.stream_seq == 51


def test_subscribe_ordered_deletes_its_consumer_on_unsubscribe(js, stream):
    sub = js.subscribe_ordered(stream)
    assert sub.next(timeout=2).stream_seq == 1

    sub.unsubscribe()

    assert js.consumers.names(stream) == []
