"""Constraints on sizes and multiples (JSON Schema's validation vocabulary), and every kind.

    MinLength(length)            strings: at least that many characters (Unicode code points)
    MultipleOf(factor)           numbers: value / factor is an integer, in decimal arithmetic
    MinItems(count), MaxItems    arrays: at least / at most that many elements
    UniqueItems()                arrays: no two elements are equal
    MinProperties(count),        maps: at least / at most that many keys; structs: that many
      MaxProperties              members present (not null)

Each is its own rule, `<column>_<suffix>` (`name_min_length`, `amount_multiple_of`,
`tags_min_items`, `tags_unique_items`, ...). `CONSTRAINT_KINDS` maps every kind's key (as the
YAML form writes it) to its class, those of `pipelines.contract.constraints` included.
"""

from __future__ import annotations

import decimal
from dataclasses import dataclass

from pipelines.contract.constraints import (
    AllowedValues,
    Constraint,
    Format,
    MaxLength,
    NotInFuture,
    Number,
    Pattern,
    Range,
    exact,
)
from pipelines.contract.datatypes import NUMERIC_KINDS, TypeKind
from pipelines.contract.errors import ContractError

# multipleOf is judged as decimal(38,18): a factor needs at most 18 digits after the point.
MAX_FACTOR_SCALE = 18


def _count(value: object, key: str, *, least: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ContractError(
            f"{key} must be an integer of at least {least}, got {value!r}", path=(key,)
        )


def _plural(count: int, word: str, words: str) -> str:
    return f"{count:,} {word if count == 1 else words}"


@dataclass(frozen=True, kw_only=True)
class MinLength(Constraint):
    """At least `length` characters."""

    kind = "min_length"
    suffix = "min_length"
    types = frozenset({TypeKind.STRING})

    length: int

    def __post_init__(self) -> None:
        super().__post_init__()
        _count(self.length, "min_length", least=0)

    def describe(self, path: str) -> str:
        return f"{path} is at least {_plural(self.length, 'character', 'characters')} long."


@dataclass(frozen=True, kw_only=True)
class MultipleOf(Constraint):
    """`value / factor` is an integer, judged on the decimal value as written (0.3 is a
    multiple of 0.1), never on a rounded binary float."""

    kind = "multiple_of"
    suffix = "multiple_of"
    types = NUMERIC_KINDS

    factor: Number

    def __post_init__(self) -> None:
        super().__post_init__()
        value = self.factor
        if isinstance(value, bool) or not isinstance(value, Number) or value <= 0:
            raise ContractError(
                f"multiple_of must be a number greater than 0, got {value!r}",
                path=("multiple_of",),
            )
        digits = self.exact.as_tuple()
        scale = max(0, -digits.exponent)
        if scale > MAX_FACTOR_SCALE or len(digits.digits) + digits.exponent > 38 - 18:
            raise ContractError(
                f"multiple_of {value!r} cannot be judged exactly: it needs at most "
                f"{MAX_FACTOR_SCALE} digits after the point and 20 before",
                path=("multiple_of",),
            )

    @property
    def exact(self) -> decimal.Decimal:
        """The factor as the decimal number it was written as."""
        return exact(self.factor)

    def describe(self, path: str) -> str:
        return f"{path} is a multiple of {self.exact.normalize():f}."


@dataclass(frozen=True, kw_only=True)
class MinItems(Constraint):
    """At least `count` elements."""

    kind = "min_items"
    suffix = "min_items"
    types = frozenset({TypeKind.ARRAY})

    count: int

    def __post_init__(self) -> None:
        super().__post_init__()
        _count(self.count, "min_items", least=0)

    def describe(self, path: str) -> str:
        return f"{path} has at least {_plural(self.count, 'element', 'elements')}."


@dataclass(frozen=True, kw_only=True)
class MaxItems(Constraint):
    """At most `count` elements."""

    kind = "max_items"
    suffix = "max_items"
    types = frozenset({TypeKind.ARRAY})

    count: int

    def __post_init__(self) -> None:
        super().__post_init__()
        _count(self.count, "max_items", least=0)

    def describe(self, path: str) -> str:
        return f"{path} has at most {_plural(self.count, 'element', 'elements')}."


@dataclass(frozen=True, kw_only=True)
class UniqueItems(Constraint):
    """No two elements are equal (numbers by value, objects member by member)."""

    kind = "unique_items"
    suffix = "unique_items"
    types = frozenset({TypeKind.ARRAY})

    def describe(self, path: str) -> str:
        return f"{path} has no two equal elements."


@dataclass(frozen=True, kw_only=True)
class MinProperties(Constraint):
    """At least `count` keys (a map) or members present and not null (a struct)."""

    kind = "min_properties"
    suffix = "min_properties"
    types = frozenset({TypeKind.MAP, TypeKind.STRUCT})

    count: int

    def __post_init__(self) -> None:
        super().__post_init__()
        _count(self.count, "min_properties", least=0)

    def describe(self, path: str) -> str:
        return f"{path} has at least {_plural(self.count, 'property', 'properties')}."


@dataclass(frozen=True, kw_only=True)
class MaxProperties(Constraint):
    """At most `count` keys (a map) or members present and not null (a struct)."""

    kind = "max_properties"
    suffix = "max_properties"
    types = frozenset({TypeKind.MAP, TypeKind.STRUCT})

    count: int

    def __post_init__(self) -> None:
        super().__post_init__()
        _count(self.count, "max_properties", least=0)

    def describe(self, path: str) -> str:
        return f"{path} has at most {_plural(self.count, 'property', 'properties')}."


CONSTRAINT_KINDS: dict[str, type[Constraint]] = {
    c.kind: c
    for c in (
        Range,
        Pattern,
        AllowedValues,
        MinLength,
        MaxLength,
        Format,
        NotInFuture,
        MultipleOf,
        MinItems,
        MaxItems,
        UniqueItems,
        MinProperties,
        MaxProperties,
    )
}
