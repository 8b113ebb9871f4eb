"""The contract declared inline in YAML (or as the same dict), as a component's defs.yaml holds it.

    version: 1.4.0                  # optional: your version, recorded on every row
    envelope:                       # optional; every key optional (or: envelope: cloudevents)
      event_type: eventType         # field path of the discriminator
      event_id: eventId             # ... of the event id (dedup key), or header:Nats-Msg-Id
      event_time: timestamp         # ... of the event time
      fields: {<path>: <field>}     # fields every event type has, first in each table
      preset: cloudevents           # instead of the three paths: CloudEvents (docs/envelopes.md)
    events:
      <EventTypeName>:              # the discriminator's value
        table: silver/<name>        # default: silver/<snake_case of the name>
        subjects: [orders.placed]   # required without envelope.event_type
        description: text
        unknown_fields: ignore      # keep (map column unknown_fields) | ignore | reject
        fields: {<path>: <field>}   # JSON path from the message root -> field
        derived: {<column>: <Spark SQL expression> | {expression, type, description}}
    severities:                     # optional: built-in rules' severities (default quarantine)
      required_fields_present: quarantine+block

A field path is a dotted JSON path, `header:<Name>` (a NATS header) or `subject:<index>` (a
token of the subject); under the cloudevents preset JSON paths start in the event's data.
A field is a type (`data.amount: decimal(12,2)`) or a mapping: `type` (default string, or
struct when it has `fields`), `column` (default: snake_case of the path's last key),
`required` (default false), `nullable` (unset by default: an optional field may be JSON
null; true: a required field may be JSON null; false: JSON null on an optional field is
mistyped), `description`, `fields` (of a struct, array<struct> or map<struct>), the
constraints `minimum`/`maximum`/`exclusive_minimum`/`exclusive_maximum` (one range rule),
`multiple_of`, `pattern`, `enum`, `min_length`, `max_length`, `format` (see
`pipelines.contract.formats`), `min_items`, `max_items`, `unique_items`, `min_properties`,
`max_properties` and `not_in_future` (the allowed clock skew, e.g. 5m, or true for none),
and their rules' names and severities: `rule` and `severity` when the field has one
constraint, otherwise `rules: {<kind>: <name> | {name, severity}}` with kind range or the
constraint's key. A
severity is quarantine, warn, block or quarantine+block (the row is quarantined and the
rule's check blocks).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pipelines.contract.constraints import (
    AllowedValues,
    Constraint,
    Format,
    MaxLength,
    NotInFuture,
    Pattern,
    Range,
    parse_duration,
)
from pipelines.contract.datatypes import parse_type
from pipelines.contract.errors import ContractError, PathPart, combined, located
from pipelines.contract.event_types import EnvelopePreset
from pipelines.contract.fields import SourceKind, field_source
from pipelines.contract.model import (
    Contract,
    DerivedColumn,
    Envelope,
    EventType,
    Field,
    snake_case,
)
from pipelines.contract.rules import BUILTIN_RULES
from pipelines.contract.sizes import (
    MaxItems,
    MaxProperties,
    MinItems,
    MinLength,
    MinProperties,
    MultipleOf,
    UniqueItems,
)
from pipelines.contract.yaml_source import Document, load_document

At = tuple[PathPart, ...]
CONTRACT_KEYS = ("envelope", "events", "severities", "version")
ENVELOPE_KEYS = ("event_type", "event_id", "event_time", "fields", "preset")
ENVELOPE_PATHS = ("event_type", "event_id", "event_time")
EVENT_KEYS = ("table", "subjects", "description", "unknown_fields", "fields", "derived")
CONSTRAINT_KEYS = (
    "minimum",
    "maximum",
    "exclusive_minimum",
    "exclusive_maximum",
    "multiple_of",
    "pattern",
    "enum",
    "min_length",
    "max_length",
    "format",
    "min_items",
    "max_items",
    "unique_items",
    "min_properties",
    "max_properties",
)
_BOUNDS = ("minimum", "maximum", "exclusive_minimum", "exclusive_maximum")
FIELD_KEYS = (
    "type",
    "column",
    "required",
    "nullable",
    "description",
    "fields",
    *CONSTRAINT_KEYS,
    "not_in_future",
    "rule",
    "severity",
    "rules",
)
DERIVED_KEYS = ("expression", "type", "description")
RULE_KEYS = ("name", "severity")


def default_table(event_type: str) -> str:
    """The silver table of an event type that names none: `silver/<snake_case(name)>`."""
    return f"silver/{snake_case(event_type)}"


def read_contract(path: str | Path, *, at: At = ()) -> Contract:
    """Reads a contract from a YAML file.

    Args:
        path: the file.
        at: where the contract sits in the file (e.g. `("attributes", "contract")`).

    Returns:
        The contract.

    Raises:
        ContractError: naming the file, the line and the key path of each broken field
            and event type (`errors.combined`).
    """
    return contract_from_document(load_document(path), at=at)


def contract_from_dict(data: Mapping[str, Any], *, source: str | None = None) -> Contract:
    """Builds a contract from its YAML form as a dict.

    Args:
        data: the mapping with `envelope` and `events`.
        source: its name in errors (e.g. the file it came from).

    Returns:
        The contract.

    Raises:
        ContractError: naming the key path of each broken field and event type.
    """
    return contract_from_document(Document(data, source))


def contract_from_document(document: Document, *, at: At = ()) -> Contract:
    """Builds a contract from a parsed document (its lines name errors' lines).

    Args:
        document: the parsed YAML.
        at: where the contract sits in it.

    Returns:
        The contract.

    Raises:
        ContractError: naming the file, the line and the key path of each broken field
            and event type (`errors.combined`).
    """
    return _Reader(document).contract(_value(document.data, at), at)


def read_derived(path: str | Path, *, at: At) -> dict[str, tuple[DerivedColumn, ...]]:
    """Reads per-event-type derived columns (`{event type: {column: expression | {expression,
    type, description}}}`, as under a contract's `derived:`) from a YAML file, for a
    contract read from JSON Schema or AsyncAPI, which have no place for them.

    Args:
        path: the file (e.g. a component's defs.yaml).
        at: where the mapping sits in it (e.g. `("attributes", "derived")`).

    Returns:
        Event type name -> its derived columns, in declaration order.

    Raises:
        ContractError: naming the file, the line and the key path of each broken field
            and event type (`errors.combined`).
    """
    return _derived_of(load_document(path), at)


def derived_from_dict(
    data: Mapping[str, Any], *, source: str | None = None
) -> dict[str, tuple[DerivedColumn, ...]]:
    """`read_derived` for a mapping already in memory (errors name `source` and the path)."""
    return _derived_of(Document({"derived": data}, source), ("derived",))


def _derived_of(document: Document, at: At) -> dict[str, tuple[DerivedColumn, ...]]:
    reader = _Reader(document)
    found = {}
    for event, columns in reader.mapping(_value(document.data, at), at, None).items():
        spec = reader.mapping(columns, (*at, event), None)
        found[event] = tuple(
            reader.derived(column, value, (*at, event, column)) for column, value in spec.items()
        )
    return found


def _value(data: Any, at: At) -> Any:
    for key in at:
        data = data[key] if isinstance(data, Mapping | list) else None
    return data


class _Reader:
    def __init__(self, document: Document) -> None:
        self.problems: list[ContractError] = []  # every field's and event type's, reported at once
        self.document = document

    def at(self, path: At):
        return located(self.document.source, path, line_of=self.document.line_of)

    def fail(self, problem: str, path: At) -> ContractError:
        return ContractError(
            problem,
            source=self.document.source,
            path=path,
            line=self.document.line_of(path),
            absolute=True,
        )

    def mapping(self, value: Any, path: At, allowed: tuple[str, ...] | None) -> Mapping:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.fail(f"expected a mapping, got {type(value).__name__} {value!r}", path)
        for key in value:
            if allowed is not None and key not in allowed:
                raise self.fail(
                    f"unknown key {key!r}; allowed keys here: {', '.join(allowed) or 'none'}",
                    (*path, key),
                )
            if allowed is None and not isinstance(key, str):
                raise self.fail(f"keys here are names, got {key!r}", (*path, key))
        return value

    def contract(self, data: Any, at: At) -> Contract:
        data = self.mapping(data, at, CONTRACT_KEYS)
        envelope, envelope_data = self.envelope(data.get("envelope"), (*at, "envelope"))
        shared = self.fields(envelope_data.get("fields"), (*at, "envelope", "fields"))
        events = self.mapping(data.get("events"), (*at, "events"), None)
        if not events:
            raise self.fail("declare at least one event type under `events`", (*at, "events"))
        event_types = []
        for name, spec in events.items():
            try:
                event = self.event(name, spec, shared, (*at, "events", name))
            except ContractError as error:  # reported with the others below
                self.problems.append(error)
                continue
            if event is not None:
                event_types.append(event)
        if self.problems:
            raise combined(self.problems)
        severities = self.mapping(data.get("severities"), (*at, "severities"), BUILTIN_RULES)
        version = data.get("version")
        if version is not None and not isinstance(version, str | int | float):
            raise self.fail(f"version is a text such as 1.4.0, got {version!r}", (*at, "version"))
        with self.at(at):
            return Contract(
                tuple(event_types),
                envelope,
                dict(severities),
                version=None if version is None else str(version),
            )

    def envelope(self, value: Any, at: At) -> tuple[Envelope, Mapping]:
        named = isinstance(value, str)
        data = self.mapping({"preset": value} if named else value, at, ENVELOPE_KEYS)
        preset = data.get("preset")
        if preset is not None and preset not in tuple(EnvelopePreset):
            choices = ", ".join(p.value for p in EnvelopePreset)
            raise self.fail(
                f"the envelope preset is one of {choices}, got {preset!r}; or give the "
                "envelope's paths (event_type, event_id, event_time)",
                at if named else (*at, "preset"),
            )
        for key in ENVELOPE_PATHS:
            path = data.get(key)
            if path is None:
                continue
            if preset is not None:
                raise self.fail(
                    f"the {preset} preset reads {key} itself (CloudEvents "
                    f"{key.removeprefix('event_')}); remove {key}, or drop the preset and name "
                    "every path",
                    (*at, key),
                )
            with self.at((*at, key)):
                source = field_source(path)
            if source.kind is SourceKind.CLOUDEVENTS:
                raise self.fail(
                    f"{path!r} is read only under the cloudevents preset: write `envelope: "
                    "cloudevents`, or read the header (header:ce-id)",
                    (*at, key),
                )
        with self.at(at[:-1]):
            envelope = Envelope(*(data.get(key) for key in ENVELOPE_PATHS), preset=preset)
        return envelope, data

    def event(self, name: str, spec: Any, shared: tuple[Field, ...], at: At) -> EventType | None:
        """The event type, or None when one of its fields is broken (in `problems`)."""
        spec = self.mapping(spec, at, EVENT_KEYS)
        subjects = spec.get("subjects", ())
        if isinstance(subjects, str):
            subjects = (subjects,)
        if not isinstance(subjects, list | tuple):
            raise self.fail(f"subjects is a list of subjects, got {subjects!r}", (*at, "subjects"))
        known = len(self.problems)
        fields = (*shared, *self.fields(spec.get("fields"), (*at, "fields")))
        if len(self.problems) > known:
            return None
        derived = [
            self.derived(column, value, (*at, "derived", column))
            for column, value in self.mapping(spec.get("derived"), (*at, "derived"), None).items()
        ]
        with self.at(at):
            return EventType(
                name=name,
                table=spec.get("table", default_table(name)),
                fields=fields,
                subjects=tuple(subjects),
                derived=tuple(derived),
                unknown_fields=spec.get("unknown_fields", "ignore"),
                description=spec.get("description"),
            )

    def fields(self, value: Any, at: At) -> tuple[Field, ...]:
        """The fields that read; each broken one's error goes to `problems`."""
        found = []
        for path, spec in self.mapping(value, at, None).items():
            try:
                found.append(self.field(path, spec, (*at, path)))
            except ContractError as error:
                self.problems.append(error)
        return tuple(found)

    def field(self, path: str, spec: Any, at: At) -> Field:
        if spec is None or isinstance(spec, str):
            spec = {"type": spec or "string"}
        cut = _cut_type(spec)
        if cut is not None:
            raise self.fail(
                f"type {spec['type']!r} is cut at a comma: in a flow mapping ({{...}}) YAML "
                f"splits an unquoted type there; quote it: {cut}",
                (*at, "type"),
            )
        spec = self.mapping(spec, at, FIELD_KEYS)
        nested = self.fields(spec["fields"], (*at, "fields")) if "fields" in spec else ()
        with self.at((*at, "type")):
            field_type = parse_type(
                spec.get("type", "struct" if nested else "string"), fields=nested
            )
        constraints = self.constraints(spec, at)
        with self.at(at):
            return Field(
                path=path,
                type=field_type,
                column=spec.get("column", ""),
                required=spec.get("required", False),
                description=spec.get("description"),
                constraints=constraints,
                nullable=spec.get("nullable"),
            )

    def constraints(self, spec: Mapping, at: At) -> tuple[Constraint, ...]:
        found: list[tuple[type[Constraint], dict[str, Any]]] = []
        if any(key in spec for key in _BOUNDS):
            found.append((Range, {key: spec.get(key) for key in _BOUNDS}))
        simple = {
            "multiple_of": (MultipleOf, "factor"),
            "pattern": (Pattern, "regex"),
            "enum": (AllowedValues, "values"),
            "min_length": (MinLength, "length"),
            "max_length": (MaxLength, "length"),
            "format": (Format, "format"),
            "min_items": (MinItems, "count"),
            "max_items": (MaxItems, "count"),
            "min_properties": (MinProperties, "count"),
            "max_properties": (MaxProperties, "count"),
        }
        for key, (kind, argument) in simple.items():
            if key in spec:
                found.append((kind, {argument: spec[key]}))
        if spec.get("unique_items") not in (None, False, True):
            raise self.fail("unique_items is true or false", (*at, "unique_items"))
        if spec.get("unique_items"):
            found.append((UniqueItems, {}))
        if "not_in_future" in spec:
            skew = spec["not_in_future"]
            with self.at((*at, "not_in_future")):
                skew = parse_duration(0 if skew is True else skew)
            found.append((NotInFuture, {"skew": skew}))
        names = self.rule_names(spec, [kind.kind for kind, _ in found], at)
        result = []
        for kind, arguments in found:
            with self.at(at):
                result.append(kind(**arguments, **names.get(kind.kind, {})))
        return tuple(result)

    def rule_names(self, spec: Mapping, kinds: list[str], at: At) -> dict[str, dict[str, Any]]:
        if "rules" in spec and ("rule" in spec or "severity" in spec):
            raise self.fail("use either `rule`/`severity` or `rules`, not both", (*at, "rules"))
        add = f"add a constraint ({', '.join((*CONSTRAINT_KEYS, 'not_in_future'))})"
        if "rule" in spec or "severity" in spec:
            if len(kinds) != 1:
                key = "rule" if "rule" in spec else "severity"
                fix = (
                    f"{add} or remove `{key}`"
                    if not kinds
                    else "use `rules: {<kind>: {name: ..., severity: ...}}` instead"
                )
                raise self.fail(
                    f"`{key}` names the rule of a field's only constraint, and this field has "
                    f"{len(kinds)} ({', '.join(kinds) or 'none'}); {fix}",
                    (*at, key),
                )
            return {kinds[0]: _present(rule=spec.get("rule"), severity=spec.get("severity"))}
        if spec.get("rules") and not kinds:
            raise self.fail(
                f"`rules` names the rules of the field's constraints, and this field has none; "
                f"{add} or remove `rules`",
                (*at, "rules"),
            )
        names = {}
        for kind, value in self.mapping(spec.get("rules"), (*at, "rules"), tuple(kinds)).items():
            if isinstance(value, str):
                value = {"name": value}
            value = self.mapping(value, (*at, "rules", kind), RULE_KEYS)
            names[kind] = _present(rule=value.get("name"), severity=value.get("severity"))
        return names

    def derived(self, column: str, spec: Any, at: At) -> DerivedColumn:
        if isinstance(spec, str):
            spec = {"expression": spec}
        spec = self.mapping(spec, at, DERIVED_KEYS)
        derived_type = None
        if spec.get("type") is not None:
            with self.at((*at, "type")):
                derived_type = parse_type(spec["type"])
        with self.at(at):
            return DerivedColumn(
                column, spec.get("expression"), derived_type, spec.get("description")
            )


def _cut_type(spec: Any) -> str | None:
    """How to write a field's type that YAML split at a comma, else None (not split).

    In a flow mapping, `{type: decimal(12,2), required: true}` reads as type `decimal(12` and
    a key `2)` without a value: the type's brackets do not close. The whole type is the type
    and the value-less unknown keys after it, joined again: `type: "decimal(12,2)"`.
    """
    declared = spec.get("type") if isinstance(spec, Mapping) else None
    if not isinstance(declared, str) or declared.count("(") + declared.count("<") <= (
        declared.count(")") + declared.count(">")
    ):
        return None
    rest = [key for key, value in spec.items() if key not in FIELD_KEYS and value is None]
    if not rest:  # `{path: decimal(12,2)}`: the rest is a key of the fields' mapping
        return f'"{declared},...", the whole type in quotes'
    return f'type: "{",".join([declared, *map(str, rest)])}"'


def _present(**values: Any) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}
