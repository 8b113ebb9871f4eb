"""The rules of a contract: the built-in structural ones, then one per field constraint.

Built in, in this order:

- `parseable_json`: the payload is a JSON object.
- `known_event_type`: the discriminator names a declared event type (only with
  `envelope.event_type`).
- `required_fields_present`, `field_types_valid`: required fields are there, present fields
  have their declared types.
- `event_id_unique`: the first occurrence of an event id per event type is kept, later copies
  are not (only with `envelope.event_id`).
- `no_unknown_fields`: no undeclared field (only if an event type rejects unknown fields).
- `schema_valid`: the message is valid against its event type's JSON Schema, judged by
  jsonschema-rs (only for event types whose schema says more than their columns' rules:
  `EventType.schema_check`).

Then each constraint of each field, in declaration order: named `<column>_<suffix>` or as the
constraint says, with its severity; one on each element of an array (`each`) is named
`<column>_each_<suffix>`, one on a member of an array's objects
`<column>_each_<member>_<suffix>` (`lines_each_qty_in_range`: "each lines[].qty is ...").

A rule name is unique in a contract; the same name on the same column with the same
constraint in several event types is one rule that applies to all of them (e.g.
`user_id_format` on two events' `data.userId`).

Every rule is judged and counted on its own. Its asset check is its own when someone chose
it (`Rule.own_check`: a built-in rule, a constraint named with `rule:`, or one whose severity
is not the default); the other constraint rules of an event type share the table's
`field_rules` check (`FIELD_RULES`), so a contract of hundreds of rules has a few checks per
table, not hundreds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from pipelines.contract.constraints import Constraint, Severity
from pipelines.contract.datatypes import TypeKind
from pipelines.contract.errors import ContractError, format_path
from pipelines.contract.event_types import Envelope, EventType
from pipelines.contract.fields import Field, snake_case

PARSEABLE_JSON = "parseable_json"
KNOWN_EVENT_TYPE = "known_event_type"
REQUIRED_FIELDS_PRESENT = "required_fields_present"
FIELD_TYPES_VALID = "field_types_valid"
EVENT_ID_UNIQUE = "event_id_unique"
NO_UNKNOWN_FIELDS = "no_unknown_fields"
SCHEMA_VALID = "schema_valid"
BUILTIN_RULES = (
    PARSEABLE_JSON,
    KNOWN_EVENT_TYPE,
    REQUIRED_FIELDS_PRESENT,
    FIELD_TYPES_VALID,
    EVENT_ID_UNIQUE,
    NO_UNKNOWN_FIELDS,
    SCHEMA_VALID,
)
# The asset check of an event type's rules with no check of their own (`Rule.own_check`).
FIELD_RULES = "field_rules"
_RULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Rule:
    """A row-level quality rule of a contract.

    Attributes:
        name: stable identifier (quarantine rows' `failed_rules`, expectation tags, checks).
        description: one readable sentence.
        applies_to: the event types whose rows it checks.
        severity: what breaking it does.
        column: the column it checks (dotted inside a struct); None for built-in rules.
        path: the JSON path of that field; None for built-in rules.
        constraint: the constraint it comes from; None for built-in rules.
        member: for a constraint on a member of an array's objects, the member's column path
            inside each element (`qty`; `column` is then the array's, `path` the member's
            as `lines[].qty`); None otherwise.
    """

    name: str
    description: str
    applies_to: tuple[str, ...]
    severity: Severity = Severity.QUARANTINE
    column: str | None = None
    path: str | None = None
    constraint: Constraint | None = None
    member: str | None = None

    @property
    def builtin(self) -> bool:
        """Whether it is one of the structural rules every contract has (`BUILTIN_RULES`)."""
        return self.constraint is None

    @property
    def own_check(self) -> bool:
        """Whether its asset check is its own: a built-in rule, a constraint someone named
        (`rule:`, `x-jsl-rule`), or one whose severity is not the default `quarantine` (a
        `warn` rule's check is its only signal, a `block` rule's check is what blocks). The
        others share their table's `field_rules` check."""
        return (
            self.constraint is None
            or self.constraint.rule is not None
            or self.severity is not Severity.QUARANTINE
        )


def _builtin(
    events: tuple[EventType, ...], envelope: Envelope, severities: Mapping[str, Severity]
) -> list[Rule]:
    every = tuple(e.name for e in events)
    rules = [
        Rule(
            PARSEABLE_JSON,
            "The payload is valid UTF-8 JSON whose top level is an object (not an array, "
            "number, string or null), with nothing after it.",
            every,
        )
    ]
    if envelope.event_type is not None:
        rules.append(
            Rule(
                KNOWN_EVENT_TYPE,
                f"{envelope.event_type} is {_one_of(every)}; events of other types have no "
                "silver table.",
                every,
            )
        )
    rules += [
        Rule(
            REQUIRED_FIELDS_PRESENT,
            "Every required field of the event type is present and not null.",
            every,
        ),
        Rule(
            FIELD_TYPES_VALID,
            "Every present field has the type the contract declares (text fields are strings, "
            "numbers fit their type, timestamps are written as declared).",
            every,
        ),
    ]
    if envelope.event_id is not None:
        rules.append(
            Rule(
                EVENT_ID_UNIQUE,
                f"No earlier message (lower stream sequence) of the same event type has the "
                f"same {envelope.event_id}, in this batch or already in silver: the first "
                "occurrence is kept, later ones are quarantined.",
                every,
            )
        )
    strict = tuple(e.name for e in events if e.unknown_fields == "reject")
    if strict:
        rules.append(
            Rule(
                NO_UNKNOWN_FIELDS,
                "The message has no field its event type does not declare.",
                strict,
            )
        )
    judged = tuple(e.name for e in events if e.schema_check is not None)
    if judged:
        rules.append(
            Rule(
                SCHEMA_VALID,
                "The message is valid against its event type's JSON Schema, as the "
                "jsonschema-rs validator judges it (formats asserted): the keywords no column "
                "rule expresses (unions, not, if/then/else, ...) are judged there.",
                judged,
            )
        )
    return [replace(r, severity=severities.get(r.name, r.severity)) for r in rules]


def _one_of(names: tuple[str, ...]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def _walk(fields: tuple[Field, ...], path: str = "", column: str = "", *, items: bool = True):
    """(field, full JSON path, column path, where, member) of every field, struct members
    included, and with `items` the members of the objects of each array (full JSON path
    `lines[].qty`, the array's column path, member: the column path inside an element)."""
    for f in fields:
        full, col = f"{path}{f.path}", f"{column}{f.column}"
        yield f, full, col, (f.path,), None
        nested = _walk(f.type.fields, f"{full}.", f"{col}.", items=items)
        for inner, inner_full, inner_col, inner_at, member in nested:
            yield inner, inner_full, inner_col, (f.path, "fields", *inner_at), member
        element = f.type.element
        if items and f.type.kind is TypeKind.ARRAY and element.kind is TypeKind.STRUCT:
            for inner, inner_full, inner_col, inner_at, _ in _walk(element.fields, items=False):
                yield inner, f"{full}[].{inner_full}", col, (f.path, "fields", *inner_at), inner_col


def _field_rules(event: EventType) -> list[tuple[Rule, tuple]]:
    rules = []
    for f, full_path, column, at, member in _walk(event.fields):
        for constraint in f.constraints:
            if member is None:
                name = constraint.rule_name(column)
                subject = constraint.subject(full_path, f.type)
            else:
                stem = f"{column}_each_{member}".replace(".", "_")
                name = constraint.rule or f"{stem}_{constraint.suffix}"
                subject = f"each {full_path}"
            where = ("events", event.name, "fields", *at, constraint.kind)
            if not _RULE_NAME.match(name):
                raise ContractError(
                    f"rule name {name!r} is not an identifier (letters, digits, _)", path=where
                )
            if name == FIELD_RULES:
                raise ContractError(
                    f"rule name {name!r} is the check of the rules no one named; "
                    "give this rule another name",
                    path=where,
                )
            rule = Rule(
                name,
                constraint.describe(subject),
                (event.name,),
                constraint.severity,
                column,
                full_path,
                constraint,
                member,
            )
            rules.append((rule, where))
    return rules


def _same(known: Rule, rule: Rule) -> bool:
    """Whether two rules of one name are the same check of the same column."""
    return known.constraint is not None and (
        (known.column, known.path, known.constraint, known.member)
        == (rule.column, rule.path, rule.constraint, rule.member)
    )


def _clashing_defaults(found: list[tuple[EventType, Rule, tuple]]) -> set[str]:
    """The default rule names (no `rule:` given) that several event types use for different
    checks (each event type's own `action` enum): each gets its event type's name in front
    (`issues_opened__action_in_allowed_values`). A name someone gave must stay unique."""
    by_name: dict[str, list[Rule]] = {}
    for _, rule, _ in found:
        by_name.setdefault(rule.name, []).append(rule)
    return {
        name
        for name, group in by_name.items()
        if name not in BUILTIN_RULES
        and all(r.constraint.rule is None for r in group)
        and any(not _same(group[0], r) for r in group[1:])
    }


def derive_rules(
    event_types: tuple[EventType, ...],
    envelope: Envelope,
    builtin_severities: Mapping[str, Severity],
) -> tuple[Rule, ...]:
    """Every rule of a contract, built-in first, unique by name (`Contract.rules`).

    Args:
        event_types: the contract's event types (already checked against each other).
        envelope: its envelope; the discriminator and the event id each add a built-in rule.
        builtin_severities: built-in rule name -> its severity (the others: `quarantine`).

    Returns:
        The rules.

    Raises:
        ContractError: two rules share a name (and are not the same check of the same column);
            the path names the second one's field.
    """
    builtins = _builtin(event_types, envelope, builtin_severities)
    found = [(event, rule, where) for event in event_types for rule, where in _field_rules(event)]
    clashing = _clashing_defaults(found)
    rules: dict[str, Rule] = {rule.name: rule for rule in builtins}
    origins: dict[str, tuple] = {}
    for event, rule, where in found:
        if rule.name in clashing:
            rule = replace(rule, name=f"{snake_case(event.name)}__{rule.name}")
        known = rules.get(rule.name)
        if known is None:
            rules[rule.name], origins[rule.name] = rule, where
            continue
        if not _same(known, rule):
            first = format_path(origins[rule.name]) if rule.name in origins else "built in"
            raise ContractError(
                f"rule name {rule.name!r} is used twice (first: {first}); rule names are "
                "unique in a contract: name this one with `rule:` (`x-jsl-rule` in a JSON "
                "Schema)",
                path=where,
            )
        rules[rule.name] = replace(known, applies_to=(*known.applies_to, event.name))
    return tuple(rules.values())
