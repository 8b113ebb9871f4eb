"""Push subscriptions against a real nats-server: binding, deliver groups, redelivery."""

from __future__ import annotations

import pytest

from resources.jetstream import ConsumerSpec, StreamSpec
from resources.jetstream.errors import ConsumerNotFoundError, InvalidArgumentError


@pytest.fixture
def stream(js, unique_name):
    """A stream capturing `<name>.>`, deleted after the test."""
    js.streams.add(StreamSpec(name=unique_name, subjects=(f"{unique_name}.>",)))
    yield unique_name
    js.streams.delete(unique_name)


def push_consumer(js, stream, durable, **options):
    spec = ConsumerSpec(
        stream=stream, durable=durable, deliver_subject=f"deliver.{stream}.{durable}", **options
    )
    js.consumers.add(spec)
    return durable


def test_subscribe_push_binds_to_an_existing_durable_and_receives_its_messages(js, stream):
    durable = push_consumer(js, stream, "audit", ack_wait=5)
    js.publish(f"{stream}.a", b"one", headers={"Source": "test"})
    js.publish(f"{stream}.b", b"two")

    with js.subscribe_push(stream, durable) as sub:
        first, second = sub.next(timeout=2), sub.next(timeout=2)
        first.ack()
        second.ack()
        assert sub.next(timeout=0.2) is None

    assert (first.subject, first.data, first.headers["Source"]) == (f"{stream}.a", b"one", "test")
    assert (first.stream, first.consumer, first.stream_seq, first.consumer_seq) == (
        stream,
        durable,
        1,
        1,
    )
    assert (first.num_delivered, first.num_pending) == (1, 1)
    assert second.stream_seq == 2


def test_two_subscribers_of_a_deliver_group_share_the_messages_exactly_once(js, stream):
    durable = push_consumer(js, stream, "workers", deliver_group="workers", ack_wait=5)
    first, second = js.subscribe_push(stream, durable), js.subscribe_push(stream, durable)
    try:
        js.publish_batch([(f"{stream}.x", b"%d" % i) for i in range(60)])
        got = {}
        for name, sub in (("first", first), ("second", second)):
            got[name] = [msg.stream_seq for msg in sub.messages(idle_timeout=0.5)]
    finally:
        first.unsubscribe()
        second.unsubscribe()

    assert sorted(got["first"] + got["second"]) == list(range(1, 61))  # all, none twice
    assert got["first"] and got["second"]  # both took a share


def test_a_message_left_unacked_is_redelivered_to_the_next_subscriber(js, stream):
    durable = push_consumer(js, stream, "retry", ack_wait=1)
    js.publish(f"{stream}.a", b"x")

    with js.subscribe_push(stream, durable) as sub:
        assert sub.next(timeout=2).num_delivered == 1  # not acked
    with js.subscribe_push(stream, durable) as sub:
        again = sub.next(timeout=3)
        again.ack()

    assert (again.stream_seq, again.num_delivered) == (1, 2)


def test_subscribe_push_refuses_a_second_subscriber_without_a_deliver_group(js, stream):
    durable = push_consumer(js, stream, "single")

    with (
        js.subscribe_push(stream, durable),
        pytest.raises(InvalidArgumentError, match="give it a deliver_group"),
    ):
        js.subscribe_push(stream, durable)


def test_subscribe_push_refuses_a_pull_consumer_and_a_missing_one(js, stream):
    js.consumers.add(ConsumerSpec(stream=stream, durable="puller"))

    with pytest.raises(InvalidArgumentError, match="pull consumer"):
        js.subscribe_push(stream, "puller")
    with pytest.raises(ConsumerNotFoundError):
        js.subscribe_push(stream, "nope")


def test_a_subscription_cannot_be_used_after_unsubscribe(js, stream):
    sub = js.subscribe_push(stream, push_consumer(js, stream, "gone"))
    sub.unsubscribe()
    sub.unsubscribe()  # a second time is harmless

    with pytest.raises(InvalidArgumentError, match="has ended"):
        sub.next(timeout=0.1)


def test_iterating_a_subscription_stops_when_it_goes_idle(js, stream):
    durable = push_consumer(js, stream, "iter", ack_wait=5)
    js.publish_batch([(f"{stream}.x", b"%d" % i) for i in range(5)])

    with js.subscribe_push(stream, durable) as sub:
        seqs = []
        for msg in sub.messages(idle_timeout=0.5, max_messages=10):
            msg.ack()
            seqs.append(msg.stream_seq)

    assert seqs == [1, 2, 3, 4, 5]


def test_closing_the_client_ends_its_open_subscriptions(jetstream_resource, js, stream):
    durable = push_consumer(js, stream, "left-open", ack_wait=1)
    js.publish_batch([(f"{stream}.x", b"%d" % i) for i in range(5)])

    with jetstream_resource.client() as other:
        sub = other.subscribe_push(stream, durable)
        assert sub.next(timeout=2).stream_seq == 1  # the rest stay buffered, unread

    with pytest.raises(InvalidArgumentError, match="has ended"):
        sub.next(timeout=0.1)
    assert not other.subscriptions
    with js.subscribe_push(stream, durable) as again:  # all five come back after ack_wait
        redelivered = list(again.messages(max_messages=5, idle_timeout=3))
        for msg in redelivered:
            msg.ack()
    assert sorted(m.stream_seq for m in redelivered) == [1, 2, 3, 4, 5]
