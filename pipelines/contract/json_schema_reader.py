"""Event types from JSON Schema (draft 2020-12; draft-07 reads the same), one schema per message.

    JSON Schema                                contract
    type: string                               string
    type: string, format: date-time            timestamp(iso8601)
    type: string, format: date                 date
    type: string, format: uuid | email         string + format constraint
    type: integer (format: int64)              long
    type: integer, format: int32               integer
    type: number                               double
    type: boolean                              boolean
    type: [T, "null"]                          T (required or not comes from `required`)
    nested type: object with properties        flattened: data.fileSize -> column file_size
    type: object, additionalProperties: S      map<type of S> (an object with no properties)
    type: array, items: S                      array<type of S> (objects: array<struct>)
    required: [...]                            required (a nested field: if its parents are)
    additionalProperties: false                unknown fields: reject
    description                                the column's description
    minimum and/or maximum                     one range constraint
    pattern, enum, maxLength                   pattern, enum, max_length constraints
    const on the discriminator                 the event type's name
    const elsewhere                            enum of one value
    $ref: "#/..."                              resolved in the same document
    x-jsl-type: decimal(12,2)                  overrides the type (any contract type);
                                               struct keeps a nested object as one column
    x-jsl-column: name                         the column's name
    x-jsl-rule, x-jsl-severity                 the rule's name and severity: text for the
                                               only constraint, or {<kind>: value}
    x-jsl-not-in-future: 5m                    not_in_future constraint with that skew
    x-jsl-unknown-fields: keep (at the root)   unknown fields: keep, ignore or reject
    x-jsl-severities: {rule: sev} (at the root) built-in rules' severities (quarantine or
                                               quarantine+block), as a contract's severities:

Any other keyword (`oneOf`, `anyOf`, `allOf`, `not`, `if`/`then`/`else`, `patternProperties`,
`dependentSchemas`, `exclusiveMinimum`, `minLength`, a `$ref` to another document, an
unknown `format`, ...) fails with its schema path; annotations (`title`, `examples`,
`default`, `$comment`, `x-...`) are ignored. The envelope's paths, tables, subjects and
derived columns are not in a schema: the caller supplies them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pipelines.contract.constraints import Severity
from pipelines.contract.errors import located
from pipelines.contract.json_schema_document import At
from pipelines.contract.json_schema_fields import SchemaFields
from pipelines.contract.model import (
    Contract,
    DerivedColumn,
    Envelope,
    EventType,
    Field,
    UnknownFields,
    checked_severities,
    snake_case,
)
from pipelines.contract.yaml_source import load_document

NO_ENVELOPE = Envelope()


class SchemaReader(SchemaFields):
    """Reads message payload schemas of one document into event types.

    Args:
        document: the whole document (a JSON Schema, or an AsyncAPI document).
        source: its file or name in errors.
        line_of: the line of a path in the document, if known.
    """

    def event_type(
        self,
        schema: Any,
        at: At,
        *,
        name: str | None,
        envelope: Envelope,
        tables: Mapping[str, str] | None = None,
        subjects: Sequence[str] = (),
        derived: Sequence[DerivedColumn] = (),
    ) -> EventType:
        """The event type a message's payload schema describes (see the module docstring)."""
        schema, at = self.resolve(schema, at)
        self.check_keywords(schema, at)
        policies: list[tuple[bool, At]] = []
        fields = self.flatten(schema, at, "", True, envelope, policies, {})
        if envelope.event_type is not None:
            name = self.discriminator(schema, at, envelope.event_type)
        if name is None:
            raise self.fail(
                "the event type needs a name: without envelope.event_type, give "
                "one (the message's name or the schema's title)",
                at,
            )
        unknown = schema.get("x-jsl-unknown-fields")
        if unknown is None:
            if len({strict for strict, _ in policies}) > 1:
                where = next(where for strict, where in policies if strict)
                raise self.fail(
                    "additionalProperties: false here but not on every object of "
                    "the message; the unknown-field policy is per event type: set it "
                    "on all, or x-jsl-unknown-fields at the root",
                    where,
                )
            unknown = UnknownFields.REJECT if policies[0][0] else UnknownFields.IGNORE
        with self.at(at):
            table = (tables or {}).get(name) or f"silver/{snake_case(name)}"
            return EventType(
                name=name,
                table=table,
                fields=tuple(fields),
                subjects=tuple(subjects),
                derived=tuple(derived),
                unknown_fields=unknown,
                description=schema.get("description"),
            )

    def severities(self, schema: Any, at: At) -> dict[str, Severity]:
        """The built-in rules' severities under `x-jsl-severities` of the mapping at `at`."""
        given = schema.get("x-jsl-severities") if isinstance(schema, Mapping) else None
        if given is None:
            return {}
        if not isinstance(given, Mapping):
            raise self.fail(
                "x-jsl-severities maps built-in rules to quarantine or quarantine+block, "
                f"got {given!r}",
                (*at, "x-jsl-severities"),
            )
        with self.at(at):
            return checked_severities(given)

    def not_here(self, schema: Any, at: At, keyword: str, where: str) -> None:
        """Fails when `schema` has `keyword`, which is read only `where`."""
        if isinstance(schema, Mapping) and keyword in schema:
            raise self.fail(f"{keyword} is read only {where}; move it there", (*at, keyword))

    def discriminator(self, schema: Mapping, at: At, path: str) -> str:
        for key in path.split("."):
            schema, at = self.resolve(
                schema.get("properties", {}).get(key, {}), (*at, "properties", key)
            )
        value, values = schema.get("const"), schema.get("enum")
        if value is None and isinstance(values, list) and len(values) == 1:
            value = values[0]
        if not isinstance(value, str):
            raise self.fail(
                f"the discriminator {path} needs `const: <EventTypeName>` to tell "
                "which event type this schema is",
                at,
            )
        return value

    def flatten(
        self,
        schema: Mapping,
        at: At,
        prefix: str,
        required: bool,
        envelope: Envelope,
        policies: list,
        columns: dict[str, At],
    ) -> list[Field]:
        """The fields of an object's properties; nested objects flatten into more fields."""
        policies.append((schema.get("additionalProperties") is False, at))
        fields = []
        for key, prop, prop_at, is_required in self.properties(schema, at):
            prop, prop_at = self.resolve(prop, prop_at)
            self.check_keywords(prop, prop_at)
            self.not_here(prop, prop_at, "x-jsl-severities", "at the root of the document")
            path = prefix + key
            if self.is_object(prop) and "x-jsl-type" not in prop and "properties" in prop:
                if "x-jsl-column" in prop:
                    raise self.fail(
                        "x-jsl-column on an object that is flattened into columns; "
                        "set it on its properties, or add x-jsl-type: struct",
                        (*prop_at, "x-jsl-column"),
                    )
                fields += self.flatten(
                    prop, prop_at, f"{path}.", required and is_required, envelope, policies, columns
                )
                continue
            found = self.field(
                prop,
                prop_at,
                path,
                required and is_required,
                discriminator=path == envelope.event_type,
            )
            if found.column.lower() in columns:
                other = columns[found.column.lower()]
                raise self.fail(
                    f"two properties land in column {found.column!r}: this one and "
                    f"#/{'/'.join(map(str, other))}; set x-jsl-column on one",
                    prop_at,
                )
            columns[found.column.lower()] = prop_at
            fields.append(found)
        return fields


def contract_from_json_schemas(
    schemas: Mapping[str, Mapping[str, Any]],
    *,
    envelope: Envelope = NO_ENVELOPE,
    tables: Mapping[str, str] | None = None,
    subjects: Mapping[str, Sequence[str]] | None = None,
    derived: Mapping[str, Sequence[DerivedColumn]] | None = None,
    source: str | None = None,
) -> Contract:
    """A contract from one JSON Schema per message type.

    Args:
        schemas: per name (the event type's name when there is no discriminator), the
            payload's schema.
        envelope: the envelope's JSON paths.
        tables: per event type, its silver table (default `silver/<snake_case name>`).
        subjects: per event type, its subjects.
        derived: per event type, its derived columns.
        source: the schemas' name in errors (each schema's is `<source>[<name>]`).

    Returns:
        The contract.

    Raises:
        ContractError: naming the schema path of the first problem.
    """
    readers = [
        (SchemaReader(schema, source=f"{source or 'schemas'}[{name}]"), schema, name)
        for name, schema in schemas.items()
    ]
    return _contract(readers, envelope, tables, subjects, derived, source)


def read_json_schemas(
    paths: Sequence[str | Path],
    *,
    envelope: Envelope = NO_ENVELOPE,
    tables: Mapping[str, str] | None = None,
    subjects: Mapping[str, Sequence[str]] | None = None,
    derived: Mapping[str, Sequence[DerivedColumn]] | None = None,
) -> Contract:
    """`contract_from_json_schemas` of JSON or YAML files, each named by its file name's stem.

    Raises:
        ContractError: naming the file, line and schema path of the first problem.
    """
    readers = []
    for path in paths:
        doc = load_document(path)
        reader = SchemaReader(doc.data, source=doc.source, line_of=doc.line_of)
        readers.append((reader, doc.data, Path(path).name.split(".")[0]))
    return _contract(readers, envelope, tables, subjects, derived, None)


def _contract(readers, envelope, tables, subjects, derived, source) -> Contract:
    subjects, derived = subjects or {}, derived or {}
    events, severities, ids = [], {}, []
    for reader, schema, name in readers:
        if isinstance(schema, Mapping) and isinstance(schema.get("$id"), str):
            ids.append(schema["$id"])
        for rule, severity in reader.severities(schema, ()).items():
            if severities.setdefault(rule, severity) is not severity:
                raise reader.fail(
                    f"{rule} is {severity.value} here but {severities[rule].value} in another "
                    "schema; a built-in rule has one severity per contract",
                    ("x-jsl-severities", rule),
                )
        event = reader.event_type(schema, (), name=name, envelope=envelope, tables=tables)
        extra = {
            "subjects": tuple(subjects.get(event.name, ())),
            "derived": tuple(derived.get(event.name, ())),
        }
        with located(source, ("events", event.name)):
            events.append(replace(event, **{k: v for k, v in extra.items() if v}))
    with located(source, ()):
        return Contract(tuple(events), envelope, severities, version=" ".join(ids) or None)
