"""The Great Expectations suite of each event type, generated from the contract.

Each suite runs on the event type's *candidates* (every row of that type in the batch,
before the quarantine split), projected by `expectation_frame` into flat columns: a field
inside a struct is `<struct>__<member>`, and a `not_in_future` field gets its latest allowed
value beside it (`<column>__latest`, the row's publish time plus the skew). One expectation
per rule and column, tagged with the rule, so a rule's asset check (or `field_rules`, for each
of its rules) reads its verdict from the expectations that carry the rule's name (`rule_outcomes`):

    required_fields_present   ExpectColumnValuesToNotBeNull, one per required field, on its
                              presence (`<column>__present`), not its typed value
    event_id_unique           ExpectColumnValuesToBeUnique on the event id (within the batch;
                              copies of rows already in silver are the pipeline's to catch)
    range                     ExpectColumnValuesToBeBetween (strict_min / strict_max for
                              exclusive bounds)
    pattern                   ExpectColumnValuesToMatchRegex (Java regex, found anywhere)
    enum                      ExpectColumnValuesToBeInSet
    min_length, max_length    ExpectColumnValueLengthsToBeBetween
    format                    ExpectColumnValuesToMatchRegex (the formats a regex decides)
    not_in_future             ExpectColumnPairValuesAToBeGreaterThanB(latest >= value)

Each not-null expectation reads a required field's presence as the stage judged it
(`pipelines.silver.parse` tells a missing field from a mistyped one; the typed column, null
for both, cannot): `<column>__present` is null where the row breaks `required_fields_present`
and the field's value is null while no struct around it is, else true. So a mistyped value
breaks `field_types_valid` only, and a row missing a nullable required field (whose JSON null
is a value; its expectation is `<column>_present`) breaks the rule in GX as in the stage. The
candidates say which rows break the rule, not which of their fields are missing: in such a
row any other required field that is null (mistyped, or a nullable one's null) counts too, so
the rule's rows are the stage's and its unexpected values may be more. The other
expectations read the typed values and skip nulls: a missing or mistyped value breaks none
of them.

GX has no expectation for the others (a date-time or date format, which the stage parses
(a regex would pass 2024-02-30), multiple_of, min_items, max_items, unique_items,
min_properties, max_properties, a constraint on each element of an array or on a member of
an array's objects, and a number constraint on a number written as text, pydantic's
Decimal): their checks count the rows the stage flagged, as for the structural rules below.

The other built-in rules (`parseable_json`, `known_event_type`, `field_types_valid`,
`no_unknown_fields`) are about the message rather than a column; their checks count the
rows the stage flagged. `mostly` is the share of rows each expectation needs, in (0, 1]:
1.0 (the default) fails a check on any breaking row.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from pipelines.contract import (
    AllowedValues,
    Contract,
    EventType,
    Format,
    MaxLength,
    NotInFuture,
    Pattern,
    Range,
    Rule,
    StringFormat,
)
from pipelines.contract import rules as builtin
from pipelines.contract.sizes import MinLength
from pipelines.silver import layout
from pipelines.silver.rule_columns import (
    FORMAT_PATTERNS,
    latest_allowed,
    silver_rules,
    spark_pattern,
)
from resources.quality import QualityCheck, QualitySuite, ValidationReport

_FAILED_RULES = "failed_rules"  # the candidates' column: every rule the row broke
# Formats the stage parses, not only matches: no regex gives the same verdict (2024-02-30 has
# a date's shape), so their checks count the stage's rows.
PARSED_FORMATS = (StringFormat.DATE_TIME, StringFormat.DATE)


def flat_name(column: str) -> str:
    """The expectation frame's column for a (dotted) column path: `address.zip` ->
    `address__zip`."""
    return column.replace(".", "__")


def _value(column: str) -> Column:
    top, *members = column.split(".")
    value = F.col(top)
    for member in members:
        value = value.getField(member)
    return value


def _spots(event: EventType) -> dict[str, layout.Spot]:
    return {spot.path: spot for spot in layout.spots(event.fields)}


def present_name(column: str) -> str:
    """The expectation frame's presence column of a required (dotted) column path:
    `address.zip` -> `address__zip__present`."""
    return f"{flat_name(column)}__present"


def _required(event: EventType) -> list[layout.Spot]:
    """The required fields, struct members included (judged where their struct is there)."""
    return [spot for spot in layout.spots(event.fields) if spot.field.required]


def _presence(spot: layout.Spot, spots: dict[str, layout.Spot]) -> Column:
    """Null where the stage found `spot`'s field missing, else true (see the module
    docstring): its value is null in a row breaking `required_fields_present`, and no
    struct around it is null (a member of an absent struct is not missing, its struct is)."""
    broke = F.array_contains(F.col(_FAILED_RULES), builtin.REQUIRED_FIELDS_PRESENT)
    missing = broke & _value(spot.column).isNull()
    for struct in spot.structs:
        missing = missing & _value(spots[struct].column).isNotNull()
    return F.when(~missing, F.lit(True))


def _rules_of(contract: Contract, event: EventType) -> list[Rule]:
    return [r for r in silver_rules(contract) if event.name in r.applies_to]


def expectation_frame(candidates: DataFrame, contract: Contract, event: EventType) -> DataFrame:
    """The columns the suite of `event` checks, flat, from its candidates.

    Args:
        candidates: `SilverBatch.candidates[event.name]` (its columns, `published` and
            `failed_rules`).
        contract: the stream's event contract.
        event: the event type.

    Returns:
        `<column>__present` per required field (`present_name`), one column per field a
        constraint or the event id checks (`flat_name`), and `<column>__latest` per
        `not_in_future` field.
    """
    spots = _spots(event)
    columns: dict[str, Column] = {}
    for spot in _required(event):
        columns[present_name(spot.column)] = _presence(spot, spots)
    id_field = layout.id_field(contract, event)
    if id_field is not None:
        columns[flat_name(id_field.column)] = _value(id_field.column)
    for rule in _rules_of(contract, event):
        if rule.constraint is None or rule.constraint.each or rule.member is not None:
            continue  # GX checks no element of an array (see the module docstring)
        spot = spots[rule.path]
        columns[flat_name(spot.column)] = _value(spot.column)
        if isinstance(rule.constraint, NotInFuture):
            latest = latest_allowed(rule.constraint, spot.field.type.kind)
            columns[f"{flat_name(spot.column)}__latest"] = latest
    return candidates.select(*(value.alias(name) for name, value in columns.items()))


def contract_suite(
    contract: Contract, event: EventType, *, mostly: float = 1.0
) -> QualitySuite | None:
    """The GX suite of `event`'s table, one expectation per rule and column.

    Args:
        contract: the stream's event contract.
        event: the event type.
        mostly: the share of rows each expectation needs, in (0, 1].

    Returns:
        The suite, named after the table (a check blocks, `critical`, when its rule does);
        None if the event type has no rule GX can check.

    Raises:
        ValueError: `mostly` is out of range.
    """
    if not 0 < mostly <= 1:
        raise ValueError(f"mostly must be in (0, 1], got {mostly!r}; e.g. 0.99 for 99% of rows")
    checks: list[QualityCheck] = []
    for rule in _rules_of(contract, event):
        critical = rule.severity.blocks
        if rule.name == builtin.REQUIRED_FIELDS_PRESENT:
            checks += [_presence_check(spot, rule, critical, mostly) for spot in _required(event)]
        elif rule.name == builtin.EVENT_ID_UNIQUE:
            column = flat_name(layout.id_field(contract, event).column)
            checks.append(
                QualityCheck(
                    name=f"{column}_unique",
                    rule=rule.name,
                    description=f"{contract.envelope.event_id} occurs once in the batch.",
                    critical=critical,
                    expectation="ExpectColumnValuesToBeUnique",
                    kwargs={"column": column, "mostly": mostly},
                )
            )
        elif (
            rule.constraint is not None
            and rule.member is None
            and _constraint(rule, "") is not None
        ):
            column = flat_name(_spots(event)[rule.path].column)
            expectation, kwargs = _constraint(rule, column)
            checks.append(
                QualityCheck(
                    name=rule.name,
                    rule=rule.name,
                    description=rule.description,
                    critical=critical,
                    expectation=expectation,
                    kwargs={**kwargs, "mostly": mostly},
                )
            )
    if not checks:
        return None
    return QualitySuite(name=event.table, checks=tuple(checks))


def _presence_check(spot: layout.Spot, rule: Rule, critical: bool, mostly: float) -> QualityCheck:
    """`required_fields_present`'s expectation on one field's presence column: named
    `<column>_not_null`, or `<column>_present` for a nullable field (JSON null is a value)."""
    column = flat_name(spot.column)
    nullable = spot.field.nullable
    return QualityCheck(
        name=f"{column}_present" if nullable else f"{column}_not_null",
        rule=rule.name,
        description=f"{spot.path} is present"
        + (" (JSON null is a value)." if nullable else " and not null."),
        critical=critical,
        expectation="ExpectColumnValuesToNotBeNull",
        kwargs={"column": present_name(spot.column), "mostly": mostly},
    )


def _constraint(rule: Rule, column: str) -> tuple[str, dict[str, Any]] | None:
    """The expectation and its arguments of a constraint rule; None if GX has none."""
    c = rule.constraint
    if c.each or c.numeric_text:
        return None
    if isinstance(c, Range):
        bounds = {"min_value": c.minimum, "max_value": c.maximum}
        if c.exclusive_minimum is not None or c.exclusive_maximum is not None:
            low, high = c.lowest or (None, False), c.highest or (None, False)
            bounds = {"min_value": low[0], "max_value": high[0]}
            bounds |= {"strict_min": low[1], "strict_max": high[1]}
        return "ExpectColumnValuesToBeBetween", {"column": column, **bounds}
    if isinstance(c, Pattern):
        return "ExpectColumnValuesToMatchRegex", {"column": column, "regex": spark_pattern(c.regex)}
    if isinstance(c, AllowedValues):
        return "ExpectColumnValuesToBeInSet", {"column": column, "value_set": list(c.values)}
    if isinstance(c, MaxLength):
        return "ExpectColumnValueLengthsToBeBetween", {"column": column, "max_value": c.length}
    if isinstance(c, MinLength):
        return "ExpectColumnValueLengthsToBeBetween", {"column": column, "min_value": c.length}
    if isinstance(c, Format) and c.format not in PARSED_FORMATS:
        regex = FORMAT_PATTERNS[c.format]
        return "ExpectColumnValuesToMatchRegex", {"column": column, "regex": regex}
    if isinstance(c, NotInFuture):
        return "ExpectColumnPairValuesAToBeGreaterThanB", {
            "column_A": f"{column}__latest",
            "column_B": column,
            "or_equal": True,
            "ignore_row_if": "either_value_is_missing",
        }
    return None


def rule_outcomes(report: ValidationReport) -> dict[str, dict[str, Any]]:
    """Per rule: whether every expectation tagged with it passed, and their unexpected rows.

    Returns:
        rule -> {"passed": bool, "unexpected": int, "expectations": [check names]}.
    """
    found: dict[str, dict[str, Any]] = {}
    for outcome in report.outcomes:
        entry = found.setdefault(
            outcome.rule, {"passed": True, "unexpected": 0, "expectations": []}
        )
        entry["passed"] = entry["passed"] and outcome.success
        entry["unexpected"] += outcome.unexpected_count or 0
        entry["expectations"].append(outcome.name)
    return found


def recorded_outcomes(details: Mapping[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """The GX outcomes a watermark recorded (`details["expectations"]`), or {} without."""
    recorded = details.get("expectations")
    return recorded if isinstance(recorded, dict) else {}
