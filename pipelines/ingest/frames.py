"""Raw message frames for one subscription: nats-py's parser with a fast path.

nats-py turns every message into a `Msg` (decoded subject and reply, a headers dict), puts it
on the subscription's queue, and calls the callback from the subscription's own task. A
reader that only copies messages into columns (`pipelines/ingest/range_reader.py`) needs none
of that: without it, a whole read costs 6.3 µs of CPU per message instead of 10.6
(bench/HISTORY.md, runs R7-R10).

`subscribe_frames` subscribes as usual, then routes the subscription's `HMSG`/`MSG` frames to
a plain function, `on_frame(subject, reply, header, payload)` (all `bytes`; `header` is the
raw header block, empty without headers), called synchronously on the client's loop, in
order. Every other frame (PING, INFO, -ERR, other subscriptions' messages) goes to nats-py's
own parser, unchanged.

It works by putting a `FrameParser` in place of the connection's protocol parser
(`Client._ps`, an attribute nats-py reads on every socket read). That is nats-py internals,
so it is done only when the parser is exactly nats-py's and between frames, and not when
`JSL_NATS_RAW_FRAMES=off`; otherwise the subscription delivers `Msg`s to `on_message` as any
callback subscription does. The caller handles both; the fast path is an optimisation, never
a requirement. nats-py is pinned in constraints.txt, and
`tests/pipelines/ingest/test_frames.py` checks the fast path against nats-py's parsing.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.protocol import parser as nats_parser

FrameSink = Callable[[bytes, bytes, bytes, bytes], None]  # subject, reply, header, payload

RAW_FRAMES_ENV = "JSL_NATS_RAW_FRAMES"
_CRLF = b"\r\n"
_MESSAGE_OPS = (b"MSG", b"HMSG")


class FrameParser(nats_parser.Parser):
    """nats-py's protocol parser, handing the message frames of chosen subscriptions to sinks.

    Complete frames of other kinds are passed, one at a time, to an inner nats-py `Parser`,
    so everything else behaves exactly as before.
    """

    def __init__(self, nc: NATS) -> None:
        self._inner = nats_parser.Parser(nc)
        self.sinks: dict[int, FrameSink] = {}  # subscription id -> sink
        super().__init__(nc)

    def reset(self) -> None:  # nats-py calls it on (re)connect
        super().reset()
        self._inner.reset()

    async def parse(self, data: bytes = b"") -> None:
        self.buf.extend(data)
        owner = self.buf  # `reset()` (a reconnect) replaces it
        buf = bytes(owner)  # one copy per socket read; slices of it are the frames' bytes
        size, pos = len(buf), 0
        try:
            while pos < size:
                eol = buf.find(_CRLF, pos)
                if eol < 0:
                    break  # the control line is not complete yet
                args = buf[pos:eol].split()
                end, sink = eol + 2, None  # a control line alone, for nats-py's parser
                if args and args[0] in _MESSAGE_OPS:
                    is_hmsg = args[0] == b"HMSG"
                    try:  # [H]MSG <subject> <sid> [reply] [header bytes] <total bytes>
                        total, sid = int(args[-1]), int(args[2])
                        header = int(args[-2]) if is_hmsg else 0
                    except (ValueError, IndexError):
                        raise nats_parser.ProtocolError("nats: malformed MSG") from None
                    end = eol + 2 + total + 2
                    if end > size:
                        break  # the payload is not complete yet
                    sink = self.sinks.get(sid)
                if sink is None:
                    await self._inner.parse(buf[pos:end])
                    pos = end
                    if self.buf is not owner:
                        return
                    continue
                body = eol + 2
                has_reply = len(args) == (6 if is_hmsg else 5)
                sink(
                    args[1],
                    args[3] if has_reply else b"",
                    buf[body : body + header],
                    buf[body + header : body + total],
                )
                pos = end
        finally:
            if self.buf is owner:
                del owner[:pos]


def install(nc: NATS) -> FrameParser | None:
    """Puts a `FrameParser` in place of the connection's parser; None if that is not safe.

    Call it on the client's loop. It is safe when the current parser is nats-py's own and is
    between frames: the new parser takes over its unparsed bytes and every later socket read.
    Setting the environment variable `JSL_NATS_RAW_FRAMES=off` turns the fast path off (an
    escape hatch, should a nats-py upgrade ever break it).
    """
    if os.environ.get(RAW_FRAMES_ENV, "on").strip().lower() in ("0", "off", "false", "no"):
        return None
    current = getattr(nc, "_ps", None)
    if isinstance(current, FrameParser):
        return current
    if type(current) is not nats_parser.Parser:
        return None
    if current.state != nats_parser.AWAITING_CONTROL_LINE:
        return None  # in the middle of a message's payload
    parser = FrameParser(nc)
    parser.buf = current.buf  # unparsed bytes start at a frame boundary
    nc._ps = parser
    return parser


async def subscribe_frames(
    nc: NATS,
    subject: str,
    on_frame: FrameSink,
    on_message: Callable[[Msg], Awaitable[None]],
) -> tuple[Subscription, bool]:
    """Subscribes to `subject`, routing its frames to `on_frame` when the fast path is on.

    Returns the subscription and whether the fast path is on. With it, every message reaches
    `on_frame`; without it, every message reaches `on_message` as a `Msg`. Both run on the
    client's loop, one message at a time, in delivery order. Ask for messages (a pull
    request, say) only once this returns: one arriving in between would reach `on_message`.
    `unsubscribe_frames` ends it.
    """
    sub = await nc.subscribe(subject, cb=on_message, pending_msgs_limit=-1, pending_bytes_limit=-1)
    parser = install(nc)
    if parser is None:
        return sub, False
    parser.sinks[sub._id] = on_frame
    return sub, True


async def unsubscribe_frames(nc: NATS, sub: Subscription) -> None:
    """Removes the route of `sub` (if any), then unsubscribes."""
    parser = getattr(nc, "_ps", None)
    if isinstance(parser, FrameParser):
        parser.sinks.pop(sub._id, None)
    await sub.unsubscribe()


def parse_headers(block: bytes) -> dict[str, str] | None:
    """The headers of a raw header block, parsed as nats-py parses them; None if there are none.

    `NATS/1.0\\r\\nName: value\\r\\n...\\r\\n`: names are stripped ASCII without inner
    whitespace, values stripped UTF-8 (invalid bytes replaced); a repeated name keeps its
    first position and its last value (nats-py builds a dict). An inline status
    (`NATS/1.0 404 No Messages`) gives `Status` and `Description`, as in nats-py.
    """
    if not block:
        return None
    first, _, rest = block.partition(_CRLF)
    out: dict[str, str] = {}
    if first[8:9] == b" ":  # an inline status line
        status = first[9:12].strip().decode()
        if status.isdigit():
            out["Status"] = status
        description = first[13:]
        if description:
            out["Description"] = description.decode()
    for line in rest.split(_CRLF):
        name, sep, value = line.partition(b":")
        if not sep:
            continue
        key = _NAMES.get(name, _UNSEEN)
        if key is _UNSEEN:
            key = _header_name(name)
            if len(_NAMES) < 1024:  # names repeat; a bound keeps odd traffic from growing it
                _NAMES[name] = key
        if key is not None:
            out[key] = value.strip().decode("utf-8", "replace")
    return out or None


_NAMES: dict[bytes, str | None] = {}  # raw header name -> its key, None if nats-py drops it
_UNSEEN = object()


def _header_name(raw: bytes) -> str | None:
    """A header name as nats-py keys it: stripped ASCII without inner whitespace, else None."""
    try:
        key = raw.strip().decode("ascii")
    except UnicodeDecodeError:
        return None
    return None if len(key.split()) > 1 else key
