"""Where a contract's fields sit in a message and in the checked frame (pure Python, no Spark).

The checked frame (`pipelines.silver.parse.parse_events`) keeps the bronze columns and adds:

- `_payload_problem` (string): why the payload is not a JSON object; null if it is one.
- `_event_type` (string): the discriminator's value when it is a string (declared or not);
  without a discriminator, the event type whose subjects match the row's subject.
- `_event_id` (string): the envelope's event id, typed as declared, as text.
- `_event_time` (timestamp): the envelope's event time, typed as declared.
- `_missing_fields` (array<string>): required JSON paths absent or null.
- `_mistyped_fields` (array<string>): present paths of the wrong type, with what was
  expected (`data.amount (expected a number that fits decimal(12,2))`).
- `_schema_errors` (array<struct<at, message>>): the JSON Schema validator's errors, for
  event types with a `schema_check` (`pipelines.silver.schema_verdicts`): the failing
  keyword's place in the schema and the message; empty for the others.
- `_e<i>` (struct): event type i's columns, typed (null where missing or mistyped).
- `_u<i>` (map<string,string>): event type i's undeclared fields (JSON path -> JSON text),
  when it keeps or rejects them.

Which paths are judged depends on the row's event type: its own fields for a declared type,
otherwise only the fields every event type declares alike (the envelope's).

A field read from a header, a subject token or a CloudEvents attribute (`header:ce-id`,
`subject:2`, `cloudevents:id`) is one path with no parents and no place among the payload's
objects; under the cloudevents preset, JSON paths start in the event's data (the payload in
binary mode, its `data` in structured mode).
"""

from __future__ import annotations

from dataclasses import dataclass

from pipelines.contract import Contract, EventType, Field, TypeKind, UnknownFields
from pipelines.contract.fields import SourceKind, field_source

PAYLOAD_PROBLEM = "_payload_problem"
EVENT_TYPE = "_event_type"
EVENT_ID = "_event_id"
EVENT_TIME = "_event_time"
MISSING_FIELDS = "_missing_fields"
MISTYPED_FIELDS = "_mistyped_fields"
SCHEMA_ERRORS = "_schema_errors"
DUPLICATE_OF = "_duplicate_of"  # added by `pipelines.silver.duplicates.mark_duplicates`
SOURCE_COLUMNS = ("stream", "seq", "subject", "published")


@dataclass(frozen=True)
class Spot:
    """A field (struct members included) and where it is.

    Attributes:
        field: the field.
        path: its JSON path from the message root (`data.address.zip`).
        column: its column path in the event type's struct (`address.zip`).
        structs: the JSON paths of the struct fields it is inside, outermost first.
    """

    field: Field
    path: str
    column: str
    structs: tuple[str, ...] = ()


def spots(fields: tuple[Field, ...], path: str = "", column: str = "", structs=()) -> list[Spot]:
    """Every field of `fields` and, depth first, the members of struct fields."""
    found = []
    for f in fields:
        spot = Spot(f, f"{path}{f.path}", f"{column}{f.column}", tuple(structs))
        found.append(spot)
        if f.type.kind is TypeKind.STRUCT:
            found += spots(f.type.fields, f"{spot.path}.", f"{spot.column}.", (*structs, spot.path))
    return found


def prefixes(path: str) -> list[str]:
    """`data.a.b` -> [`data`, `data.a`]: the objects on the way to it (none for a header,
    a subject token or a CloudEvents attribute)."""
    if not from_payload(path):
        return []
    keys = path.split(".")
    return [".".join(keys[:n]) for n in range(1, len(keys))]


def from_payload(path: str) -> bool:
    """Whether a field path is a JSON path into the payload (not `header:`, `subject:`,
    `cloudevents:`)."""
    return field_source(path).kind is SourceKind.PAYLOAD


def event_struct(contract: Contract, name: str) -> str:
    """The checked frame's struct column of event type `name` (`_e0`, `_e1`, ...)."""
    return f"_e{_index(contract, name)}"


def unknown_map(contract: Contract, name: str) -> str:
    """The checked frame's map column of event type `name`'s undeclared fields (`_u0`, ...)."""
    return f"_u{_index(contract, name)}"


def tracks_unknown(event: EventType) -> bool:
    """Whether the checked frame collects the event type's undeclared fields."""
    return event.unknown_fields in (UnknownFields.KEEP, UnknownFields.REJECT)


def _index(contract: Contract, name: str) -> int:
    for index, event in enumerate(contract.event_types):
        if event.name == name:
            return index
    raise KeyError(f"no event type {name!r}; known: {[e.name for e in contract.event_types]}")


def common_fields(contract: Contract) -> tuple[Field, ...]:
    """The fields every event type declares alike (same path, type and requirement)."""
    first, *others = contract.event_types
    return tuple(f for f in first.fields if all(f in e.fields for e in others))


def all_paths(contract: Contract) -> list[str]:
    """Every JSON path the checked frame looks up, parents first, each once."""
    paths: dict[str, None] = {}
    for event in contract.event_types:
        for spot in spots(event.fields):
            paths.update(dict.fromkeys([*prefixes(spot.path), spot.path]))
    return list(paths)


def containers(event: EventType) -> dict[str, frozenset[str]]:
    """The objects holding the event type's fields ("" for the root) -> the keys it declares."""
    found: dict[str, set[str]] = {"": set()}
    for spot in spots(event.fields):
        if not from_payload(spot.path):
            continue
        keys = spot.path.split(".")
        for depth in range(len(keys)):
            found.setdefault(".".join(keys[:depth]), set()).add(keys[depth])
    return {path: frozenset(keys) for path, keys in found.items()}


def id_field(contract: Contract, event: EventType) -> Field | None:
    """The event type's envelope event id field, or None without one."""
    path = contract.envelope.event_id
    return None if path is None else event.field(path)
