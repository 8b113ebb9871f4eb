"""Constraints on a field's value; each one becomes a named rule with a severity.

    Range(minimum, maximum,      numbers: minimum <= value <= maximum, exclusive_minimum <
          exclusive_minimum,     value < exclusive_maximum (one rule for all the bounds)
          exclusive_maximum)
    Pattern(regex)               strings: the regular expression is found in the value
                                 (anywhere, as JSON Schema's `pattern`: anchor it with ^...$
                                 to match the whole value)
    AllowedValues(values)        strings, numbers, booleans: the value is one of the listed ones
    MaxLength(length)            strings: at most that many characters (Unicode code points)
    Format(format)               strings: a uuid, date-time, email, uri, ... (`formats`)
    NotInFuture(skew)            timestamps and dates: not later than the message's publish time
                                 (when the stream stored it) plus `skew` of allowed clock skew

A constraint's rule is named `<column>_<suffix>` (`file_size_in_range`,
`deleted_at_not_in_future`) unless it sets `rule`, and its severity is `quarantine` unless it
sets `severity`. The constraints on sizes and multiples (`min_length`, `min_items`,
`unique_items`, `multiple_of`, ...) are in `pipelines.contract.sizes`, with
`CONSTRAINT_KINDS`, every kind by its key. A constraint is checked against its field's type
where the field is built; errors name the key (`pattern`, `maximum`, ...) relative to the field.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import ClassVar

from pipelines.contract.datatypes import NUMERIC_KINDS, FieldType, TypeKind, stable_repr
from pipelines.contract.durations import format_duration
from pipelines.contract.durations import parse_duration as parse_duration  # re-exported
from pipelines.contract.errors import ContractError
from pipelines.contract.formats import FORMAT_TEXT, StringFormat
from resources.backports import StrEnum

Number = int | float
# What a number written as text is judged as (`Constraint.numeric_text`).
DECIMAL_TEXT_TYPE = FieldType(TypeKind.DECIMAL, precision=38, scale=18)


class Severity(StrEnum):
    """What a broken rule does."""

    QUARANTINE = "quarantine"  # the row goes to quarantine instead of its silver table
    WARN = "warn"  # the rule's asset check warns; the row stays in silver
    BLOCK = "block"  # the rule's asset check blocks: downstream assets do not run
    QUARANTINE_BLOCK = "quarantine+block"  # both: the row is quarantined and the check blocks

    @property
    def quarantines(self) -> bool:
        """Whether a row breaking the rule goes to quarantine."""
        return self in (Severity.QUARANTINE, Severity.QUARANTINE_BLOCK)

    @property
    def blocks(self) -> bool:
        """Whether the rule's failing asset check blocks what depends on its table."""
        return self in (Severity.BLOCK, Severity.QUARANTINE_BLOCK)


@dataclass(frozen=True, kw_only=True)
class Constraint:
    """A check of one field's value.

    Attributes:
        rule: the rule's name; None for the default `<column>_<suffix>`
            (`<column>_each_<suffix>` with `each`).
        severity: what a broken rule does.
        each: it checks every element of an array field (every value of a map) rather than
            the array (JSON Schema's keywords under `items`); null elements are not checked.
        numeric_text: a number constraint judging a string field's text as a decimal
            number (pydantic's Decimal, written as a string); text that is no number is
            left to the field's pattern.
    """

    kind: ClassVar[str]  # the key that declares it in YAML (`range` for minimum/maximum)
    suffix: ClassVar[str]  # the default rule name is `<column>_<suffix>`
    types: ClassVar[frozenset[TypeKind]]  # the field types it applies to

    rule: str | None = None
    severity: Severity = Severity.QUARANTINE
    # Not in the repr (the fingerprint) of constraints that leave it false; the rule name and
    # the field's type already tell an element's constraint apart.
    each: bool = dataclass_field(default=False, repr=False)
    numeric_text: bool = dataclass_field(default=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "severity", _severity(self.severity))

    def name_stem(self, column: str) -> str:
        """`<column>` (dots made underscores), `<column>_each` for an element's constraint."""
        return column.replace(".", "_") + ("_each" if self.each else "")

    def rule_name(self, column: str) -> str:
        """The rule's name: `rule`, or `<column>_<suffix>` with dots made underscores."""
        return self.rule or f"{self.name_stem(column)}_{self.suffix}"

    def subject(self, path: str, field_type: FieldType | None = None) -> str:
        """What the rule's sentence is about: the field, or each element (value) of it."""
        if not self.each:
            return path
        part = "value" if field_type is not None and field_type.kind is TypeKind.MAP else "element"
        return f"each {part} of {path}"

    def check(self, field_type: FieldType) -> None:
        """Raises `ContractError` (path: the constraint's key) if it cannot apply to the type
        (with `each`: to the array's element type)."""
        if self.each:
            if field_type.kind not in (TypeKind.ARRAY, TypeKind.MAP):
                raise ContractError(
                    f"{self.kind} of each element applies to arrays and maps, not {field_type}",
                    path=(self.kind,),
                )
            field_type = field_type.element
        if self.numeric_text:
            if field_type.kind is not TypeKind.STRING:
                raise ContractError(
                    f"{self.kind} of a number written as text applies to strings, not {field_type}",
                    path=(self.kind,),
                )
            field_type = DECIMAL_TEXT_TYPE
        self.check_type(field_type)

    def check_type(self, field_type: FieldType) -> None:
        """Raises `ContractError` if the constraint cannot apply to a value of the type."""
        if field_type.kind not in self.types:
            allowed = ", ".join(sorted(self.types))
            raise ContractError(
                f"{self.kind} applies to {allowed} fields, not {field_type}; remove it or "
                "change the field's type",
                path=(self.kind,),
            )

    def describe(self, path: str) -> str:
        """One readable sentence saying what a valid value of the field at `path` is."""
        raise NotImplementedError


def _severity(value: object) -> Severity:
    try:
        return Severity(value)
    except ValueError:
        choices = ", ".join(s.value for s in Severity)
        raise ContractError(
            f"unknown severity {value!r}; use one of {choices}", path=("severity",)
        ) from None


def _number(value: Number | None) -> str:
    return f"{value:,}" if isinstance(value, int) else str(value)


@dataclass(frozen=True, kw_only=True)
class Range(Constraint):
    """`minimum <= value <= maximum`, `exclusive_minimum < value < exclusive_maximum`; any
    bound may be left out (JSON Schema's minimum, maximum, exclusiveMinimum, exclusiveMaximum)."""

    kind = "range"
    suffix = "in_range"
    types = NUMERIC_KINDS

    minimum: Number | None = None
    maximum: Number | None = None
    exclusive_minimum: Number | None = None
    exclusive_maximum: Number | None = None

    def __repr__(self) -> str:
        return stable_repr(self, ("exclusive_minimum", "exclusive_maximum"))

    def __post_init__(self) -> None:
        super().__post_init__()
        for key in ("minimum", "maximum", "exclusive_minimum", "exclusive_maximum"):
            value = getattr(self, key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, Number)):
                raise ContractError(f"{key} must be a number, got {value!r}", path=(key,))
        if self.lowest is None and self.highest is None:
            raise ContractError("a range needs a minimum, a maximum or both", path=("minimum",))
        if None not in (self.lowest, self.highest):
            (low, low_open), (high, high_open) = self.lowest, self.highest
            if not (low_open or high_open) and exact(low) > exact(high):
                raise ContractError(
                    f"minimum {low!r} is greater than maximum {high!r}", path=("maximum",)
                )
            if exact(low) > exact(high) or (exact(low) == exact(high) and (low_open or high_open)):
                raise ContractError(
                    f"no number is {self._low_text()} and {self._high_text()}",
                    path=("exclusive_maximum" if high_open else "maximum",),
                )

    @property
    def lowest(self) -> tuple[Number, bool] | None:
        """The tighter lower bound and whether it is exclusive; None without one."""
        return _tighter(self.minimum, self.exclusive_minimum, max)

    @property
    def highest(self) -> tuple[Number, bool] | None:
        """The tighter upper bound and whether it is exclusive; None without one."""
        return _tighter(self.maximum, self.exclusive_maximum, min)

    def _low_text(self) -> str:
        low, open_ = self.lowest
        return f"{'greater than' if open_ else 'at least'} {_number(low)}"

    def _high_text(self) -> str:
        high, open_ = self.highest
        return f"{'less than' if open_ else 'at most'} {_number(high)}"

    def describe(self, path: str) -> str:
        if self.lowest is None:
            return f"{path} is {self._high_text()}."
        if self.highest is None:
            return f"{path} is {self._low_text()}."
        if not self.lowest[1] and not self.highest[1]:
            low, high = _number(self.lowest[0]), _number(self.highest[0])
            return f"{path} is between {low} and {high}."
        return f"{path} is {self._low_text()} and {self._high_text()}."


def exact(value: Number) -> decimal.Decimal:
    """A bound as the decimal number it was written as (`0.1` is exactly 1/10)."""
    return decimal.Decimal(str(value))


def _tighter(closed: Number | None, open_: Number | None, pick) -> tuple[Number, bool] | None:
    if open_ is None:
        return None if closed is None else (closed, False)
    if closed is None:
        return (open_, True)
    chosen = pick(exact(closed), exact(open_))
    return (open_, True) if chosen == exact(open_) else (closed, False)


@dataclass(frozen=True, kw_only=True)
class Pattern(Constraint):
    """The whole value matches `regex` (a `^...$` pattern; Java and Python syntax agree)."""

    kind = "pattern"
    suffix = "matches_pattern"
    types = frozenset({TypeKind.STRING})

    regex: str

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.regex, str) or not self.regex:
            raise ContractError(
                f"pattern must be a regular expression, got {self.regex!r}", path=("pattern",)
            )
        try:
            re.compile(self.regex)
        except re.error as error:
            raise ContractError(
                f"invalid regular expression {self.regex!r}: {error}", path=("pattern",)
            ) from None

    def describe(self, path: str) -> str:
        return f"{path} matches {self.regex}."


@dataclass(frozen=True, kw_only=True)
class AllowedValues(Constraint):
    """The value is one of `values` (JSON Schema's `enum`, or `const` as one value)."""

    kind = "enum"
    suffix = "in_allowed_values"
    types = frozenset({TypeKind.STRING, TypeKind.BOOLEAN, *NUMERIC_KINDS})

    values: tuple[str | int | float | bool, ...]

    def __post_init__(self) -> None:
        super().__post_init__()
        values = self.values
        if not isinstance(values, list | tuple) or not values:
            raise ContractError(f"enum must be a non-empty list, got {values!r}", path=("enum",))
        object.__setattr__(self, "values", tuple(values))
        keys = [(type(v) is bool, v) for v in values]
        if len(set(keys)) != len(keys):
            raise ContractError(f"enum lists a value twice: {list(values)!r}", path=("enum",))

    def check_type(self, field_type: FieldType) -> None:
        super().check_type(field_type)
        kind = field_type.kind
        for value in self.values:
            if kind is TypeKind.STRING:
                fits = isinstance(value, str)
            elif kind is TypeKind.BOOLEAN:
                fits = isinstance(value, bool)
            elif kind in (TypeKind.INTEGER, TypeKind.LONG):
                fits = isinstance(value, int) and not isinstance(value, bool)
            else:
                fits = isinstance(value, int | float) and not isinstance(value, bool)
            if not fits:
                raise ContractError(
                    f"enum value {value!r} is not a {field_type} (every value must be)",
                    path=("enum",),
                )

    def describe(self, path: str) -> str:
        shown = [str(v).lower() if isinstance(v, bool) else str(v) for v in self.values]
        return f"{path} is one of {', '.join(shown)}."


@dataclass(frozen=True, kw_only=True)
class MaxLength(Constraint):
    """At most `length` characters."""

    kind = "max_length"
    suffix = "max_length"
    types = frozenset({TypeKind.STRING})

    length: int

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.length, bool) or not isinstance(self.length, int) or self.length < 1:
            raise ContractError(
                f"max_length must be a positive integer, got {self.length!r}",
                path=("max_length",),
            )

    def describe(self, path: str) -> str:
        return f"{path} is at most {self.length:,} characters long."


@dataclass(frozen=True, kw_only=True)
class Format(Constraint):
    """The value is a well-formed uuid, ISO-8601 date-time or email address."""

    kind = "format"
    suffix = "format"
    types = frozenset({TypeKind.STRING})

    format: StringFormat

    def __post_init__(self) -> None:
        super().__post_init__()
        try:
            object.__setattr__(self, "format", StringFormat(self.format))
        except ValueError:
            choices = ", ".join(f.value for f in StringFormat)
            raise ContractError(
                f"unknown format {self.format!r}; use one of {choices}", path=("format",)
            ) from None

    def rule_name(self, column: str) -> str:
        """The rule's name: `rule`, or `<column>_is_<format>` (`event_id_is_uuid`)."""
        format_name = self.format.value.replace("-", "_")
        return self.rule or f"{self.name_stem(column)}_is_{format_name}"

    def describe(self, path: str) -> str:
        return f"{path} is {FORMAT_TEXT[self.format]}."


@dataclass(frozen=True, kw_only=True)
class NotInFuture(Constraint):
    """Not later than the message's publish time plus `skew`."""

    kind = "not_in_future"
    suffix = "not_in_future"
    types = frozenset({TypeKind.TIMESTAMP, TypeKind.DATE})

    skew: dt.timedelta = dt.timedelta(0)  # allowed clock skew

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.skew, dt.timedelta) or self.skew < dt.timedelta(0):
            raise ContractError(
                f"not_in_future needs a skew of zero or more, got {self.skew!r}",
                path=("not_in_future",),
            )

    def describe(self, path: str) -> str:
        return (
            f"{path} is not later than the time the stream stored the message plus "
            f"{format_duration(self.skew)} of allowed clock skew."
        )
