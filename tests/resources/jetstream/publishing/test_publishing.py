"""Publishing against a real nats-server: acks, de-duplication, expectations, batches."""

from __future__ import annotations

import pytest

from resources.jetstream import PubAck, StreamSpec
from resources.jetstream.errors import (
    InvalidArgumentError,
    NoStreamForSubjectError,
    PublishExpectationError,
)


@pytest.fixture
def stream(js, unique_name):
    """A stream capturing `<name>.>`, deleted after the test."""
    js.streams.add(StreamSpec(name=unique_name, subjects=(f"{unique_name}.>",)))
    yield unique_name
    js.streams.delete(unique_name)


def stored(js, stream):
    """Every stored message of `stream`, in order."""
    return list(js.read_ordered(stream, 1, js.streams.info(stream).last_seq or 1))


def test_publish_returns_stream_and_sequence_and_stores_payload_and_headers(js, stream):
    first = js.publish(f"{stream}.a", b"one", headers={"Content-Type": "application/json"})
    second = js.publish(f"{stream}.b", b"two")

    assert first == PubAck(stream=stream, seq=1, duplicate=False)
    assert second.seq == 2
    [one, two] = stored(js, stream)
    assert (one.subject, one.data, one.headers["Content-Type"]) == (
        f"{stream}.a",
        b"one",
        "application/json",
    )
    assert (two.subject, two.data) == (f"{stream}.b", b"two")


def test_repeated_msg_id_inside_the_window_is_acked_as_duplicate_and_not_stored(js, stream):
    first = js.publish(f"{stream}.a", b"x", msg_id="evt-1")
    again = js.publish(f"{stream}.a", b"x", msg_id="evt-1")

    assert not first.duplicate
    assert again.duplicate
    assert again.seq == first.seq
    assert js.streams.info(stream).messages == 1
    assert stored(js, stream)[0].msg_id == "evt-1"


def test_publish_to_a_subject_no_stream_captures_raises_no_stream_for_subject(js, unique_name):
    with pytest.raises(NoStreamForSubjectError, match=rf"'{unique_name}\.nowhere'"):
        js.publish(f"{unique_name}.nowhere", b"x")


def test_publish_answered_by_a_plain_subscriber_raises_no_stream_for_subject(js, unique_name):
    async def answer(msg):
        await msg.respond(b"not a pub ack")

    subject = f"{unique_name}.plain"
    js.run(js.nc.subscribe(subject, cb=answer), what="subscribe")

    with pytest.raises(NoStreamForSubjectError, match="plain NATS subscriber"):
        js.publish(subject, b"x")


def test_expected_stream_mismatch_raises_naming_subject_and_both_streams(js, stream):
    with pytest.raises(PublishExpectationError) as raised:
        js.publish(f"{stream}.a", b"x", expected_stream="OTHER")

    message = str(raised.value)
    assert f"'{stream}.a'" in message
    assert "expected stream 'OTHER'" in message
    assert f"stored in '{stream}'" in message
    assert raised.value.stream == stream
    assert js.streams.info(stream).messages == 0
    assert js.publish(f"{stream}.a", b"x", expected_stream=stream).seq == 1


def test_expected_last_seq_is_enforced_against_the_whole_stream(js, stream):
    assert js.publish(f"{stream}.a", b"1", expected_last_seq=0).seq == 1
    assert js.publish(f"{stream}.b", b"2", expected_last_seq=1).seq == 2

    with pytest.raises(PublishExpectationError) as raised:
        js.publish(f"{stream}.a", b"3", expected_last_seq=1)

    assert "expected last sequence of the stream 1 but it is 2" in str(raised.value)
    assert js.streams.info(stream).messages == 2


def test_expected_last_msg_id_is_enforced(js, stream):
    js.publish(f"{stream}.a", b"1", msg_id="m-1")
    js.publish(f"{stream}.a", b"2", msg_id="m-2", expected_last_msg_id="m-1")

    with pytest.raises(PublishExpectationError) as raised:
        js.publish(f"{stream}.a", b"3", msg_id="m-3", expected_last_msg_id="m-1")

    assert "expected last msg-id 'm-1' but it is 'm-2'" in str(raised.value)
    assert js.streams.info(stream).messages == 2


def test_expected_last_subject_seq_is_enforced_per_subject(js, stream):
    assert js.publish(f"{stream}.a", b"a1", expected_last_subject_seq=0).seq == 1
    js.publish(f"{stream}.b", b"b1")  # another subject does not move a's sequence
    assert js.publish(f"{stream}.a", b"a2", expected_last_subject_seq=1).seq == 3

    with pytest.raises(PublishExpectationError) as raised:
        js.publish(f"{stream}.a", b"a3", expected_last_subject_seq=1)

    message = str(raised.value)
    assert f"'{stream}.a'" in message
    assert "expected last sequence of the subject 1 but it is 3" in message
    assert js.streams.info(stream).messages == 3


@pytest.mark.parametrize(
    ("subject", "data", "options"),
    [
        ("orders.*", b"x", {}),
        ("orders..x", b"x", {}),
        ("orders.x", "text", {}),
        ("orders.x", b"x", {"msg_id": ""}),
        ("orders.x", b"x", {"expected_last_seq": -1}),
        ("orders.x", b"x", {"expected_last_subject_seq": "3"}),
        ("orders.x", b"x", {"expected_stream": "BAD.NAME"}),
        ("orders.x", b"x", {"headers": {"Key": 1}}),
        ("orders.x", b"x", {"timeout": 0}),
    ],
)
def test_bad_publish_arguments_are_rejected_before_io(js, subject, data, options):
    with pytest.raises(InvalidArgumentError):
        js.publish(subject, data, **options)


def test_publish_batch_returns_acks_in_input_order_across_streams(js, stream, unique_name):
    other = f"{unique_name}_B"
    js.streams.add(StreamSpec(name=other, subjects=(f"{other}.>",)))
    try:
        messages = [
            (f"{stream if i % 2 else other}.x", str(i).encode(), {"N": str(i)}) for i in range(40)
        ]
        acks = js.publish_batch(messages, max_in_flight=8)
    finally:
        stored_other = stored(js, other)
        js.streams.delete(other)

    assert [a.stream for a in acks] == [stream if i % 2 else other for i in range(40)]
    assert [a.seq for a in acks if a.stream == stream] == list(range(1, 21))
    assert [a.seq for a in acks if a.stream == other] == list(range(1, 21))
    assert [m.data for m in stored(js, stream)] == [str(i).encode() for i in range(1, 40, 2)]
    assert [m.headers["N"] for m in stored_other] == [str(i) for i in range(0, 40, 2)]


def test_publish_batch_never_has_more_than_max_in_flight_acks_outstanding(js, stream, monkeypatch):
    original = js.nc.request
    outstanding = {"now": 0, "most": 0}

    async def counting_request(*args, **kwargs):
        outstanding["now"] += 1
        outstanding["most"] = max(outstanding["most"], outstanding["now"])
        try:
            return await original(*args, **kwargs)
        finally:
            outstanding["now"] -= 1

    monkeypatch.setattr(js.nc, "request", counting_request)
    acks = js.publish_batch([(f"{stream}.x", b"%d" % i) for i in range(200)], max_in_flight=5)

    assert [a.seq for a in acks] == list(range(1, 201))
    assert outstanding["most"] == 5  # the window was used, and never exceeded
    assert outstanding["now"] == 0


def test_publish_batch_with_msg_ids_is_idempotent(js, stream):
    batch = [(f"{stream}.x", b"%d" % i, {"Nats-Msg-Id": f"id-{i}"}) for i in range(10)]

    first = js.publish_batch(batch, max_in_flight=3)
    again = js.publish_batch(batch, max_in_flight=3)

    assert not any(a.duplicate for a in first)
    assert all(a.duplicate for a in again)
    assert [a.seq for a in again] == [a.seq for a in first]
    assert js.streams.info(stream).messages == 10


def test_publish_batch_stops_at_the_first_failure_and_says_how_far_it_got(js, stream):
    batch = [(f"{stream}.x", b"0"), (f"{stream}.x", b"1"), (f"{stream}_none.x", b"2")]
    batch += [(f"{stream}.x", b"%d" % i) for i in range(3, 10)]

    with pytest.raises(NoStreamForSubjectError) as raised:
        js.publish_batch(batch, max_in_flight=1)

    notes = " ".join(getattr(raised.value, "__notes__", []))
    assert "batch message 2 of 10 failed; 2 messages were acknowledged" in notes
    assert "7 never sent" in notes
    assert [m.data for m in stored(js, stream)] == [b"0", b"1"]


def test_publish_batch_of_nothing_returns_no_acks(js):
    assert js.publish_batch([]) == []


@pytest.mark.parametrize(
    ("messages", "max_in_flight"),
    [
        ([("orders.x", b"x")], 0),
        ([("orders.>", b"x")], 1),
        ([("orders.x",)], 1),
        ([("orders.x", b"x", {"Nats-Msg-Id": 5})], 1),
    ],
)
def test_bad_batches_are_rejected_before_anything_is_sent(js, messages, max_in_flight):
    with pytest.raises(InvalidArgumentError):
        js.publish_batch(messages, max_in_flight=max_in_flight)
