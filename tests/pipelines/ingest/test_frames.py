"""The frame fast path: the same messages and headers as nats-py's own parser, in order."""

import asyncio
import random

import pytest
from nats.aio.client import Client as NATS
from nats.protocol import parser as nats_parser

from pipelines.ingest import frames


class RecordingClient:
    """Stands in for nats-py's client behind a parser: records what the parser hands it."""

    def __init__(self) -> None:
        self.events: list[tuple] = []

    async def _process_msg(self, sid, subject, reply, payload, headers) -> None:
        self.events.append(("msg", sid, bytes(subject), bytes(reply), headers or b"", payload))

    async def _process_ping(self) -> None:
        self.events.append(("ping",))

    async def _process_pong(self) -> None:
        self.events.append(("pong",))

    async def _process_info(self, info) -> None:
        self.events.append(("info", info))

    async def _process_err(self, text) -> None:
        self.events.append(("err", text))


def hmsg(subject: bytes, sid: int, reply: bytes, header: bytes, payload: bytes) -> bytes:
    size = len(header) + len(payload)
    reply_part = reply + b" " if reply else b""
    control = b"HMSG %s %d %s%d %d\r\n" % (subject, sid, reply_part, len(header), size)
    return control + header + payload + b"\r\n"


def msg(subject: bytes, sid: int, reply: bytes, payload: bytes) -> bytes:
    reply_part = reply + b" " if reply else b""
    return b"MSG %s %d %s%d\r\n" % (subject, sid, reply_part, len(payload)) + payload + b"\r\n"


def wire(seed: int) -> bytes:
    """A protocol stream mixing routed (sid 7) and other (sid 3) messages with other ops."""
    rng = random.Random(seed)
    parts = [b'INFO {"server_id":"x","max_payload":1048576}\r\n', b"+OK\r\n"]
    for n in range(300):
        payload = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40)))
        payload += b"\r\nMSG 1 2 3\r\n" if n % 17 == 0 else b""  # protocol-like bytes inside
        header = b"NATS/1.0\r\nNats-Msg-Id: m-%d\r\n\r\n" % n
        sid = 7 if rng.random() < 0.7 else 3
        reply = b"$JS.ACK.S.c.1.%d.%d.1700000000000000000.0" % (n, n) if n % 5 else b""
        kind = rng.randrange(6)
        if kind == 0:
            parts.append(msg(b"files.deleted", sid, reply, payload))
        elif kind == 1:
            parts.append(hmsg(b"files.trashed", sid, b"", b"NATS/1.0 404 No Messages\r\n\r\n", b""))
        else:
            parts.append(hmsg(b"files.deleted", sid, reply, header, payload))
        if n % 50 == 0:
            parts.append(b"PING\r\n")
        if n % 70 == 0:
            parts.append(b"PONG\r\n")
    parts.append(b"-ERR 'Stale Connection'\r\n")
    return b"".join(parts)


def chunks(data: bytes, rng: random.Random) -> list[bytes]:
    out, pos = [], 0
    while pos < len(data):
        size = rng.choice([1, 2, 3, 7, 64, 500, 4096])
        out.append(data[pos : pos + size])
        pos += size
    return out


async def feed(parser: nats_parser.Parser, pieces: list[bytes]) -> None:
    for piece in pieces:
        await parser.parse(piece)


@pytest.mark.parametrize("seed", range(6))
def test_frame_parser_hands_over_exactly_what_nats_py_parses_however_the_bytes_are_split(seed):
    data = wire(seed)
    reference = RecordingClient()
    asyncio.run(feed(nats_parser.Parser(reference), [data]))

    client = RecordingClient()
    parser = frames.FrameParser(client)
    routed: list[tuple] = []
    parser.sinks[7] = lambda subject, reply, header, payload: routed.append(
        ("msg", 7, subject, reply, header, payload)
    )
    asyncio.run(feed(parser, chunks(data, random.Random(seed))))

    expected_routed = [e for e in reference.events if e[0] == "msg" and e[1] == 7]
    expected_other = [e for e in reference.events if not (e[0] == "msg" and e[1] == 7)]
    assert routed == expected_routed  # same messages, same bytes, same order
    assert client.events == expected_other  # everything else reaches nats-py's parser as before
    assert not parser.buf


def test_an_incomplete_frame_waits_for_the_rest_of_its_bytes():
    client = RecordingClient()
    parser = frames.FrameParser(client)
    routed = []
    parser.sinks[1] = lambda *frame: routed.append(frame)
    frame = hmsg(b"a", 1, b"r", b"NATS/1.0\r\nK: v\r\n\r\n", b"payload")

    asyncio.run(parser.parse(frame[:-3]))
    assert routed == [] and bytes(parser.buf) == frame[:-3]
    asyncio.run(parser.parse(frame[-3:]))
    assert routed == [(b"a", b"r", b"NATS/1.0\r\nK: v\r\n\r\n", b"payload")]


def test_an_unknown_operation_is_a_protocol_error_as_in_nats_py():
    parser = frames.FrameParser(RecordingClient())
    with pytest.raises(nats_parser.ProtocolError):
        asyncio.run(parser.parse(b"BOGUS 1 2\r\n"))


HEADER_BLOCKS = [
    b"",
    b"NATS/1.0\r\n\r\n",
    b"NATS/1.0\r\nNats-Msg-Id: evt-1\r\n\r\n",
    b"NATS/1.0\r\nA: 1\r\nB:2\r\nC:\t three \r\n\r\n",
    b"NATS/1.0\r\nA: 1\r\nB: x\r\nA: 2\r\n\r\n",  # repeated: first position, last value
    b"NATS/1.0\r\nBad Name: x\r\nno colon\r\nGood: y\r\n\r\n",
    b"NATS/1.0\r\n\xc3\xa9t\xc3\xa9: x\r\nV: \xff\xfe caf\xc3\xa9\r\n\r\n",
    b"NATS/1.0\r\n: empty name\r\nK: a: b: c\r\n\r\n",
    b"NATS/1.0 404 No Messages\r\n\r\n",
    b"NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 5\r\n\r\n",
    b"NATS/1.0 503\r\n\r\n",
    b"NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 1016\r\nNats-Last-Stream: 1024\r\n\r\n",
]


@pytest.mark.parametrize("block", HEADER_BLOCKS)
def test_headers_parse_as_nats_py_parses_them(block):
    async def nats_py_headers():
        return await NATS()._process_headers(block)

    assert frames.parse_headers(block) == asyncio.run(nats_py_headers())


def test_the_fast_path_is_installed_only_over_an_idle_nats_py_parser():
    client = RecordingClient()
    client._ps = nats_parser.Parser(client)
    client._ps.state = nats_parser.AWAITING_MSG_PAYLOAD  # in the middle of a payload
    assert frames.install(client) is None

    client._ps.state = nats_parser.AWAITING_CONTROL_LINE
    client._ps.buf.extend(b"PI")  # half a control line: taken over
    installed = frames.install(client)
    assert isinstance(installed, frames.FrameParser) and client._ps is installed
    assert bytes(installed.buf) == b"PI"
    assert frames.install(client) is installed  # once per connection

    other = RecordingClient()
    other._ps = object()  # not nats-py's parser: left alone
    assert frames.install(other) is None


def test_the_fast_path_can_be_turned_off_by_the_environment(monkeypatch):
    client = RecordingClient()
    client._ps = nats_parser.Parser(client)
    monkeypatch.setenv(frames.RAW_FRAMES_ENV, "off")

    assert frames.install(client) is None
    assert type(client._ps) is nats_parser.Parser


def test_a_subscription_gets_raw_frames_from_a_real_server(js, unique_name):
    subject = f"{unique_name}.raw"

    async def roundtrip():
        nc = js.nc
        got, slow = [], []

        async def on_message(m):
            slow.append(m)

        sub, fast = await frames.subscribe_frames(
            nc, subject, lambda *frame: got.append(frame), on_message
        )
        await nc.publish(subject, b"one", headers={"Nats-Msg-Id": "m-1"})
        await nc.publish(subject, b"two")
        await nc.flush()
        for _ in range(100):
            if len(got) + len(slow) == 2:
                break
            await asyncio.sleep(0.01)
        await frames.unsubscribe_frames(nc, sub)
        return fast, got, slow

    fast, got, slow = js.run(roundtrip(), what="raw frames")

    assert fast and slow == []
    assert got == [
        (subject.encode(), b"", b"NATS/1.0\r\nNats-Msg-Id: m-1\r\n\r\n", b"one"),
        (subject.encode(), b"", b"", b"two"),
    ]
