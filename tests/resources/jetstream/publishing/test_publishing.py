"""Publishing against a real nats-server: acks, de-duplication, expectations, batches."""

from __future__ import annotations

import asyncio

import nats
import pytest

from resources.jetstream import EmbeddedNatsServer, JetStreamResource, PubAck, StreamSpec
from resources.jetstream.errors import (
    InvalidArgumentError,
    NoStreamForSubjectError,
    PublishExpectationError,
)
from resources.jetstream.publishing import send
from resources.jetstream.publishing.expectations import Expectations, outbound_headers


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


# -- the server's max_payload counts payload + headers (issue 34) ----------------------------

SMALL_MAX_PAYLOAD = 4096  # large enough for the JetStream API requests of these tests

# Header sets and the header block nats-py writes for them, spelled out byte by byte (the
# server counts these bytes with the payload against max_payload).
HEADER_CASES = {
    "no headers": ({}, b""),
    "msg id": ({"msg_id": "x"}, b"NATS/1.0\r\nNats-Msg-Id: x\r\n\r\n"),
    "msg id, expectations and headers": (
        {
            "headers": {"Content-Type": " application/json ", "Note": "two\r\nlines"},
            "msg_id": "evt-1",
            "expected_stream": "{stream}",
            "expected_last_seq": 0,
            "expected_last_subject_seq": 0,
        },
        b"NATS/1.0\r\n"
        b"Content-Type: application/json\r\n"  # values are stripped
        b"Note: two  lines\r\n"  # CR/LF in a value become spaces
        b"Nats-Msg-Id: evt-1\r\n"
        b"Nats-Expected-Stream: {stream}\r\n"
        b"Nats-Expected-Last-Sequence: 0\r\n"
        b"Nats-Expected-Last-Subject-Sequence: 0\r\n"
        b"\r\n",
    ),
    "non-ASCII value": ({"headers": {"Name": "Grüße"}}, "NATS/1.0\r\nName: Grüße\r\n\r\n".encode()),
}


@pytest.fixture(scope="module")
def small_server(tmp_path_factory):
    """A nats-server of its own with a small max_payload, for this module."""
    config = f"max_payload: {SMALL_MAX_PAYLOAD}"
    with EmbeddedNatsServer(store_dir=tmp_path_factory.mktemp("small"), extra_config=config) as s:
        yield s


@pytest.fixture
def small_js(small_server):
    """A client of the small server, closed after the test."""
    resource = JetStreamResource(servers=small_server.url, connect_timeout=5, request_timeout=5)
    with resource.client() as client:
        assert client.nc.max_payload == SMALL_MAX_PAYLOAD
        yield client


@pytest.fixture
def small_stream(small_js, unique_name):
    """A stream on the small server capturing `<name>.>`, deleted after the test."""
    small_js.streams.add(StreamSpec(name=unique_name, subjects=(f"{unique_name}.>",)))
    yield unique_name
    small_js.streams.delete(unique_name)


def sized(case: str, stream: str, over: int) -> tuple[dict, bytes, int]:
    """The publish options of `case`, a payload making the message `max_payload + over`
    bytes in all, and the size of the header block."""
    options, block = HEADER_CASES[case]
    options = {k: v.format(stream=stream) if isinstance(v, str) else v for k, v in options.items()}
    block = block.replace(b"{stream}", stream.encode())
    return options, b"p" * (SMALL_MAX_PAYLOAD + over - len(block)), len(block)


def assert_connection_kept(js, stream, seq):
    """The same client still publishes and reads: its connection was not closed."""
    assert js.is_connected
    assert js.publish(f"{stream}.after", b"after").seq == seq
    assert stored(js, stream)[-1].data == b"after"


@pytest.mark.parametrize("case", list(HEADER_CASES))
def test_message_of_exactly_max_payload_with_headers_is_sent_and_stored(
    small_js, small_stream, case
):
    options, payload, _ = sized(case, small_stream, over=0)

    ack = small_js.publish(f"{small_stream}.a", payload, **options)

    assert ack.seq == 1
    [message] = stored(small_js, small_stream)
    assert message.data == payload
    assert_connection_kept(small_js, small_stream, seq=2)


@pytest.mark.parametrize("case", list(HEADER_CASES))
def test_message_one_byte_over_max_payload_is_refused_before_sending_and_keeps_the_connection(
    small_js, small_stream, case
):
    options, payload, header_size = sized(case, small_stream, over=1)
    subject = f"{small_stream}.a"

    with pytest.raises(InvalidArgumentError) as raised:
        small_js.publish(subject, payload, **options)

    message = str(raised.value)
    assert f"cannot publish to '{subject}'" in message
    total = SMALL_MAX_PAYLOAD + 1
    assert f"payload {len(payload)} + headers {header_size} = {total} bytes" in message
    assert f"server's max_payload of {SMALL_MAX_PAYLOAD} bytes" in message
    assert "Object Store" in message
    assert small_js.streams.info(small_stream).messages == 0
    assert_connection_kept(small_js, small_stream, seq=1)


@pytest.mark.parametrize("case", list(HEADER_CASES))
def test_without_the_check_the_server_closes_the_connection_one_byte_over(
    small_server, small_js, small_stream, case
):
    """Without the check (nats-py directly), the server counts exactly the sizes above: it
    answers the message one byte over by closing the connection, and logs both sizes."""
    options, payload, _ = sized(case, small_stream, over=1)
    headers = outbound_headers(
        options.get("headers"),
        options.get("msg_id"),
        Expectations(
            stream=options.get("expected_stream"),
            last_seq=options.get("expected_last_seq"),
            last_subject_seq=options.get("expected_last_subject_seq"),
        ),
    )

    async def publish_unchecked() -> tuple[bool, str]:
        nc = await nats.connect(small_server.url, allow_reconnect=False)
        nc._max_payload += 1  # past nats-py's own check (of the payload alone)
        try:
            await nc.publish(f"{small_stream}.a", payload, headers=headers)
            for _ in range(100):  # until the server closes the connection (at most 5 s)
                if nc.is_closed:
                    break
                await asyncio.sleep(0.05)
            return nc.is_closed, str(nc.last_error)
        finally:
            await nc.close()

    logged = f"maximum payload exceeded: {SMALL_MAX_PAYLOAD + 1} vs {SMALL_MAX_PAYLOAD}"
    before = small_server.log_path.read_text().count(logged)

    closed, error = asyncio.run(publish_unchecked())

    assert closed
    assert "maximum payload violation" in error.lower()  # what the client is told
    assert small_server.log_path.read_text().count(logged) == before + 1
    assert small_js.streams.info(small_stream).messages == 0


def test_empty_headers_still_send_a_header_block_that_counts(small_js, small_stream):
    """`request_publish` (the path every publish takes) with `{}`: nats-py sends an HPUB with
    the 12-byte block "NATS/1.0\\r\\n\\r\\n"."""
    subject = f"{small_stream}.a"

    def request(payload: bytes) -> PubAck:
        coro = send.request_publish(small_js.nc, subject, payload, {}, timeout=5)
        return small_js.run(coro, what=f"publish to {subject!r}")

    with pytest.raises(InvalidArgumentError, match=r"payload 4085 \+ headers 12 = 4097 bytes"):
        request(b"p" * (SMALL_MAX_PAYLOAD - 11))
    assert request(b"p" * (SMALL_MAX_PAYLOAD - 12)).seq == 1
    assert_connection_kept(small_js, small_stream, seq=2)


def test_batch_with_one_oversized_message_sends_nothing_and_keeps_the_connection(
    small_js, small_stream
):
    subject = f"{small_stream}.a"
    block = len(b"NATS/1.0\r\nNats-Msg-Id: id-2\r\n\r\n")
    batch = [(subject, b"%d" % i, {"Nats-Msg-Id": f"id-{i}"}) for i in range(5)]
    batch[2] = (subject, b"p" * (SMALL_MAX_PAYLOAD + 1 - block), {"Nats-Msg-Id": "id-2"})

    with pytest.raises(InvalidArgumentError) as raised:
        small_js.publish_batch(batch, max_in_flight=2)

    assert f"headers {block} = {SMALL_MAX_PAYLOAD + 1} bytes" in str(raised.value)
    notes = " ".join(getattr(raised.value, "__notes__", []))
    assert "batch message 2 of 5 is too large; nothing of the batch was sent" in notes
    assert small_js.streams.info(small_stream).messages == 0

    batch[2] = (subject, b"p" * (SMALL_MAX_PAYLOAD - block), {"Nats-Msg-Id": "id-2"})
    assert [a.seq for a in small_js.publish_batch(batch, max_in_flight=2)] == [1, 2, 3, 4, 5]
    assert [len(m.data) for m in stored(small_js, small_stream)][2] == SMALL_MAX_PAYLOAD - block
    assert_connection_kept(small_js, small_stream, seq=6)


def test_issue_34_one_mib_payload_with_a_msg_id_is_refused_on_the_default_server(js, stream):
    subject = f"{stream}.deleted"

    with pytest.raises(InvalidArgumentError) as raised:
        js.publish(subject, b"m" * 1_048_576, msg_id="x")

    assert "payload 1048576 + headers 28 = 1048604 bytes" in str(raised.value)
    assert "max_payload of 1048576 bytes" in str(raised.value)
    assert js.publish(subject, b"m" * (1_048_576 - 28), msg_id="x").seq == 1
    assert_connection_kept(js, stream, seq=2)


def test_header_names_nats_py_would_refuse_are_rejected_before_io(js):
    with pytest.raises(InvalidArgumentError, match="not a valid NATS header name"):
        js.publish("orders.x", b"x", headers={"Bad Name": "v"})
