"""Constraints on a field's value; each one becomes a named rule with a severity.

    Range(minimum, maximum)      numbers: minimum <= value <= maximum (one rule for both bounds)
    Pattern(regex)               strings: the whole value matches the regular expression
    AllowedValues(values)        strings and integers: the value is one of the listed ones
    MaxLength(length)            strings: at most that many characters
    Format(format)               strings: a uuid, an ISO-8601 date-time or an email address
    NotInFuture(skew)            timestamps and dates: not later than the message's publish time
                                 (when the stream stored it) plus `skew` of allowed clock skew

A constraint's rule is named `<column>_<suffix>` (`file_size_in_range`,
`deleted_at_not_in_future`) unless it sets `rule`, and its severity is `quarantine` unless it
sets `severity`. A constraint is checked against its field's type where the field is built;
errors name the key (`pattern`, `maximum`, ...) relative to the field.
"""

from __future__ import annotations

import datetime as dt
import enum
import re
from dataclasses import dataclass
from typing import ClassVar

from pipelines.contract.datatypes import FieldType, TypeKind
from pipelines.contract.errors import ContractError

Number = int | float


class Severity(enum.StrEnum):
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


class StringFormat(enum.StrEnum):
    """The string formats a `Format` constraint checks."""

    UUID = "uuid"
    DATE_TIME = "date-time"
    EMAIL = "email"


_FORMAT_TEXT = {
    StringFormat.UUID: "a UUID such as 123e4567-e89b-12d3-a456-426614174000",
    StringFormat.DATE_TIME: "an ISO-8601 date-time with a zone, such as 2026-11-21T10:00:00Z",
    StringFormat.EMAIL: "an email address such as name@example.com",
}


@dataclass(frozen=True, kw_only=True)
class Constraint:
    """A check of one field's value.

    Attributes:
        rule: the rule's name; None for the default `<column>_<suffix>`.
        severity: what a broken rule does.
    """

    kind: ClassVar[str]  # the key that declares it in YAML (`range` for minimum/maximum)
    suffix: ClassVar[str]  # the default rule name is `<column>_<suffix>`
    types: ClassVar[frozenset[TypeKind]]  # the field types it applies to

    rule: str | None = None
    severity: Severity = Severity.QUARANTINE

    def __post_init__(self) -> None:
        object.__setattr__(self, "severity", _severity(self.severity))

    def rule_name(self, column: str) -> str:
        """The rule's name: `rule`, or `<column>_<suffix>` with dots made underscores."""
        return self.rule or f"{column.replace('.', '_')}_{self.suffix}"

    def check(self, field_type: FieldType) -> None:
        """Raises `ContractError` (path: the constraint's key) if it cannot apply to the type."""
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
    """`minimum <= value <= maximum`; either bound may be left out."""

    kind = "range"
    suffix = "in_range"
    types = frozenset({TypeKind.INTEGER, TypeKind.LONG, TypeKind.DOUBLE, TypeKind.DECIMAL})

    minimum: Number | None = None
    maximum: Number | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        for key in ("minimum", "maximum"):
            value = getattr(self, key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, Number)):
                raise ContractError(f"{key} must be a number, got {value!r}", path=(key,))
        if self.minimum is None and self.maximum is None:
            raise ContractError("a range needs a minimum, a maximum or both", path=("minimum",))
        if None not in (self.minimum, self.maximum) and self.minimum > self.maximum:
            raise ContractError(
                f"minimum {self.minimum!r} is greater than maximum {self.maximum!r}",
                path=("maximum",),
            )

    def describe(self, path: str) -> str:
        if self.maximum is None:
            return f"{path} is at least {_number(self.minimum)}."
        if self.minimum is None:
            return f"{path} is at most {_number(self.maximum)}."
        return f"{path} is between {_number(self.minimum)} and {_number(self.maximum)}."


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
    """The value is one of `values` (JSON Schema's `enum`)."""

    kind = "enum"
    suffix = "in_allowed_values"
    types = frozenset({TypeKind.STRING, TypeKind.INTEGER, TypeKind.LONG})

    values: tuple[str | int, ...]

    def __post_init__(self) -> None:
        super().__post_init__()
        values = self.values
        if not isinstance(values, list | tuple) or not values:
            raise ContractError(f"enum must be a non-empty list, got {values!r}", path=("enum",))
        object.__setattr__(self, "values", tuple(values))
        if len(set(values)) != len(values):
            raise ContractError(f"enum lists a value twice: {list(values)!r}", path=("enum",))

    def check(self, field_type: FieldType) -> None:
        super().check(field_type)
        wanted = str if field_type.kind is TypeKind.STRING else int
        for value in self.values:
            if isinstance(value, bool) or not isinstance(value, wanted):
                raise ContractError(
                    f"enum value {value!r} is not a {field_type} (every value must be)",
                    path=("enum",),
                )

    def describe(self, path: str) -> str:
        return f"{path} is one of {', '.join(str(v) for v in self.values)}."


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
        return self.rule or f"{column.replace('.', '_')}_is_{format_name}"

    def describe(self, path: str) -> str:
        return f"{path} is {_FORMAT_TEXT[self.format]}."


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


CONSTRAINT_KINDS: dict[str, type[Constraint]] = {
    c.kind: c for c in (Range, Pattern, AllowedValues, MaxLength, Format, NotInFuture)
}

_DURATION = re.compile(
    r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|sec|secs|seconds?|m|min|mins|minutes?|h|hours?|d|days?)\s*$"
)
_ISO_DURATION = re.compile(r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(value: object) -> dt.timedelta:
    """A duration: seconds as a number, `5m`, `30 seconds`, `2 hours`, or ISO-8601 `PT5M`.

    Raises:
        ContractError: the value is none of those, or negative.
    """
    if isinstance(value, dt.timedelta):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return dt.timedelta(seconds=value)
    if isinstance(value, str):
        match = _DURATION.match(value.lower())
        if match:
            unit = match.group(2)
            scale = _UNITS["ms" if unit == "ms" else "m" if unit.startswith("m") else unit[0]]
            return dt.timedelta(seconds=float(match.group(1)) * scale)
        iso = _ISO_DURATION.match(value.strip().upper())
        if iso and value.strip().upper() not in ("P", "PT"):
            days, hours, minutes, seconds = (float(g) if g else 0.0 for g in iso.groups())
            return dt.timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)
    raise ContractError(
        f"bad duration {value!r}; write e.g. 5m, 30s, 2 hours, PT5M, or a number of seconds"
    )


def format_duration(delta: dt.timedelta) -> str:
    """`5 minutes`, `30 seconds`, `2 hours`, `1 day`: the largest unit that divides it."""
    seconds = delta.total_seconds()
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds and seconds % size == 0:
            count = int(seconds // size)
            return f"{count} {unit}{'s' if count != 1 else ''}"
    count = int(seconds) if seconds == int(seconds) else seconds
    return f"{count} second{'s' if count != 1 else ''}"
