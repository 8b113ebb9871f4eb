"""A stream's kinds of message: `EventType` (one per silver table), `Envelope`, `UnknownFields`.

An `EventType` is one kind of message: the silver table it lands in, the subjects it is
published on, its `Field`s in column order, its derived columns and what to do with fields it
does not declare. The `Envelope` says where every message of the stream keeps its common facts
(event type, event id, event time). An `EventType` checks itself when built and raises
`ContractError` with a path relative to itself; the `Contract` (`pipelines.contract.model`)
checks the envelope against every event type, and its rules are derived from both
(`pipelines.contract.rules`).
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from pipelines.contract.datatypes import FieldType, TypeKind
from pipelines.contract.errors import ContractError, PathPart
from pipelines.contract.fields import (
    RESERVED_COLUMNS,
    UNKNOWN_FIELDS_COLUMN,
    DerivedColumn,
    Field,
    check_unique_columns,
)

__all__ = ["Envelope", "EventType", "UnknownFields"]

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
