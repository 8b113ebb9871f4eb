"""A contract's rules as Spark Columns over a checked frame (`pipelines.silver.parse`).

Each rule gives (broken, detail): the built-in ones read the checked frame's internal
columns, each constraint rule the typed value of its column in every event type it applies
to. A rule that cannot be evaluated (its field missing or mistyped, or a row of an event
type it does not apply to) is not reported as broken: the missing or mistyped field is.
When the payload is not a JSON object, only `parseable_json` is.

A constraint on each element of an array (`each`) breaks when one element breaks it (null
elements are not judged); its detail shows the first such element. So does a constraint on a
member of an array's objects (`lines_each_qty_in_range`: `lines[1].qty 0 is outside (0,
100]`). The size and multiple constraints are judged in `pipelines.silver.size_rules`.

`not_in_future` compares with the message's publish time (`published`, when the stream
stored it) plus the rule's skew, so a row is judged the same however late it is processed.
"""

from __future__ import annotations

import datetime as dt
import decimal
from dataclasses import replace

from pyspark.sql import Column
from pyspark.sql import functions as F

from pipelines.contract import (
    AllowedValues,
    Contract,
    FieldType,
    Format,
    MaxLength,
    NotInFuture,
    Pattern,
    Range,
    Rule,
    Severity,
    StringFormat,
    TypeKind,
)
from pipelines.contract import rules as builtin
from pipelines.contract.constraints import DECIMAL_TEXT_TYPE
from pipelines.contract.formats import FORMAT_REGEX
from pipelines.silver import layout
from pipelines.silver.layout import (
    DUPLICATE_OF,
    EVENT_ID,
    EVENT_TYPE,
    MISSING_FIELDS,
    MISTYPED_FIELDS,
    PAYLOAD_PROBLEM,
    SCHEMA_ERRORS,
)
from pipelines.silver.size_rules import size_check, text_decimal
from pipelines.silver.variant_types import DATE_FORMAT, ISO_TIMESTAMP_FORMAT

FORMAT_PATTERNS = FORMAT_REGEX  # Java regular expressions per format (date-time: parsed)
_MICROS_PER_DAY = 86_400_000_000


def spark_pattern(pattern: str) -> str:
    """`pattern` for Spark's `rlike` (Java), a final unescaped `$` made `\\z` (the very end).

    Java's `$` also matches before a final line break, so `^user-[0-9]{3,}$` would accept
    "user-001\\n"; Python's `re.fullmatch` and JSON Schema would not.
    """
    if not pattern.endswith("$"):
        return pattern
    backslashes = len(pattern[:-1]) - len(pattern[:-1].rstrip("\\"))
    return pattern if backslashes % 2 else pattern[:-1] + r"\z"


def plus(timestamp: Column, delta: dt.timedelta) -> Column:
    """`timestamp + delta`, exact to the microsecond, whatever the session time zone."""
    return F.timestamp_micros(
        F.unix_micros(timestamp) + F.lit(delta // dt.timedelta(microseconds=1))
    )


def latest_allowed(constraint: NotInFuture, kind: TypeKind) -> Column:
    """The latest value a `not_in_future` field may hold: the row's publish time plus the
    skew (for a date: that instant's UTC day)."""
    latest = plus(F.col("published"), constraint.skew)
    if kind is TypeKind.DATE:
        return F.date_from_unix_date(F.floor(F.unix_micros(latest) / _MICROS_PER_DAY).cast("int"))
    return latest


def _iso(column: Column) -> Column:
    return F.date_format(column, "yyyy-MM-dd'T'HH:mm:ss.SSSXXX")


def _quoted(column: Column) -> Column:
    return F.concat(F.lit("'"), column.cast("string"), F.lit("'"))


def _literal(value: object, kind: TypeKind) -> Column:
    """A bound or allowed value as a literal compared exactly with a column of `kind`: a
    decimal for decimal columns, and for integer columns when it has a fraction."""
    fractional = isinstance(value, float) and kind in (TypeKind.INTEGER, TypeKind.LONG)
    if kind is TypeKind.DECIMAL or fractional:
        return F.lit(decimal.Decimal(str(value)))
    return F.lit(value)


def _constraint(rule: Rule, value: Column, field_type: FieldType) -> tuple[Column, Column]:
    """(broken, detail) of a constraint rule on the typed `value` (each element with `each`)."""
    c = rule.constraint
    if rule.member is not None:
        return _member(rule, value, field_type.element)
    if not c.each:
        return _judge(c, rule.path, value, field_type)
    element, part = field_type.element, "an element"
    if field_type.kind is TypeKind.MAP:
        value, part = F.map_values(value), "a value"

    def breaks(e: Column) -> Column:
        return F.coalesce(_judge(c, rule.path, e, element)[0], F.lit(False))

    bad = F.filter(value, breaks)
    _, first = _judge(c, f"{part} of {rule.path}:", F.element_at(bad, 1), element)
    return F.size(bad) > 0, first


def _member(rule: Rule, elements: Column, element: FieldType) -> tuple[Column, Column]:
    """(broken, detail) of a constraint on a member of an array's objects: broken when the
    member of one element breaks it (absent or null members are not judged); the detail
    shows the first such element's member, with the element's 0-based index."""
    member_type, parts = element, rule.member.split(".")
    for part in parts:
        member_type = next(f for f in member_type.fields if f.column == part).type

    def member(e: Column) -> Column:
        for part in parts:
            e = e.getField(part)
        return e

    def breaks(e: Column) -> Column:
        broken, _ = _judge(rule.constraint, rule.path, member(e), member_type)
        return F.coalesce(broken, F.lit(False))

    flags = F.transform(elements, breaks)
    index = F.array_position(flags, True)
    array_path, _, member_path = rule.path.partition("[].")
    first = F.element_at(elements, index.cast("int"))
    _, detail = _judge(rule.constraint, "", member(first), member_type)
    where = F.concat(F.lit(f"{array_path}["), (index - 1).cast("string"), F.lit(f"].{member_path}"))
    return index > 0, F.concat(where, detail)


def _range(c: Range, path: str, value: Column, kind: TypeKind) -> tuple[Column, Column]:
    ok = F.lit(True)
    if c.minimum is not None:
        ok = ok & (value >= _literal(c.minimum, kind))
    if c.maximum is not None:
        ok = ok & (value <= _literal(c.maximum, kind))
    if c.exclusive_minimum is not None:
        ok = ok & (value > _literal(c.exclusive_minimum, kind))
    if c.exclusive_maximum is not None:
        ok = ok & (value < _literal(c.exclusive_maximum, kind))
    return ~ok, F.concat(F.lit(f"{path} "), value.cast("string"), F.lit(_outside(c)))


def _outside(c: Range) -> str:
    """` is outside [low, high]`, each bracket open for an exclusive bound."""
    low = "[-inf" if c.lowest is None else f"{'(' if c.lowest[1] else '['}{c.lowest[0]}"
    high = "inf]" if c.highest is None else f"{c.highest[0]}{')' if c.highest[1] else ']'}"
    return f" is outside {low}, {high}"


def _numeric_text(c, path: str, text: Column) -> tuple[Column, Column]:
    """A number constraint on a number written as text (pydantic's Decimal): judged on the
    text as decimal(38,18); text that is no number is the field's pattern's to report, a
    number with more digits than that cannot be judged exactly and breaks the rule."""
    number, exact = text_decimal(text)
    broken, _ = _judge(replace(c, numeric_text=False), path, number, DECIMAL_TEXT_TYPE)
    inexact = number.isNotNull() & ~exact
    wrong = _outside(c) if isinstance(c, Range) else f" is not a multiple of {c.exact:f}"
    why = F.when(inexact, F.lit(" has too many digits to be judged exactly")).otherwise(wrong)
    return inexact | (exact & broken), F.concat(F.lit(f"{path} "), _quoted(text), why)


def _format(c: Format, value: Column) -> Column:
    """Whether a string is of the constraint's format."""
    if c.format is StringFormat.DATE_TIME:
        return F.try_to_timestamp(value, F.lit(ISO_TIMESTAMP_FORMAT)).isNotNull()
    ok = value.rlike(FORMAT_REGEX[c.format])
    if c.format is StringFormat.DATE:
        ok = ok & F.try_to_date(value, DATE_FORMAT).isNotNull()
    return ok


def _judge(c, path: str, value: Column, field_type: FieldType) -> tuple[Column, Column]:
    """(broken, detail) of constraint `c` on one typed value."""
    if c.numeric_text:
        return _numeric_text(c, path, value)
    kind = field_type.kind
    sized = size_check(c, path, value, field_type)
    if sized is not None:
        return sized
    if isinstance(c, Range):
        return _range(c, path, value, kind)
    if isinstance(c, Pattern):
        return ~value.rlike(spark_pattern(c.regex)), F.concat(
            F.lit(f"{path} "), _quoted(value), F.lit(f" does not match {c.regex}")
        )
    if isinstance(c, AllowedValues):
        return ~value.isin(*(_literal(v, kind) for v in c.values)), F.concat(
            F.lit(f"{path} "),
            _quoted(value),
            F.lit(f" is not one of {', '.join(map(str, c.values))}"),
        )
    if isinstance(c, MaxLength):
        return F.length(value) > c.length, F.concat(
            F.lit(f"{path} is "),
            F.length(value).cast("string"),
            F.lit(f" characters long, more than {c.length}"),
        )
    if isinstance(c, Format):
        return ~_format(c, value), F.concat(
            F.lit(f"{path} "), _quoted(value), F.lit(f" is not a valid {c.format}")
        )
    if isinstance(c, NotInFuture):
        latest = latest_allowed(c, kind)
        if kind is TypeKind.DATE:
            return value > latest, F.concat(
                F.lit(f"{path} "), value.cast("string"),
                F.lit(" is after the day of its publish time + skew ("),
                latest.cast("string"), F.lit(")"),
            )  # fmt: skip
        return value > latest, F.concat(
            F.lit(f"{path} "), _iso(value), F.lit(" is later than its publish time + clock skew ("),
            _iso(latest), F.lit(")"),
        )  # fmt: skip
    raise TypeError(f"a constraint silver cannot check: {c!r}")


def _value(contract: Contract, event: str, column: str) -> Column:
    value = F.col(layout.event_struct(contract, event))
    for part in column.split("."):
        value = value.getField(part)
    return value


def _field_type(contract: Contract, event: str, rule: Rule) -> FieldType:
    path = rule.path if rule.member is None else rule.path.partition("[].")[0]
    spot = next(s for s in layout.spots(contract.event_type(event).fields) if s.path == path)
    return spot.field.type


def _constraint_rule(contract: Contract, rule: Rule) -> tuple[Column, Column]:
    broken, detail = F.lit(False), F.lit(None).cast("string")
    for event in reversed(rule.applies_to):
        value = _value(contract, event, rule.column)
        check, text = _constraint(rule, value, _field_type(contract, event, rule))
        here = F.col(EVENT_TYPE) == event
        broken = F.when(here, check).otherwise(broken)
        detail = F.when(here, text).otherwise(detail)
    return broken, detail


def _unknown_rule(contract: Contract, rule: Rule) -> tuple[Column, Column]:
    broken, detail = F.lit(False), F.lit(None).cast("string")
    for event in reversed(rule.applies_to):
        names = F.array_sort(F.map_keys(F.col(layout.unknown_map(contract, event))))
        here = F.col(EVENT_TYPE) == event
        broken = F.when(here, F.size(names) > 0).otherwise(broken)
        detail = F.when(here, F.concat(F.lit("undeclared: "), F.array_join(names, ", "))).otherwise(
            detail
        )
    return broken, detail


def _builtin(contract: Contract, rule: Rule) -> tuple[Column, Column]:
    envelope, names = contract.envelope, [e.name for e in contract.event_types]
    event_type, missing, mistyped = F.col(EVENT_TYPE), F.col(MISSING_FIELDS), F.col(MISTYPED_FIELDS)
    if rule.name == builtin.PARSEABLE_JSON:
        return F.col(PAYLOAD_PROBLEM).isNotNull(), F.col(PAYLOAD_PROBLEM)
    if rule.name == builtin.KNOWN_EVENT_TYPE and envelope.event_type is None:
        subjects = "; ".join(f"{e.name}: {', '.join(e.subjects)}" for e in contract.event_types)
        detail = F.concat(
            F.lit("subject "), _quoted(F.col("subject")), F.lit(f" is none of ({subjects})")
        )
        return event_type.isNull(), detail
    if rule.name == builtin.KNOWN_EVENT_TYPE:
        known = ", ".join(names)
        detail = F.when(
            event_type.isNull(), F.lit(f"{envelope.event_type} is not a string; expected {known}")
        ).otherwise(
            F.concat(
                F.lit(f"{envelope.event_type} "), _quoted(event_type), F.lit(f" is not {known}")
            )
        )
        return ~F.coalesce(event_type.isin(*names), F.lit(False)), detail
    if rule.name == builtin.REQUIRED_FIELDS_PRESENT:
        return F.size(missing) > 0, F.concat(
            F.lit("missing or null: "), F.array_join(missing, ", ")
        )
    if rule.name == builtin.FIELD_TYPES_VALID:
        return F.size(mistyped) > 0, F.concat(F.lit("wrong type: "), F.array_join(mistyped, ", "))
    if rule.name == builtin.SCHEMA_VALID:
        errors = F.col(SCHEMA_ERRORS)
        return F.size(errors) > 0, F.array_join(errors["message"], "; ")
    if rule.name == builtin.EVENT_ID_UNIQUE:
        first = F.col(DUPLICATE_OF)
        return first.isNotNull(), F.concat(
            F.lit(f"{envelope.event_id} "), _quoted(F.col(EVENT_ID)),
            F.lit(" was first seen in stream "),
            _quoted(first["stream"]), F.lit(" at seq "), first["seq"].cast("string"),
            F.lit("; this later copy is not kept"),
        )  # fmt: skip
    return _unknown_rule(contract, rule)


def silver_rules(contract: Contract) -> tuple[Rule, ...]:
    """The rules silver checks: the contract's, and without a discriminator one more.

    A contract without `envelope.event_type` tells event types apart by subject; a row on a
    subject no event type lists has no table, so it breaks `known_event_type` too.
    """
    if contract.envelope.event_type is not None:
        return contract.rules
    every = tuple(e.name for e in contract.event_types)
    by_subject = Rule(
        builtin.KNOWN_EVENT_TYPE,
        "The message's subject matches the subjects of a declared event type.",
        every,
    )
    first, *others = contract.rules
    return (first, by_subject, *others)


def checks(contract: Contract) -> dict[str, tuple[Column, Column]]:
    """Per rule name, in `silver_rules` order: (broken, detail) on a checked frame.

    `event_id_unique` reads `_duplicate_of` (`pipelines.silver.duplicates.mark_duplicates`).
    """
    return {
        rule.name: _builtin(contract, rule) if rule.builtin else _constraint_rule(contract, rule)
        for rule in silver_rules(contract)
    }


def violations(contract: Contract) -> dict[str, Column]:
    """One boolean Column per rule name, true where a row breaks it; never null.

    Args:
        contract: the stream's event contract.

    Returns:
        The Columns, keyed and ordered like `silver_rules(contract)`.
    """
    parsed = F.col(PAYLOAD_PROBLEM).isNull()
    result = {}
    for name, (broken, _) in checks(contract).items():
        broken = F.coalesce(broken, F.lit(False))
        result[name] = broken if name == builtin.PARSEABLE_JSON else parsed & broken
    return result


def failed_rules(contract: Contract, severities: tuple[Severity, ...] | None = None) -> Column:
    """array<string>: the rules a row breaks, in `silver_rules` order (empty if none).

    Args:
        contract: the stream's event contract.
        severities: only rules of these severities; None for all.
    """
    broken = violations(contract)
    rules = silver_rules(contract)
    rules = [r for r in rules if severities is None or r.severity in severities]
    return F.array_compact(F.array(*(F.when(broken[r.name], F.lit(r.name)) for r in rules)))


def failure_error(contract: Contract) -> Column:
    """A readable explanation: `<rule>: <detail>` per broken rule, joined by `; `."""
    broken, found = violations(contract), checks(contract)
    parts = (
        F.when(broken[r.name], F.concat(F.lit(f"{r.name}: "), found[r.name][1]))
        for r in silver_rules(contract)
    )
    return F.concat_ws("; ", *parts)
