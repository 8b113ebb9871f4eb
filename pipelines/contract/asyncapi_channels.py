"""The channels of an AsyncAPI 2.x or 3.x document, and which of them belong to a stream.

A `Channel` is what both major versions say about one channel, in one shape: its id (3.x:
its key; 2.x: its key, which is its address), its address, its parameters and the messages
it carries (2.x: those of its `publish`/`subscribe` operations, `oneOf` included; 3.x: its
`messages`), each message with its traits applied (2.x: a trait's keys win; 3.x: the
message's own keys win; a key is taken whole, not merged deeper).

A channel belongs to the stream when its address, with each `{param}` one token, falls under
one of the stream's subjects (NATS wildcards: `*` one token, a final `>` the rest). A mark
only narrows: `x-jsl-stream: NAME` on the channel, or the older
`bindings.nats.jetstream.stream: NAME` (which the NATS bindings spec does not define, read for
compatibility), names the one stream the channel belongs to. Without the stream's subjects
(a caller that does not know them), the marked channels are the stream's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pipelines.contract.json_schema_document import At
from pipelines.contract.json_schema_reader import SchemaReader

STREAM_MARK = "x-jsl-stream"
_PLACEHOLDER = re.compile(r"^\{([^{}]+)\}$")
_ANY_PLACEHOLDER = re.compile(r"\{[^{}]*\}")
READ_VERSIONS = "2.x (2.0 to 2.6) or 3.x (3.0, 3.1)"


@dataclass(frozen=True)
class Channel:
    """One channel, whichever AsyncAPI version declared it.

    Attributes:
        id: 3.x: the channel's key; 2.x: its key (its address).
        address: the address (None: a 3.x channel without one).
        at: where the channel is in the document.
        mark: the stream its `x-jsl-stream` (or the older NATS binding) names, if any.
        parameters: name -> (the parameter object, where it is).
        messages: (the message with its traits applied, where the message is).
        raw: the channel object as the document has it.
    """

    id: str
    address: str | None
    at: At
    mark: str | None
    parameters: dict[str, tuple[Mapping, At]]
    messages: tuple[tuple[Mapping, At], ...]
    raw: Mapping = field(default_factory=dict, compare=False, repr=False)

    @property
    def tokens(self) -> list[str]:
        """The address's tokens, a `{param}` token as `*`."""
        return [_ANY_PLACEHOLDER.sub("*", t) for t in (self.address or "").split(".")]

    @property
    def subject(self) -> str:
        """The subject filter of the address (`a.{id}.b` -> `a.*.b`)."""
        return ".".join(self.tokens)

    def parameter_tokens(self) -> dict[str, int]:
        """Parameter name -> the index of the subject token that carries it."""
        found = {}
        for index, token in enumerate((self.address or "").split(".")):
            match = _PLACEHOLDER.match(token)
            if match:
                found[match.group(1)] = index
        return found


def major_version(reader: SchemaReader, document: Mapping) -> int:
    """2 or 3, from the document's `asyncapi`.

    Raises:
        ContractError: at `#/asyncapi`, another version or none.
    """
    version = document.get("asyncapi")
    if isinstance(version, str) and re.match(r"^(2\.[0-6]|3\.[01])\.\d+", version):
        return int(version[0])
    raise reader.fail(
        f"expected an AsyncAPI {READ_VERSIONS} document, got asyncapi: {version!r}",
        ("asyncapi",),
    )


def read_channels(reader: SchemaReader, document: Mapping) -> list[Channel]:
    """Every channel of the document, in document order, with its address and mark only
    (`detailed` adds its parameters and messages, for the channels that are read).

    Raises:
        ContractError: no channels, a channel that is not an object or a `$ref` to nothing,
            a 3.x address that is not text.
    """
    version = major_version(reader, document)
    channels = document.get("channels")
    if not isinstance(channels, Mapping) or not channels:
        raise reader.fail("the document has no channels", ("channels",))
    found = []
    for key, channel in channels.items():
        channel, at = reader.resolve(channel, ("channels", key))
        address = str(key) if version == 2 else channel.get("address")
        if address is not None and not isinstance(address, str):
            raise reader.fail(f"an address is text, got {address!r}", (*at, "address"))
        found.append(Channel(str(key), address, at, _mark(reader, channel, at), {}, (), channel))
    return found


def detailed(reader: SchemaReader, channel: Channel, version: int) -> Channel:
    """`channel` with its parameters and its messages (traits applied).

    Raises:
        ContractError: a parameter inside a token (`a.x{id}.b`), a message that is not an
            object, a `$ref` to nothing.
    """
    raw, at = channel.raw, channel.at
    for token in (channel.address or "").split("."):
        if "{" in token and not _PLACEHOLDER.match(token):
            raise reader.fail(
                f"address {channel.address!r}: a parameter must be a whole subject token "
                f"(a.{{id}}.b), not part of one ({token!r})",
                (*at, "address") if version == 3 else at,
            )
    messages = _messages_v2(reader, raw, at) if version == 2 else _messages_v3(reader, raw, at)
    parameters = {}
    for name, parameter in (raw.get("parameters") or {}).items():
        parameters[name] = reader.resolve(parameter, (*at, "parameters", name))
    applied = tuple((_with_traits(reader, m, m_at, version), m_at) for m, m_at in messages)
    return replace(channel, parameters=parameters, messages=applied)


def stream_channels(
    reader: SchemaReader, channels: Sequence[Channel], stream: str, subjects: Sequence[str]
) -> list[Channel]:
    """The channels of `stream`, detailed: under its subjects (when none are given: the marked
    ones). The other channels are not read further: what they hold does not matter.

    Raises:
        ContractError: a channel marked for `stream` whose address is not under its subjects
            or missing, or no channel at all, saying which addresses and marks there are.
    """
    mine = []
    for channel in channels:
        if channel.mark is not None and channel.mark != stream:
            continue
        if not subjects:
            if channel.mark == stream:
                mine.append(_with_address(reader, channel, stream))
            continue
        if channel.address is None or not any(covers(s, channel.subject) for s in subjects):
            if channel.mark == stream:
                raise reader.fail(
                    f"channel {channel.id!r} is marked for stream {stream!r}, but its address "
                    f"{channel.address!r} is not under the stream's subjects "
                    f"({', '.join(subjects)}); add its subject to the stream",
                    channel.at,
                )
            continue
        mine.append(channel)
    if mine:
        version = major_version(reader, reader.document)
        return [detailed(reader, channel, version) for channel in mine]
    marks = sorted({c.mark for c in channels if c.mark is not None})
    marked = f"; channels are marked for streams: {', '.join(marks)}" if marks else ""
    if not subjects:
        raise reader.fail(
            f"no channel is marked for stream {stream!r} ({STREAM_MARK} or "
            f"bindings.nats.jetstream.stream), and the stream's subjects are not given{marked}",
            ("channels",),
        )
    addresses = ", ".join(c.address for c in channels if c.address) or "none"
    raise reader.fail(
        f"no channel of stream {stream!r}: no address falls under its subjects "
        f"({', '.join(subjects)}); the addresses are {addresses}{marked}",
        ("channels",),
    )


def covers(wanted: str, subject: str) -> bool:
    """Whether every subject that `subject` (a filter) matches is matched by `wanted`.

    `covers("a.>", "a.*.b")` and `covers("a.*.b", "a.x.b")` are true; `covers("a.*", "a.>")`
    is false.
    """
    filters, tokens = wanted.split("."), subject.split(".")
    for index, token in enumerate(filters):
        if token == ">":
            return len(tokens) > index
        if index >= len(tokens) or tokens[index] == ">":
            return False
        if token != "*" and token != tokens[index]:
            return False
    return len(filters) == len(tokens)


def _with_address(reader: SchemaReader, channel: Channel, stream: str) -> Channel:
    if not channel.address:
        raise reader.fail(
            f"channel {channel.id!r} of stream {stream!r} needs an address (its subject)",
            (*channel.at, "address"),
        )
    return channel


def _mark(reader: SchemaReader, channel: Mapping, at: At) -> str | None:
    mark = channel.get(STREAM_MARK)
    if mark is not None:
        if not isinstance(mark, str) or not mark:
            raise reader.fail(f"{STREAM_MARK} names a stream, got {mark!r}", (*at, STREAM_MARK))
        return mark
    bindings = channel.get("bindings") or {}
    if isinstance(bindings, Mapping) and "$ref" in bindings:
        bindings, _ = reader.resolve(bindings, (*at, "bindings"))
    nats = bindings.get("nats") if isinstance(bindings, Mapping) else None
    jetstream = nats.get("jetstream") if isinstance(nats, Mapping) else None
    stream = jetstream.get("stream") if isinstance(jetstream, Mapping) else None
    return stream if isinstance(stream, str) else None


def _messages_v3(reader: SchemaReader, channel: Mapping, at: At) -> list[tuple[Mapping, At]]:
    messages = channel.get("messages") or {}
    if not isinstance(messages, Mapping):
        raise reader.fail("messages is a map of message ids to messages", (*at, "messages"))
    return [reader.resolve(m, (*at, "messages", key)) for key, m in messages.items()]


def _messages_v2(reader: SchemaReader, channel: Mapping, at: At) -> list[tuple[Mapping, At]]:
    found: list[tuple[Mapping, At]] = []
    for action in ("publish", "subscribe"):
        if action not in channel:
            continue
        operation, op_at = reader.resolve(channel[action], (*at, action))
        if "message" not in operation:
            continue
        message, message_at = reader.resolve(operation["message"], (*op_at, "message"))
        if "oneOf" in message:
            options = message["oneOf"]
            if not isinstance(options, list):
                raise reader.fail("oneOf lists messages", (*message_at, "oneOf"))
            candidates = [(m, (*message_at, "oneOf", i)) for i, m in enumerate(options)]
        else:
            candidates = [(message, message_at)]
        for candidate, candidate_at in candidates:
            resolved = reader.resolve(candidate, candidate_at)
            if resolved[1] not in [where for _, where in found]:
                found.append(resolved)
    return found


def _with_traits(reader: SchemaReader, message: Mapping, at: At, version: int) -> dict[str, Any]:
    traits = message.get("traits") or []
    if not isinstance(traits, list):
        raise reader.fail("traits is a list of message traits", (*at, "traits"))
    merged: dict[str, Any] = {k: v for k, v in message.items() if k != "traits"}
    for index, trait in enumerate(traits):
        trait, _ = reader.resolve(trait, (*at, "traits", index))
        for key, value in trait.items():
            if version == 2 or key not in merged:
                merged[key] = value
    return merged


def subject_regex(channel: Channel) -> str:
    """A Java regular expression, written without backslashes, that matches the subjects of
    `channel`'s address (for a Spark SQL `RLIKE` in a string literal).

    Raises:
        ValueError: a token has a character this cannot write without a backslash.
    """
    parts = []
    for token in channel.tokens:
        if token == "*":
            parts.append("[^.]+")
        elif token == ">":
            parts.append("[^.]+([.][^.]+)*")
        else:
            parts.append("".join(_literal(c) for c in token))
    return "^" + "[.]".join(parts) + "$"


def _literal(char: str) -> str:
    if char.isalnum() or char in '_-/:@~%#&=,;<!"`':
        return char
    if char in "\\[]^'":
        raise ValueError(f"the subject character {char!r} is not supported in a channel column")
    return f"[{char}]"
