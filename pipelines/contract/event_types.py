"""A stream's kinds of message: `EventType` (one per silver table), `Envelope`, `UnknownFields`.

An `EventType` is one kind of message: the silver table it lands in, the subjects it is
published on, its `Field`s in column order, its derived columns and what to do with fields it
does not declare. The `Envelope` says where every message of the stream keeps its common facts
(event type, event id, event time): payload paths, headers or subject tokens, or the
`cloudevents` preset (docs/envelopes.md). An `EventType` checks itself when built and raises
`ContractError` with a path relative to itself; the `Contract` (`pipelines.contract.model`)
checks the envelope against every event type, and its rules are derived from both
(`pipelines.contract.rules`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from pipelines.contract.datatypes import FieldType, TypeKind, stable_repr
from pipelines.contract.errors import ContractError, PathPart
from pipelines.contract.fields import (
    RESERVED_COLUMNS,
    UNKNOWN_FIELDS_COLUMN,
    DerivedColumn,
    Field,
    SourceKind,
    check_unique_columns,
    field_source,
)
from pipelines.contract.schema_check import SchemaCheck
from resources.backports import StrEnum

__all__ = ["CLOUDEVENTS_FIELDS", "Envelope", "EnvelopePreset", "EventType", "UnknownFields"]

_TABLE = re.compile(r"^[A-Za-z0-9_]+(/[A-Za-z0-9_]+)*$")
_SUBJECT_TOKEN = re.compile(r"^[^\s.*>]+$")


class UnknownFields(StrEnum):
    """What to do with message fields the event type does not declare."""

    KEEP = "keep"  # keep them, as JSON text, in a map<string,string> column `unknown_fields`
    IGNORE = "ignore"  # drop them silently
    REJECT = "reject"  # quarantine the row (rule `no_unknown_fields`)


@dataclass(frozen=True)
class EventType:
    """One kind of message and its silver table.

    Attributes:
        name: the discriminator's value (e.g. `OrderPlaced`), or a name of your choice when
            the contract has no discriminator.
        table: its silver table, relative to the lakehouse root (`silver/orders_placed`).
        fields: its fields, in column order (the envelope's included).
        subjects: the subjects (filters) it is published on; required without a discriminator.
        derived: columns computed after the fields.
        unknown_fields: what to do with undeclared fields.
        description: what it means.
        schema_check: the payload's JSON Schema, for the keywords no column or column rule
            can judge (rule `schema_valid`); None when the columns judge everything.
    """

    name: str
    table: str
    fields: tuple[Field, ...]
    subjects: tuple[str, ...] = ()
    derived: tuple[DerivedColumn, ...] = ()
    unknown_fields: UnknownFields = UnknownFields.IGNORE
    description: str | None = None
    # Quiet in the repr while None: the fingerprint of an event type without one is as it was.
    schema_check: SchemaCheck | None = None

    def __repr__(self) -> str:
        return stable_repr(self, ("schema_check",))

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ContractError(f"an event type needs a name, got {self.name!r}")
        if not isinstance(self.table, str) or not _TABLE.match(self.table):
            raise ContractError(
                f"table {self.table!r} is not a table name such as silver/orders_placed "
                "(letters, digits, _ and /)",
                path=("table",),
            )
        for key in ("fields", "subjects", "derived"):
            object.__setattr__(self, key, tuple(getattr(self, key)))
        if not self.fields:
            raise ContractError(f"event type {self.name!r} declares no fields", path=("fields",))
        for index, subject in enumerate(self.subjects):
            _check_subject(subject, ("subjects", index))
        try:
            object.__setattr__(self, "unknown_fields", UnknownFields(self.unknown_fields))
        except ValueError:
            choices = ", ".join(u.value for u in UnknownFields)
            raise ContractError(
                f"unknown_fields is one of {choices}, got {self.unknown_fields!r}",
                path=("unknown_fields",),
            ) from None
        paths = [f.path for f in self.fields]
        for f in self.fields:
            if paths.count(f.path) > 1:
                raise ContractError(f"field {f.path!r} is declared twice", path=("fields", f.path))
            if f.column.lower() in RESERVED_COLUMNS:
                raise ContractError(
                    f"column {f.column!r} is one silver adds to every table "
                    f"({', '.join(sorted(RESERVED_COLUMNS))}); choose another `column`",
                    path=("fields", f.path, "column"),
                )
            for constraint in _constraints_below_collections(f.type):
                raise ContractError(
                    f"a {constraint.kind} constraint inside a map, inside a nested array or "
                    "on each element of a collection inside an array is not supported; "
                    "constrain top-level or struct fields, or the members of an array's "
                    "objects, only",
                    path=("fields", f.path),
                )
        check_unique_columns(self.fields, ())
        seen = {f.column.lower(): ("fields", f.path, "column") for f in self.fields}
        if self.unknown_fields is UnknownFields.KEEP:
            seen.setdefault(UNKNOWN_FIELDS_COLUMN, ("unknown_fields",))
        for derived in self.derived:
            if derived.name.lower() in seen or derived.name.lower() in RESERVED_COLUMNS:
                raise ContractError(
                    f"derived column {derived.name!r} has the name of another column of "
                    f"table {self.table!r}; rename it",
                    path=("derived", derived.name),
                )
            seen[derived.name.lower()] = ("derived", derived.name)

    def field(self, path: str) -> Field | None:
        """The top-level field at JSON `path`, or None."""
        return next((f for f in self.fields if f.path == path), None)

    @property
    def columns(self) -> tuple[tuple[str, FieldType | None], ...]:
        """The table's columns from the contract, in order: (name, type or None if unknown)."""
        columns: list[tuple[str, FieldType | None]] = [(f.column, f.type) for f in self.fields]
        if self.unknown_fields is UnknownFields.KEEP:
            string = FieldType(TypeKind.STRING)
            columns.append((UNKNOWN_FIELDS_COLUMN, FieldType(TypeKind.MAP, element=string)))
        return (*columns, *((d.name, d.type) for d in self.derived))


class EnvelopePreset(StrEnum):
    """A known envelope, declared by name instead of paths."""

    # CloudEvents 1.0 over NATS: binary mode (`ce-*` headers, the payload is the data) when
    # the message has a `ce-specversion` header, else structured mode (the JSON event format:
    # attributes at the payload's top level, the data under `data`).
    CLOUDEVENTS = "cloudevents"


_STRING, _TIMESTAMP = FieldType(TypeKind.STRING), FieldType(TypeKind.TIMESTAMP)
# The CloudEvents context attributes every event type of the preset has, first in its table.
CLOUDEVENTS_FIELDS = (
    Field("cloudevents:id", _STRING, required=True, description="CloudEvents id."),
    Field("cloudevents:type", _STRING, required=True, description="CloudEvents type."),
    Field("cloudevents:source", _STRING, required=True, description="CloudEvents source."),
    Field("cloudevents:time", _TIMESTAMP, description="CloudEvents time."),
    Field("cloudevents:subject", _STRING, description="CloudEvents subject."),
    Field("cloudevents:datacontenttype", _STRING, description="CloudEvents datacontenttype."),
    Field(
        "cloudevents:specversion", _STRING, required=True, description="CloudEvents specversion."
    ),
)
_ENVELOPE_KEYS = ("event_type", "event_id", "event_time")
_CLOUDEVENTS_PATHS = ("cloudevents:type", "cloudevents:id", "cloudevents:time")


@dataclass(frozen=True)
class Envelope:
    """Where every message of the stream keeps its common facts (None if it has none).

    Each is a field path: a JSON path (`eventId`), `header:<Name>` or `subject:<index>`. A
    header or subject path no field declares is declared for every event type (string, the
    event time a timestamp; required but the time); a JSON path must be declared.

    Attributes:
        event_type: the discriminator, whose value names the event type (`eventType`).
        event_id: the unique id of an event, the de-duplication key (`eventId`).
        event_time: when the event happened (`timestamp`).
        preset: a known envelope (`Envelope.cloudevents()`); its paths are the preset's.
    """

    event_type: str | None = None
    event_id: str | None = None
    event_time: str | None = None
    preset: EnvelopePreset | None = None

    def __post_init__(self) -> None:
        if self.preset is not None:
            try:
                object.__setattr__(self, "preset", EnvelopePreset(self.preset))
            except ValueError:
                choices = ", ".join(p.value for p in EnvelopePreset)
                raise ContractError(
                    f"an envelope preset is one of {choices}, got {self.preset!r}",
                    path=("envelope",),
                ) from None
        for key, preset_path in zip(_ENVELOPE_KEYS, _CLOUDEVENTS_PATHS, strict=True):
            path = getattr(self, key)
            if self.preset is EnvelopePreset.CLOUDEVENTS:
                if path is not None and path != preset_path:
                    raise ContractError(
                        f"the cloudevents preset reads {key} from CloudEvents "
                        f"{preset_path.partition(':')[2]} (header ce-"
                        f"{preset_path.partition(':')[2]} or the payload's "
                        f"{preset_path.partition(':')[2]}), not {path!r}: remove {key}, or "
                        "drop the preset and name every path",
                        path=("envelope", key),
                    )
                object.__setattr__(self, key, preset_path)
            elif path is not None:
                try:
                    source = field_source(path)
                except ContractError as error:
                    raise ContractError(error.problem, path=("envelope", key)) from None
                if source.kind is SourceKind.CLOUDEVENTS:
                    raise ContractError(
                        f"{path!r} is read only under the cloudevents preset: write "
                        "`envelope: cloudevents`, or read a header (header:ce-id)",
                        path=("envelope", key),
                    )

    def __repr__(self) -> str:
        # The fingerprint (`pipelines.contract.fingerprint`): unchanged without a preset.
        return stable_repr(self, ("preset",))

    @property
    def type_outside_payload(self) -> bool:
        """Whether the event type is read from outside the payload (a header, CloudEvents'
        type): then a payload schema cannot name its event type, its document must."""
        if not self.event_type:
            return False
        return field_source(self.event_type).kind is not SourceKind.PAYLOAD

    @classmethod
    def cloudevents(cls) -> Envelope:
        """The CloudEvents envelope: the event type, id and time are its type, id and time."""
        return cls(preset=EnvelopePreset.CLOUDEVENTS)

    def implied_fields(self) -> tuple[Field, ...]:
        """The fields the envelope declares for every event type that does not: the
        preset's attributes, and each header or subject path (string, the time a timestamp;
        required but the time)."""
        if self.preset is EnvelopePreset.CLOUDEVENTS:
            return CLOUDEVENTS_FIELDS
        implied = []
        for key in _ENVELOPE_KEYS:
            path = getattr(self, key)
            if path is None or field_source(path).kind is SourceKind.PAYLOAD:
                continue
            kind = TypeKind.TIMESTAMP if key == "event_time" else TypeKind.STRING
            implied.append(Field(path, FieldType(kind), required=key != "event_time"))
        return tuple(implied)

    def complete(self, event: EventType) -> EventType:
        """`event` with the envelope's implied fields it does not declare, first.

        Raises:
            ContractError: `event` reads a CloudEvents attribute without the preset.
        """
        if self.preset is not EnvelopePreset.CLOUDEVENTS:
            for f in event.fields:
                if f.source.kind is SourceKind.CLOUDEVENTS:
                    raise ContractError(
                        f"{f.path!r} is read only under the cloudevents preset: write "
                        "`envelope: cloudevents`, or read the header (header:ce-...)",
                        path=("events", event.name, "fields", f.path),
                    )
        declared = {f.path for f in event.fields}
        implied = tuple(f for f in self.implied_fields() if f.path not in declared)
        if not implied:
            return event
        try:
            return replace(event, fields=(*implied, *event.fields))
        except ContractError as error:
            added = ", ".join(f"{f.path} (column {f.column})" for f in implied)
            raise ContractError(
                f"{error.problem}; the envelope adds {added} to every event type",
                path=("events", event.name, *error.path),
            ) from None


def _constraints_below_collections(field_type: FieldType, depth: int = 0) -> list:
    """The constraints no rule judges: below a map or two arrays, and each-element ones
    below one array (a member of an array's objects is judged on every element)."""
    found = []
    for f in field_type.fields:
        found.extend(c for c in f.constraints if depth > 1 or (depth and c.each))
        found.extend(_constraints_below_collections(f.type, depth))
    if field_type.element is not None:
        step = 1 if field_type.kind is TypeKind.ARRAY else 2
        found.extend(_constraints_below_collections(field_type.element, depth + step))
    return found


def _check_subject(subject: object, path: tuple[PathPart, ...]) -> None:
    tokens = subject.split(".") if isinstance(subject, str) else [""]
    for index, token in enumerate(tokens):
        if (token == ">" and index == len(tokens) - 1) or token == "*":
            continue
        if not _SUBJECT_TOKEN.match(token):
            raise ContractError(
                f"invalid subject {subject!r}: dot-separated tokens without spaces, '*' for "
                "one token, a final '>' for the rest (e.g. orders.placed, orders.>)",
                path=path,
            )
