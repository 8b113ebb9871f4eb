"""The event contract of a stream: one immutable object, whichever form it was declared in.

A `Contract` has an `Envelope` (the JSON paths of the event-type discriminator, the event id
and the event time, each optional) and one `EventType` per kind of message: its silver table,
its subjects, its `Field`s (JSON path -> typed column, with constraints), its derived columns
(Spark SQL expressions, kept as text) and what to do with fields it does not declare. Its
`rules` are derived from all of that (see `pipelines.contract.rules`).

Every object checks itself when built and raises `ContractError` with a path relative to
itself; the readers put their position in front (`pipelines.contract.errors.located`).
Column names are compared case-insensitively, as Spark resolves them.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from pipelines.contract.constraints import Severity
from pipelines.contract.datatypes import FieldType, TypeKind
from pipelines.contract.errors import ContractError, PathPart
from pipelines.contract.fields import (
    RESERVED_COLUMNS,
    UNKNOWN_FIELDS_COLUMN,
    DerivedColumn,
    Field,
    check_unique_columns,
    snake_case,
)

__all__ = [
    "RESERVED_COLUMNS",
    "UNKNOWN_FIELDS_COLUMN",
    "Contract",
    "DerivedColumn",
    "Envelope",
    "EventType",
    "Field",
    "UnknownFields",
    "snake_case",
]

_TABLE = re.compile(r"^[A-Za-z0-9_]+(/[A-Za-z0-9_]+)*$")
_SUBJECT_TOKEN = re.compile(r"^[^\s.*>]+$")


class UnknownFields(enum.StrEnum):
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
    """

    name: str
    table: str
    fields: tuple[Field, ...]
    subjects: tuple[str, ...] = ()
    derived: tuple[DerivedColumn, ...] = ()
    unknown_fields: UnknownFields = UnknownFields.IGNORE
    description: str | None = None

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
                    f"a {constraint.kind} constraint inside an array or map is not supported; "
                    "constrain top-level or struct fields only",
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


@dataclass(frozen=True)
class Envelope:
    """Where every message of the stream keeps its common facts (JSON paths; None if it has none).

    Attributes:
        event_type: the discriminator, whose value names the event type (`eventType`).
        event_id: the unique id of an event, the de-duplication key (`eventId`).
        event_time: when the event happened (`timestamp`).
    """

    event_type: str | None = None
    event_id: str | None = None
    event_time: str | None = None


@dataclass(frozen=True)
class Contract:
    """A stream's event contract: envelope, event types and, derived from them, the rules.

    Attributes:
        event_types: one per kind of message, each with its own silver table.
        envelope: the discriminator, event id and event time paths.
        rules: every rule (built-in and from constraints), unique by name; computed.
    """

    event_types: tuple[EventType, ...]
    envelope: Envelope = Envelope()
    # Built-in rule name -> its severity (`quarantine` unless given; rows breaking a built-in
    # rule cannot stay in silver, so `quarantine` or `quarantine+block`).
    builtin_severities: Mapping[str, Severity] = field(default_factory=dict, hash=False)
    rules: tuple = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        from pipelines.contract.rules import derive_rules

        object.__setattr__(self, "event_types", tuple(self.event_types))
        if not self.event_types:
            raise ContractError("the contract declares no event types", path=("events",))
        names, tables = set(), {}
        for event in self.event_types:
            if event.name in names:
                raise ContractError(
                    f"event type {event.name!r} is declared twice", path=("events", event.name)
                )
            names.add(event.name)
            if event.table in tables:
                raise ContractError(
                    f"table {event.table!r} is used by event types {tables[event.table]!r} and "
                    f"{event.name!r}; give each its own table",
                    path=("events", event.name, "table"),
                )
            tables[event.table] = event.name
            _check_envelope(self.envelope, event)
        if self.envelope.event_type is None:
            _check_subjects_without_discriminator(self.event_types)
        object.__setattr__(self, "builtin_severities", checked_severities(self.builtin_severities))
        object.__setattr__(self, "rules", derive_rules(self))

    def event_type(self, name: str) -> EventType:
        """The event type called `name`.

        Raises:
            KeyError: there is none; the message lists the known ones.
        """
        for event in self.event_types:
            if event.name == name:
                return event
        raise KeyError(f"no event type {name!r}; known: {[e.name for e in self.event_types]}")

    @property
    def rule_names(self) -> tuple[str, ...]:
        """The rules' names, in order."""
        return tuple(rule.name for rule in self.rules)


def checked_severities(given: Mapping[str, object]) -> dict[str, Severity]:
    """The built-in rules' severities `given` names (rule name -> severity text or Severity).

    Raises:
        ContractError: at `severities.<name>`: not a built-in rule, or a severity that would
            keep the row in silver (only quarantine and quarantine+block are allowed).
    """
    from pipelines.contract.rules import BUILTIN_RULES

    found = {}
    for name, value in dict(given).items():
        where = ("severities", name)
        if name not in BUILTIN_RULES:
            raise ContractError(
                f"{name!r} is not a built-in rule; severities here are for "
                f"{', '.join(BUILTIN_RULES)} (a constraint sets its own `severity`)",
                path=where,
            )
        try:
            severity = Severity(value)
        except ValueError:
            severity = None
        if severity is None or not severity.quarantines:
            raise ContractError(
                f"a built-in rule's row cannot stay in silver: use quarantine or "
                f"quarantine+block, got {value!r}",
                path=where,
            )
        found[name] = severity
    return found


def _constraints_below_collections(field_type: FieldType, below: bool = False) -> list:
    found = []
    for f in field_type.fields:
        if below:
            found.extend(f.constraints)
        found.extend(_constraints_below_collections(f.type, below))
    if field_type.element is not None:
        found.extend(_constraints_below_collections(field_type.element, True))
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


_ENVELOPE_TYPES = {
    "event_type": (TypeKind.STRING,),
    "event_id": (TypeKind.STRING, TypeKind.LONG, TypeKind.INTEGER),
    "event_time": (TypeKind.TIMESTAMP,),
}


def _check_envelope(envelope: Envelope, event: EventType) -> None:
    for key, kinds in _ENVELOPE_TYPES.items():
        path = getattr(envelope, key)
        if path is None:
            continue
        found = event.field(path)
        wanted = " or ".join(kinds)
        if found is None:
            raise ContractError(
                f"the envelope's {key} is {path!r}, but event type {event.name!r} has no field "
                f"{path!r}; declare it (type {wanted}) in the envelope's or the event's fields",
                path=("envelope", key),
            )
        if found.type.kind not in kinds:
            raise ContractError(
                f"the envelope's {key} {path!r} must be of type {wanted}, not {found.type}",
                path=("events", event.name, "fields", path, "type"),
            )
        if key != "event_time" and not found.required:
            raise ContractError(
                f"the envelope's {key} {path!r} must be required in event type {event.name!r}",
                path=("events", event.name, "fields", path, "required"),
            )


def _check_subjects_without_discriminator(events: tuple[EventType, ...]) -> None:
    owners: dict[str, str] = {}
    for event in events:
        if not event.subjects:
            raise ContractError(
                f"event type {event.name!r} has no subjects; without an envelope event_type, "
                "each event type is told apart by its subjects: list them, or set "
                "envelope.event_type",
                path=("events", event.name, "subjects"),
            )
        for subject in event.subjects:
            if subject in owners:
                raise ContractError(
                    f"subject {subject!r} belongs to both {owners[subject]!r} and {event.name!r}; "
                    "without an envelope event_type each subject names one event type",
                    path=("events", event.name, "subjects"),
                )
            owners[subject] = event.name
