"""The contract of one JetStream stream from an AsyncAPI 3.0 document.

The channels read are those bound to the stream, as the seeds' file-trash document and this
project's `docs/asyncapi.yaml` bind them:

    channels:
      filesDeleted:
        address: files.deleted                  # the subject ({param} becomes *)
        messages:
          FileDeletedEvent: {$ref: '#/components/messages/FileDeletedEvent'}
        bindings: {nats: {jetstream: {stream: FILE_EVENTS}}}

Each message of those channels is an event type (named by its discriminator `const`, else
its `name`, else its key), published on the addresses of the channels that carry it; its
payload (a JSON Schema, possibly `{schemaFormat, schema}`) is read by
`pipelines.contract.json_schema_reader`. `$ref`s resolve inside the document; operations
and servers are not read. The envelope's paths, tables and derived columns come from the
caller. The built-in rules' severities, if not `quarantine`, are the document's
`x-jsl-severities` (at its root: `{required_fields_present: quarantine+block}`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pipelines.contract.errors import located
from pipelines.contract.json_schema_document import At
from pipelines.contract.json_schema_reader import NO_ENVELOPE, SchemaReader
from pipelines.contract.model import Contract, DerivedColumn, Envelope
from pipelines.contract.yaml_source import load_document

_JSON_SCHEMA_FORMATS = re.compile(
    r"^application/(schema\+json|schema\+yaml|vnd\.aai\.asyncapi(\+json|\+yaml)?)(;.*)?$"
)
_PARAMETER = re.compile(r"\{[^}]*\}")
# The payload formats read, for the error that names another one.
SCHEMA_FORMAT_HELP = (
    "application/schema+json or application/schema+yaml (with a ;version=... or not), "
    "application/vnd.aai.asyncapi, application/vnd.aai.asyncapi+json or "
    "application/vnd.aai.asyncapi+yaml, or no schemaFormat"
)


def read_asyncapi(
    path: str | Path,
    *,
    stream: str,
    envelope: Envelope = NO_ENVELOPE,
    tables: Mapping[str, str] | None = None,
    derived: Mapping[str, Sequence[DerivedColumn]] | None = None,
) -> Contract:
    """Reads the contract of `stream` from an AsyncAPI 3.0 file (YAML or JSON).

    Args:
        path: the document.
        stream: the JetStream stream whose channels to read.
        envelope: the envelope's JSON paths.
        tables: per event type, its silver table (default `silver/<snake_case name>`).
        derived: per event type, its derived columns.

    Returns:
        The contract.

    Raises:
        ContractError: naming the file, line and JSON pointer of the first problem.
    """
    document = load_document(path)
    return contract_from_asyncapi(
        document.data,
        stream=stream,
        envelope=envelope,
        tables=tables,
        derived=derived,
        source=document.source,
        line_of=document.line_of,
    )


def contract_from_asyncapi(
    document: Mapping[str, Any],
    *,
    stream: str,
    envelope: Envelope = NO_ENVELOPE,
    tables: Mapping[str, str] | None = None,
    derived: Mapping[str, Sequence[DerivedColumn]] | None = None,
    source: str | None = None,
    line_of=None,
) -> Contract:
    """The contract of `stream` from a parsed AsyncAPI 3.0 document.

    Args:
        document: the document.
        stream: the JetStream stream whose channels to read.
        envelope: the envelope's JSON paths.
        tables: per event type, its silver table (default `silver/<snake_case name>`).
        derived: per event type, its derived columns.
        source: the document's file or name in errors.
        line_of: the line of a path in the document, if known.

    Returns:
        The contract.

    Raises:
        ContractError: naming the JSON pointer of the first problem (and the file and line
            when given): not AsyncAPI 3, no channel bound to `stream`, a message without a
            payload, an unsupported schema, ...
    """
    reader = SchemaReader(document, source=source, line_of=line_of)
    if not isinstance(document, Mapping):
        raise reader.fail("an AsyncAPI document is a mapping", ())
    version = document.get("asyncapi")
    if not isinstance(version, str) or not version.startswith("3."):
        raise reader.fail(
            f"expected an AsyncAPI 3.x document, got asyncapi: {version!r}", ("asyncapi",)
        )
    messages = _messages(reader, document, stream)
    derived = derived or {}
    events = []
    for payload, at, name, subjects in messages:
        resolved, resolved_at = reader.resolve(payload, at)
        reader.not_here(resolved, resolved_at, "x-jsl-severities", "at the document's root")
        event = reader.event_type(
            payload, at, name=name, envelope=envelope, tables=tables, subjects=subjects
        )
        if event.name in derived:
            with located(source, ("events", event.name)):
                event = replace(event, derived=tuple(derived[event.name]))
        events.append(event)
    names = [e.name for e in events]
    for index, name in enumerate(names):
        if name in names[:index]:
            raise reader.fail(
                f"two messages of stream {stream!r} are event type {name!r}; "
                "give each message its own discriminator value",
                ("channels",),
            )
    severities = reader.severities(document, ())
    info = document.get("info")
    version = info.get("version") if isinstance(info, Mapping) else None
    with located(source, ()):
        return Contract(
            tuple(events), envelope, severities, version=str(version) if version else None
        )


def _stream_of(reader: SchemaReader, channel: Mapping, at: At) -> str | None:
    bindings = channel.get("bindings") or {}
    if "$ref" in bindings:
        bindings, _ = reader.resolve(bindings, (*at, "bindings"))
    nats = bindings.get("nats") or {}
    jetstream = nats.get("jetstream") or {} if isinstance(nats, Mapping) else {}
    return jetstream.get("stream") if isinstance(jetstream, Mapping) else None


def _messages(reader: SchemaReader, document: Mapping, stream: str) -> list[tuple]:
    """Per message of the stream's channels: (payload, its path, default name, subjects)."""
    channels = document.get("channels")
    if not isinstance(channels, Mapping):
        raise reader.fail("the document has no channels", ("channels",))
    found: dict[At, tuple[Any, At, str, list[str]]] = {}
    streams = []
    for channel_id, channel in channels.items():
        channel, at = reader.resolve(channel, ("channels", channel_id))
        bound = _stream_of(reader, channel, at)
        streams.append(bound)
        if bound != stream:
            continue
        address = channel.get("address")
        if not isinstance(address, str) or not address:
            raise reader.fail(
                f"channel {channel_id!r} of stream {stream!r} needs an address (its subject)",
                (*at, "address"),
            )
        subject = _PARAMETER.sub("*", address)
        messages = channel.get("messages") or {}
        if not messages:
            raise reader.fail(f"channel {channel_id!r} has no messages", (*at, "messages"))
        for key, message in messages.items():
            message, message_at = reader.resolve(message, (*at, "messages", key))
            if message_at not in found:
                payload, payload_at = _payload(reader, message, message_at)
                found[message_at] = (payload, payload_at, message.get("name", key), [])
            if subject not in found[message_at][3]:
                found[message_at][3].append(subject)
    if not found:
        named = sorted({s for s in streams if isinstance(s, str)})
        have = f"its streams: {', '.join(named)}" if named else "none of its channels has one"
        raise reader.fail(
            f"no channel is bound to stream {stream!r} (bindings.nats.jetstream.stream); {have}",
            ("channels",),
        )
    return list(found.values())


def _payload(reader: SchemaReader, message: Mapping, at: At) -> tuple[Any, At]:
    payload = message.get("payload")
    if payload is None:
        raise reader.fail("the message has no payload schema", (*at, "payload"))
    if isinstance(payload, Mapping) and "schemaFormat" in payload:
        schema_format = payload["schemaFormat"]
        if not isinstance(schema_format, str) or not _JSON_SCHEMA_FORMATS.match(schema_format):
            raise reader.fail(
                f"schemaFormat {schema_format!r} is not JSON Schema; the contract reads JSON "
                f"Schema payloads only: use {SCHEMA_FORMAT_HELP}",
                (*at, "payload", "schemaFormat"),
            )
        return payload.get("schema"), (*at, "payload", "schema")
    return payload, (*at, "payload")
