"""Pull consumers against a real nats-server: fetch, next_message, iterate, ack semantics."""

from __future__ import annotations

import datetime as dt
import time

import pytest

from resources.jetstream import ConsumerSpec, StreamSpec
from resources.jetstream.errors import (
    ConsumerNotFoundError,
    InvalidArgumentError,
    ServerAPIError,
    StreamNotFoundError,
)

DURABLE = "worker"


@pytest.fixture
def stream(js, unique_name):
    """A stream capturing `<name>.>` with a pull consumer `worker` (ack_wait 1 s)."""
    js.streams.add(StreamSpec(name=unique_name, subjects=(f"{unique_name}.>",)))
    js.consumers.add(ConsumerSpec(stream=unique_name, durable=DURABLE, ack_wait=1))
    yield unique_name
    js.streams.delete(unique_name)


def publish_n(js, stream, n, *, size=1):
    js.publish_batch([(f"{stream}.x", b"%0*d" % (size, i)) for i in range(n)])


def test_next_message_exposes_metadata_headers_and_payload(js, stream):
    before = dt.datetime.now(dt.timezone.utc)
    js.publish(f"{stream}.a", b"first", headers={"Source": "test"}, msg_id="evt-1")
    js.publish(f"{stream}.b", b"second")

    msg = js.next_message(stream, DURABLE, timeout=2)

    assert (msg.stream, msg.consumer, msg.subject, msg.data) == (
        stream,
        DURABLE,
        f"{stream}.a",
        b"first",
    )
    assert msg.headers["Source"] == "test"
    assert msg.msg_id == "evt-1"
    assert (msg.stream_seq, msg.consumer_seq) == (1, 1)
    assert (msg.num_delivered, msg.num_pending) == (1, 1)
    assert not msg.redelivered
    assert msg.timestamp.tzinfo is not None
    assert msg.timestamp >= before - dt.timedelta(seconds=5)  # server clock, not ours
    msg.ack()


def test_next_message_returns_none_when_nothing_arrives(js, stream):
    assert js.next_message(stream, DURABLE, timeout=0.2) is None


def test_fetch_returns_up_to_batch_messages_in_stream_order(js, stream):
    publish_n(js, stream, 7)

    first = js.fetch(stream, DURABLE, batch=5, expires=1)
    rest = js.fetch(stream, DURABLE, batch=5, expires=1)

    assert [m.stream_seq for m in first] == [1, 2, 3, 4, 5]
    assert [m.stream_seq for m in rest] == [6, 7]
    assert [m.num_pending for m in first + rest] == [6, 5, 4, 3, 2, 1, 0]


def test_fetch_from_an_empty_stream_returns_an_empty_list(js, stream):
    assert js.fetch(stream, DURABLE, batch=10, expires=0.3) == []


def test_fetch_returns_a_message_published_while_it_waits(js, stream):
    import threading

    later = threading.Timer(0.2, lambda: js.publish(f"{stream}.x", b"late"))
    later.start()
    try:
        messages = js.fetch(stream, DURABLE, batch=10, expires=3)
    finally:
        later.join()

    assert [m.data for m in messages] == [b"late"]


def test_fetch_stops_before_max_bytes_and_the_next_fetch_continues(js, stream):
    publish_n(js, stream, 10, size=100)

    first = js.fetch(stream, DURABLE, batch=10, max_bytes=450, expires=1)
    second = js.fetch(stream, DURABLE, batch=10, max_bytes=450, expires=1)

    assert 1 <= len(first) < 10
    assert sum(len(m.data) for m in first) <= 450
    assert [m.stream_seq for m in first + second] == list(range(1, len(first + second) + 1))


def test_fetch_raises_when_the_next_message_alone_exceeds_max_bytes(js, stream):
    publish_n(js, stream, 1, size=500)

    with pytest.raises(ServerAPIError, match="larger than max_bytes=100"):
        js.fetch(stream, DURABLE, batch=10, max_bytes=100, expires=1)


def test_fetch_from_a_missing_consumer_or_stream_names_what_is_missing(js, stream):
    with pytest.raises(ConsumerNotFoundError, match="has no consumer 'nope'") as raised:
        js.fetch(stream, "nope", expires=0.5)
    assert (raised.value.stream, raised.value.consumer) == (stream, "nope")

    with pytest.raises(StreamNotFoundError):
        js.fetch(f"{stream}_missing", DURABLE, expires=0.5)


def test_fetch_from_a_push_consumer_says_to_subscribe_instead(js, stream):
    js.consumers.add(
        ConsumerSpec(stream=stream, durable="pushed", deliver_subject=f"deliver.{stream}")
    )

    with pytest.raises(InvalidArgumentError, match="push consumer"):
        js.fetch(stream, "pushed", expires=0.5)


@pytest.mark.parametrize(
    "options",
    [{"batch": 0}, {"batch": 1.5}, {"max_bytes": 0}, {"expires": 0}, {"expires": -1}],
)
def test_bad_fetch_arguments_are_rejected_before_io(js, options):
    with pytest.raises(InvalidArgumentError):
        js.fetch("ANY", DURABLE, **options)


def test_an_unacked_message_is_redelivered_after_ack_wait(js, stream):
    publish_n(js, stream, 1)
    js.next_message(stream, DURABLE, timeout=1)

    again = js.next_message(stream, DURABLE, timeout=3)

    assert (again.stream_seq, again.num_delivered, again.redelivered) == (1, 2, True)
    again.ack()


def test_an_acked_message_is_never_redelivered(js, stream):
    publish_n(js, stream, 1)
    js.next_message(stream, DURABLE, timeout=1).ack_sync()

    assert js.next_message(stream, DURABLE, timeout=1.5) is None
    assert js.consumers.info(stream, DURABLE).ack_floor_stream_seq == 1


def test_nak_redelivers_at_once_with_num_delivered_two(js, stream):
    publish_n(js, stream, 1)
    js.next_message(stream, DURABLE, timeout=1).nak()

    again = js.next_message(stream, DURABLE, timeout=0.5)  # well inside ack_wait

    assert (again.stream_seq, again.num_delivered) == (1, 2)
    again.ack()


def test_nak_with_delay_holds_the_redelivery_back_until_the_delay(js, stream):
    js.consumers.add(ConsumerSpec(stream=stream, durable="slow", ack_wait=30))
    publish_n(js, stream, 1)
    js.next_message(stream, "slow", timeout=1).nak(delay=1.0)

    assert js.next_message(stream, "slow", timeout=0.3) is None
    again = js.next_message(stream, "slow", timeout=3)

    assert (again.stream_seq, again.num_delivered) == (1, 2)
    again.ack()


def test_term_means_the_message_is_never_redelivered(js, stream):
    publish_n(js, stream, 1)
    js.next_message(stream, DURABLE, timeout=1).term()

    assert js.next_message(stream, DURABLE, timeout=1.5) is None
    assert js.consumers.info(stream, DURABLE).num_ack_pending == 0


def test_in_progress_extends_ack_wait_and_redelivery_resumes_when_it_stops(js, stream):
    publish_n(js, stream, 1)
    msg = js.next_message(stream, DURABLE, timeout=1)

    for _ in range(3):  # 1.5 s in all, past the 1 s ack_wait
        time.sleep(0.5)
        msg.in_progress()
    assert js.next_message(stream, DURABLE, timeout=0.3) is None

    again = js.next_message(stream, DURABLE, timeout=3)
    assert (again.stream_seq, again.num_delivered) == (1, 2)
    again.ack()


def test_settling_a_message_twice_is_refused(js, stream):
    publish_n(js, stream, 1)
    msg = js.next_message(stream, DURABLE, timeout=1)
    msg.ack()

    assert msg.is_settled
    for settle in (msg.ack, msg.nak, msg.term, msg.in_progress):
        with pytest.raises(InvalidArgumentError, match="already settled"):
            settle()
    with pytest.raises(InvalidArgumentError, match="negative"):
        msg.nak(delay=-1)


def test_iterate_yields_across_fetches_and_never_fetches_past_max_messages(js, stream):
    publish_n(js, stream, 25)

    seen = [m.stream_seq for m in js.iterate(stream, DURABLE, max_messages=15, batch=4)]

    assert seen == list(range(1, 16))
    state = js.consumers.info(stream, DURABLE)
    assert (state.delivered_stream_seq, state.num_pending) == (15, 10)


def test_iterate_stops_once_nothing_arrives_for_idle_timeout(js, stream):
    publish_n(js, stream, 12)

    messages = list(js.iterate(stream, DURABLE, idle_timeout=0.3, batch=5))
    for msg in messages:
        msg.ack()

    assert [m.stream_seq for m in messages] == list(range(1, 13))


@pytest.mark.parametrize(
    "options",
    [{"max_messages": -1}, {"idle_timeout": 0}, {"batch": 0}, {"max_bytes": -5}],
)
def test_bad_iterate_arguments_are_rejected_when_the_iterator_is_made(js, options):
    with pytest.raises(InvalidArgumentError):
        js.iterate("ANY", DURABLE, **options)


def test_pull_consumer_binds_to_an_existing_durable_and_consumes_from_it(js, stream):
    publish_n(js, stream, 3)

    worker = js.pull_consumer(stream, DURABLE)
    first = worker.next_message(timeout=1)
    rest = worker.fetch(batch=10, expires=0.5)

    assert [m.stream_seq for m in [first, *rest]] == [1, 2, 3]
    for msg in [first, *rest]:
        msg.ack_sync()
    assert list(worker.iterate(idle_timeout=0.2)) == []
    assert worker.info().ack_floor_stream_seq == 3


def test_pull_consumer_refuses_a_missing_or_push_consumer(js, stream):
    js.consumers.add(
        ConsumerSpec(stream=stream, durable="pushed", deliver_subject=f"deliver.{stream}")
    )

    with pytest.raises(ConsumerNotFoundError):
        js.pull_consumer(stream, "nope")
    with pytest.raises(InvalidArgumentError, match="subscribe_push"):
        js.pull_consumer(stream, "pushed")
