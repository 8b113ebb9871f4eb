"""The columns an AsyncAPI message has beyond its payload: channel parameters, headers, channel.

- A channel parameter (`{streetlightId}` in `lights.{streetlightId}.on`) is the field
  `subject:<index>` (the subject's token at that 0-based index), column the snake_case of its
  name (or `x-jsl-column`), required. Its type and rules: AsyncAPI 2.x reads its `schema` as
  any property (`type: integer` is a long column, `enum`/`pattern`/... are rules); 3.x
  parameters are text, with their `enum` a rule (`x-jsl-type`, `x-jsl-column`, `x-jsl-rule`
  on the parameter work as on a property). A message on several channels needs each of its
  parameters at the same token on all of them; otherwise the read fails, naming both.
- A property of the message's `headers` schema is the field `header:<Name>` (the NATS
  header's value), column the snake_case of its name (or `x-jsl-column`), typed and with rules
  as a payload property (the text of the header is cast), required if the schema says so.
  Headers are text: an object or array header fails (`Field` checks it). Under the
  `cloudevents` envelope, the `ce-*` headers (binary mode's attributes) are the preset's
  columns, not more.
- A message on more than one channel gets the derived column `channel`: the id of the channel
  (3.x: its key; 2.x: its address) whose address the row's subject matches.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from pipelines.contract.asyncapi_channels import Channel, subject_regex
from pipelines.contract.datatypes import FieldType, TypeKind
from pipelines.contract.event_types import EnvelopePreset
from pipelines.contract.json_schema_document import At
from pipelines.contract.json_schema_reader import SchemaReader
from pipelines.contract.model import DerivedColumn, Envelope, Field, snake_case

CHANNEL_COLUMN = "channel"
_PARAMETER_KEYS = ("enum", "description", "x-jsl-type", "x-jsl-column", "x-jsl-rule")


def parameter_fields(
    reader: SchemaReader, channels: Sequence[Channel], version: int, message: str
) -> list[Field]:
    """One `subject:<index>` field per parameter of the message's channels.

    Raises:
        ContractError: a parameter at different tokens (or missing) across the channels.
    """
    first = channels[0]
    positions = first.parameter_tokens()
    for other in channels[1:]:
        theirs = other.parameter_tokens()
        for name in sorted(set(positions) | set(theirs)):
            if positions.get(name) != theirs.get(name):
                raise reader.fail(
                    f"message {message!r} is on channels whose parameter {name!r} differs: "
                    f"{_token(first, positions.get(name))}, {_token(other, theirs.get(name))} "
                    f"({first.address!r}, {other.address!r}); a parameter column reads one "
                    "subject token: declare a message per address layout",
                    other.at,
                )
    fields = []
    for name, index in positions.items():
        declared, at = first.parameters.get(name, ({}, (*first.at, "parameters", name)))
        schema, schema_at = _parameter_schema(reader, declared, at, version)
        found = reader.field(schema, schema_at, f"subject:{index}", True)
        column = schema.get("x-jsl-column") or declared.get("x-jsl-column") or snake_case(name)
        with reader.at(at):
            fields.append(replace(found, column=column))
    return fields


def header_fields(
    reader: SchemaReader, message: Mapping, at: At, envelope: Envelope
) -> list[Field]:
    """One `header:<Name>` field per property of the message's `headers` schema.

    Raises:
        ContractError: a header that is an object or an array, or a schema that is not one.
    """
    if message.get("headers") is None:
        return []
    headers, headers_at = reader.resolve(message["headers"], (*at, "headers"))
    if "schemaFormat" in headers:  # 3.x: a multi-format schema object
        headers, headers_at = reader.resolve(headers.get("schema"), (*headers_at, "schema"))
    reader.check_keywords(headers, headers_at)
    if not reader.is_object(headers):
        raise reader.fail("the headers schema is an object with properties", headers_at)
    fields = []
    for name, prop, prop_at, required in reader.properties(headers, headers_at):
        prop, prop_at = reader.resolve(prop, prop_at)
        if envelope.preset is EnvelopePreset.CLOUDEVENTS and name.lower().startswith("ce-"):
            continue  # a CloudEvents attribute in binary mode: the preset's column has it
        path = f"header:{name}"
        found = reader.field(  # a scalar: Field refuses a struct, array or map from a header
            prop, prop_at, path, required, discriminator=path == envelope.event_type
        )
        with reader.at(prop_at):
            fields.append(replace(found, column=prop.get("x-jsl-column") or snake_case(name)))
    return fields


def channel_column(channels: Sequence[Channel]) -> DerivedColumn:
    """The derived column `channel`: which of `channels` the row's subject is on."""
    cases = " ".join(
        f"WHEN subject RLIKE '{subject_regex(c)}' THEN '{c.id.replace(chr(39), '')}'"
        for c in channels
    )
    return DerivedColumn(
        CHANNEL_COLUMN,
        f"CASE {cases} END",
        FieldType(TypeKind.STRING),
        "The AsyncAPI channel the message was published on (from its subject).",
    )


def _token(channel: Channel, index: int | None) -> str:
    if index is None:
        return f"not in channel {channel.id!r}"
    return f"token {index} of channel {channel.id!r}"


def _parameter_schema(
    reader: SchemaReader, declared: Mapping, at: At, version: int
) -> tuple[Mapping, At]:
    if version == 2:
        if declared.get("schema") is None:
            return {"type": "string", "description": declared.get("description")}, at
        schema, schema_at = reader.resolve(declared["schema"], (*at, "schema"))
        if "description" not in schema and declared.get("description"):
            schema = {**schema, "description": declared["description"]}
        return schema, schema_at
    schema = {"type": "string", **{k: declared[k] for k in _PARAMETER_KEYS if k in declared}}
    return schema, at
