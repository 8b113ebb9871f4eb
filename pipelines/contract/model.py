"""The event contract of a stream: one immutable object, whichever form it was declared in.

A `Contract` has an `Envelope` (the JSON paths of the event-type discriminator, the event id
and the event time, each optional) and one `EventType` per kind of message: its silver table,
its subjects, its `Field`s (JSON path -> typed column, with constraints), its derived columns
(Spark SQL expressions, kept as text) and what to do with fields it does not declare. Its
`rules` are derived from all of that (see `pipelines.contract.rules`). The parts are defined
next to this module (`event_types`, `fields`, `datatypes`, `constraints`); this one puts
them together and checks them against each other.

Every object checks itself when built and raises `ContractError` with a path relative to
itself; the readers put their position in front (`pipelines.contract.errors.located`).
Column names are compared case-insensitively, as Spark resolves them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pipelines.contract.constraints import Severity
from pipelines.contract.datatypes import TypeKind
from pipelines.contract.errors import ContractError
from pipelines.contract.event_types import Envelope, EventType, UnknownFields
from pipelines.contract.fields import (
    RESERVED_COLUMNS,
    UNKNOWN_FIELDS_COLUMN,
    DerivedColumn,
    Field,
    snake_case,
)
from pipelines.contract.rules import BUILTIN_RULES, Rule, derive_rules

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


@dataclass(frozen=True)
class Contract:
    """A stream's event contract: envelope, event types and, derived from them, the rules.

    Attributes:
        event_types: one per kind of message, each with its own silver table.
        envelope: the discriminator, event id and event time paths.
        version: the document's own version, if it has one (a YAML contract's `version`,
            AsyncAPI `info.version`, JSON Schema `$id`s); recorded on every row with the
            declaration's fingerprint (`pipelines.contract.fingerprint`).
        rules: every rule (built-in and from constraints), unique by name; computed.
    """

    event_types: tuple[EventType, ...]
    envelope: Envelope = field(default_factory=Envelope)
    # Built-in rule name -> its severity (`quarantine` unless given; rows breaking a built-in
    # rule cannot stay in silver, so `quarantine` or `quarantine+block`).
    builtin_severities: Mapping[str, Severity] = field(default_factory=dict, hash=False)
    # A label of the document, not part of the declaration: two documents declaring the
    # same contract are equal whatever their versions.
    version: str | None = field(default=None, compare=False)
    rules: tuple[Rule, ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        # The envelope's implied fields (a header event id, the CloudEvents attributes).
        completed = tuple(self.envelope.complete(event) for event in self.event_types)
        object.__setattr__(self, "event_types", completed)
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
        if self.version is not None and (not isinstance(self.version, str) or not self.version):
            raise ContractError(
                f"a contract's version is a non-empty text such as 1.4.0, got {self.version!r}",
                path=("version",),
            )
        object.__setattr__(self, "builtin_severities", checked_severities(self.builtin_severities))
        rules = derive_rules(self.event_types, self.envelope, self.builtin_severities)
        object.__setattr__(self, "rules", rules)

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
