"""The contract of one JetStream stream from an AsyncAPI 2.x (2.0 to 2.6) or 3.x (3.0, 3.1)
document, read as published: no binding, no extension needed.

The stream's channels are those whose addresses (3.x `address`, 2.x the channel's key; a
`{param}` is one token) fall under the stream's subjects, which the caller knows (the
component's `stream.subjects`); other protocols' bindings and the servers are ignored. A mark
only narrows: `x-jsl-stream: ORDERS` on a channel (or, as older documents of this project
wrote it, `bindings.nats.jetstream.stream`, which the NATS bindings spec does not define) says
the channel is that stream's only. Without the subjects, the marked channels are read
(`pipelines.contract.asyncapi_channels`):

    channels:
      lightingMeasured:
        address: smartylighting.streetlights.1.0.event.{streetlightId}.lighting.measured
        messages:
          lightMeasured: {$ref: '#/components/messages/lightMeasured'}
        parameters:
          streetlightId: {$ref: '#/components/parameters/streetlightId'}

Each message of those channels (2.x: of their `publish`/`subscribe` operations, `oneOf`
included; message traits applied) is an event type (a payload whose top-level `oneOf` of
object schemas is told apart by a `const`: one per schema), named by its discriminator
`const` (a header discriminator, `header:<Name>` or CloudEvents' type: the `const` of that
header in the message's `headers` schema), else its `name`, else 2.x `messageId`, else its
key, published on the subjects of its channels (`{param}` as `*`). Its payload (a JSON
Schema, possibly 3.x `{schemaFormat, schema}` or 2.x `schemaFormat` on the message) is read by
`pipelines.contract.json_schema_reader`. Beyond the payload
(`pipelines.contract.asyncapi_columns`): each channel parameter is a typed column read from
its subject token (`subject:<index>`), each property of the message's `headers` schema a
column read from the NATS header (`header:<Name>`), both with their schemas' rules, and a
message on several channels has a derived column `channel` naming the channel. `$ref`s
resolve inside the document; a YAML document is read as YAML 1.2 (`on` is text). The
envelope's paths, tables and derived columns come from the caller. The built-in rules'
severities, if not `quarantine`, are the document's `x-jsl-severities` (at its root:
`{required_fields_present: quarantine+block}`). docs/asyncapi.md has the whole mapping.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pipelines.contract.asyncapi_channels import (
    Channel,
    major_version,
    read_channels,
    stream_channels,
)
from pipelines.contract.asyncapi_columns import channel_column, header_fields, parameter_fields
from pipelines.contract.errors import located
from pipelines.contract.json_schema_document import At
from pipelines.contract.json_schema_reader import NO_ENVELOPE, STRUCT_LAYOUT, Layout, SchemaReader
from pipelines.contract.model import Contract, DerivedColumn, Envelope, EventType
from pipelines.contract.yaml_source import load_document

_JSON_SCHEMA_FORMATS = re.compile(
    r"^application/(schema\+json|schema\+yaml|vnd\.aai\.asyncapi(\+json|\+yaml)?)(;.*)?$"
)
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
    subjects: Sequence[str] = (),
    envelope: Envelope = NO_ENVELOPE,
    tables: Mapping[str, str] | None = None,
    derived: Mapping[str, Sequence[DerivedColumn]] | None = None,
    layout: Layout = STRUCT_LAYOUT,
) -> Contract:
    """Reads the contract of `stream` from an AsyncAPI 2.x or 3.x file (YAML 1.2 or JSON).

    Args:
        path: the document.
        stream: the JetStream stream whose channels to read.
        subjects: the stream's subjects: the channels under them are its (empty: the
            channels marked for `stream`).
        envelope: the envelope's paths.
        tables: per event type, its silver table (default `silver/<snake_case name>`).
        derived: per event type, its derived columns.
        layout: which nested objects are flattened (default: none, each is a struct).

    Returns:
        The contract.

    Raises:
        ContractError: naming the file, line and JSON pointer of the first problem.
    """
    document = load_document(path, yaml12=True)
    return contract_from_asyncapi(
        document.data,
        stream=stream,
        subjects=subjects,
        envelope=envelope,
        tables=tables,
        derived=derived,
        layout=layout,
        source=document.source,
        line_of=document.line_of,
    )


def contract_from_asyncapi(
    document: Mapping[str, Any],
    *,
    stream: str,
    subjects: Sequence[str] = (),
    envelope: Envelope = NO_ENVELOPE,
    tables: Mapping[str, str] | None = None,
    derived: Mapping[str, Sequence[DerivedColumn]] | None = None,
    source: str | None = None,
    line_of=None,
    layout: Layout = STRUCT_LAYOUT,
) -> Contract:
    """The contract of `stream` from a parsed AsyncAPI 2.x or 3.x document.

    Args:
        document: the document.
        stream: the JetStream stream whose channels to read.
        subjects: the stream's subjects: the channels under them are its (empty: the
            channels marked for `stream`).
        envelope: the envelope's paths.
        tables: per event type, its silver table (default `silver/<snake_case name>`).
        derived: per event type, its derived columns.
        layout: which nested objects are flattened (default: none, each is a struct).
        source: the document's file or name in errors.
        line_of: the line of a path in the document, if known.

    Returns:
        The contract.

    Raises:
        TypeError: `subjects` is one text, not a list.
        ContractError: naming the JSON pointer of the first problem (and the file and line
            when given): not AsyncAPI 2.x or 3.x, no channel of `stream`, a message without
            a payload, an unsupported schema, a parameter at different tokens, ...
    """
    if isinstance(subjects, str):
        raise TypeError(f"subjects is a list of subjects, got the text {subjects!r}")
    reader = SchemaReader(document, source=source, line_of=line_of)
    if not isinstance(document, Mapping):
        raise reader.fail("an AsyncAPI document is a mapping", ())
    version = major_version(reader, document)
    channels = stream_channels(reader, read_channels(reader, document), stream, tuple(subjects))
    derived = derived or {}
    events = []
    for message, at, on in _messages(channels):
        for event in _event_types(reader, message, at, on, version, envelope, tables, layout):
            if event.name in derived:
                with located(source, ("events", event.name)):
                    event = replace(event, derived=(*event.derived, *derived[event.name]))
            events.append(event)
    reader.log_unknown_formats()
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
    label = info.get("version") if isinstance(info, Mapping) else None
    with located(source, ()):
        return Contract(tuple(events), envelope, severities, version=str(label) if label else None)


def _messages(channels: Sequence[Channel]) -> list[tuple[Mapping, At, list[Channel]]]:
    """Each message of the channels once (by where it is), with the channels that carry it."""
    found: dict[At, tuple[Mapping, At, list[Channel]]] = {}
    for channel in channels:
        for message, at in channel.messages:
            found.setdefault(at, (message, at, []))[2].append(channel)
    return list(found.values())


def _event_types(
    reader: SchemaReader,
    message: Mapping,
    at: At,
    channels: list[Channel],
    version: int,
    envelope: Envelope,
    tables: Mapping[str, str] | None,
    layout: Layout,
) -> list[EventType]:
    """The message's event type (or one per schema of a payload's discriminated `oneOf`)."""
    payload, payload_at = _payload(reader, message, at, version)
    resolved, resolved_at = reader.resolve(payload, payload_at)
    reader.not_here(resolved, resolved_at, "x-jsl-severities", "at the document's root")
    name = message.get("name") or message.get("messageId") or str(at[-1])
    inner = envelope
    if envelope.type_outside_payload:
        # The discriminator is a header (or CloudEvents' type): its const in the message's
        # headers schema names the event type, else the message's name does.
        name = _header_const(reader, message, at, envelope.event_type) or name
        inner = NO_ENVELOPE
    subjects = list(dict.fromkeys(c.subject for c in channels))
    extra = [
        *parameter_fields(reader, channels, version, name),
        *header_fields(reader, message, at, envelope),
    ]
    more = (channel_column(channels),) if len(channels) > 1 else ()
    events = []
    for schema, schema_at, variant in reader.variants(payload, payload_at, name, inner):
        event = reader.event_type(
            schema,
            schema_at,
            name=variant,
            envelope=inner,
            tables=tables,
            subjects=subjects,
            layout=layout,
        )
        with reader.at(at):
            events.append(
                replace(event, fields=(*event.fields, *extra), derived=(*more, *event.derived))
            )
    return events


def _header_const(reader: SchemaReader, message: Mapping, at: At, path: str) -> str | None:
    """The `const` (or one-value `enum`) of the header `path` names in the headers schema."""
    if message.get("headers") is None:
        return None
    name = "ce-type" if path == "cloudevents:type" else path.partition(":")[2]
    headers, headers_at = reader.resolve(message["headers"], (*at, "headers"))
    for key, prop, prop_at, _ in reader.properties(headers, headers_at):
        if key.lower() == name.lower():
            prop, _ = reader.resolve(prop, prop_at)
            values = prop.get("enum")
            value = values[0] if isinstance(values, list) and len(values) == 1 else None
            value = prop.get("const", value)
            return value if isinstance(value, str) else None
    return None


def _payload(reader: SchemaReader, message: Mapping, at: At, version: int) -> tuple[Any, At]:
    payload = message.get("payload")
    if payload is None:
        raise reader.fail("the message has no payload schema", (*at, "payload"))
    if version == 2 and "schemaFormat" in message:
        _check_format(reader, message["schemaFormat"], (*at, "schemaFormat"))
        return payload, (*at, "payload")
    if isinstance(payload, Mapping) and "schemaFormat" in payload:
        _check_format(reader, payload["schemaFormat"], (*at, "payload", "schemaFormat"))
        return payload.get("schema"), (*at, "payload", "schema")
    return payload, (*at, "payload")


def _check_format(reader: SchemaReader, schema_format: Any, at: At) -> None:
    if not isinstance(schema_format, str) or not _JSON_SCHEMA_FORMATS.match(schema_format):
        raise reader.fail(
            f"schemaFormat {schema_format!r} is not JSON Schema; the contract reads JSON "
            f"Schema payloads only: use {SCHEMA_FORMAT_HELP}",
            at,
        )
