"""The column types of a contract: `FieldType`, written as text like `decimal(12,2)`.

    string  integer (32-bit)  long (64-bit)  double  boolean  date  decimal(p,s)
    timestamp (= timestamp(iso8601))  timestamp(epoch_seconds)  timestamp(epoch_millis)
    struct (its fields declared beside it)  array<T>  map<T> (keys are strings)
    json (any JSON value, kept as its JSON text in a string column)

`parse_type` reads that text, `str(FieldType)` writes it back (canonical: `timestamp` stays
`timestamp(iso8601)`), and `FieldType.spark_sql` is the Spark SQL type (`bigint`,
`struct<a:int>`), as `DataType.simpleString()` prints it, without importing Spark.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Protocol

from pipelines.contract.errors import ContractError
from resources.backports import StrEnum

MAX_DECIMAL_PRECISION = 38  # Spark's DecimalType limit


class TypeKind(StrEnum):
    """What a column holds."""

    STRING = "string"
    INTEGER = "integer"
    LONG = "long"
    DOUBLE = "double"
    DECIMAL = "decimal"
    BOOLEAN = "boolean"
    TIMESTAMP = "timestamp"
    DATE = "date"
    STRUCT = "struct"
    ARRAY = "array"
    MAP = "map"
    JSON = "json"  # any JSON value, kept as its JSON text
    VARIANT = "variant"  # any JSON value, as Spark's VARIANT (a union of unlike types, `{}`)


class TimestampEncoding(StrEnum):
    """How a timestamp is written in the JSON message."""

    ISO8601 = "iso8601"  # a string with a zone, e.g. 2026-11-21T10:00:00.000Z
    EPOCH_SECONDS = "epoch_seconds"  # a number of seconds since 1970-01-01T00:00:00Z
    EPOCH_MILLIS = "epoch_millis"  # a number of milliseconds since then


NUMERIC_KINDS = frozenset({TypeKind.INTEGER, TypeKind.LONG, TypeKind.DOUBLE, TypeKind.DECIMAL})
_SIMPLE_SPARK = {
    TypeKind.STRING: "string",
    TypeKind.INTEGER: "int",
    TypeKind.LONG: "bigint",
    TypeKind.DOUBLE: "double",
    TypeKind.BOOLEAN: "boolean",
    TypeKind.TIMESTAMP: "timestamp",
    TypeKind.DATE: "date",
    TypeKind.JSON: "string",
    TypeKind.VARIANT: "variant",
}
# The types a contract may write, for errors that name an unknown one (every form says the same).
TYPE_HELP = (
    "string, integer, long, double, boolean, date, decimal(p,s), timestamp, "
    "timestamp(iso8601|epoch_seconds|epoch_millis), struct, array<T>, map<T>, variant or json"
)


class StructMember(Protocol):
    """A member of a struct type, as the type sees it: the column it lands in and its type.

    The contract's members are `pipelines.contract.fields.Field`s, which also carry a JSON
    path, constraints and a description; a type needs only these two (for `spark_sql`), so
    this module does not depend on `fields`, which builds on it.
    """

    @property
    def column(self) -> str:
        """The member's column inside the struct."""
        ...

    @property
    def type(self) -> FieldType:
        """The member's type."""
        ...


@dataclass(frozen=True)
class FieldType:
    """The type of a field (and of its column).

    Attributes:
        kind: what it holds.
        precision: digits in all (decimal only, 1-38).
        scale: digits after the point (decimal only, 0-precision).
        encoding: how the JSON writes it (timestamp only).
        element: the element type (array) or value type (map).
        fields: the fields of a struct (`Field`s), each `path` relative to the struct.
    """

    kind: TypeKind
    precision: int | None = None
    scale: int | None = None
    encoding: TimestampEncoding | None = None
    element: FieldType | None = None
    fields: tuple[StructMember, ...] = ()

    def __post_init__(self) -> None:
        kind = TypeKind(self.kind)
        object.__setattr__(self, "kind", kind)
        if kind is TypeKind.DECIMAL:
            _check_decimal(self.precision, self.scale)
        elif self.precision is not None or self.scale is not None:
            raise ContractError(f"only decimal has a precision and scale, not {kind}")
        if kind is TypeKind.TIMESTAMP:
            object.__setattr__(
                self, "encoding", TimestampEncoding(self.encoding or TimestampEncoding.ISO8601)
            )
        elif self.encoding is not None:
            raise ContractError(f"only timestamp has an encoding, not {kind}")
        if (kind in (TypeKind.ARRAY, TypeKind.MAP)) != (self.element is not None):
            raise ContractError(
                f"{kind} needs an element type"
                if self.element is None
                else f"{kind} has no element type"
            )
        if kind is not TypeKind.STRUCT and self.fields:
            raise ContractError(f"only struct has fields, not {kind}")
        if kind is TypeKind.STRUCT and not self.fields:
            raise ContractError("a struct needs at least one field; declare them under `fields`")

    def __repr__(self) -> str:
        if self.kind is TypeKind.STRUCT or self.innermost.kind is TypeKind.STRUCT:
            return f"FieldType({str(self)!r}, fields={self.innermost.fields!r})"
        return f"FieldType({str(self)!r})"

    def __str__(self) -> str:
        if self.kind is TypeKind.DECIMAL:
            return f"decimal({self.precision},{self.scale})"
        if self.kind is TypeKind.TIMESTAMP:
            return f"timestamp({self.encoding})"
        if self.element is not None:
            return f"{self.kind}<{self.element}>"
        return str(self.kind)

    @property
    def is_numeric(self) -> bool:
        """Whether it is integer, long, double or decimal."""
        return self.kind in NUMERIC_KINDS

    @property
    def innermost(self) -> FieldType:
        """The element type below any arrays and maps (the type itself otherwise)."""
        return self if self.element is None else self.element.innermost

    @property
    def spark_sql(self) -> str:
        """The Spark SQL type, e.g. `bigint`, `decimal(12,2)`, `array<struct<a:int>>`."""
        if self.kind in _SIMPLE_SPARK:
            return _SIMPLE_SPARK[self.kind]
        if self.kind is TypeKind.DECIMAL:
            return str(self)
        if self.kind is TypeKind.ARRAY:
            return f"array<{self.element.spark_sql}>"
        if self.kind is TypeKind.MAP:
            return f"map<string,{self.element.spark_sql}>"
        return "struct<" + ",".join(f"{f.column}:{f.type.spark_sql}" for f in self.fields) + ">"


def _check_decimal(precision: int | None, scale: int | None) -> None:
    if not isinstance(precision, int) or not 1 <= precision <= MAX_DECIMAL_PRECISION:
        raise ContractError(
            f"decimal precision must be 1-{MAX_DECIMAL_PRECISION}, got {precision!r}; "
            "e.g. decimal(12,2)"
        )
    if not isinstance(scale, int) or not 0 <= scale <= precision:
        raise ContractError(
            f"decimal scale must be 0-{precision} (at most the precision), got {scale!r}; "
            "e.g. decimal(12,2)"
        )


_CALL = re.compile(r"^([a-z_]+)\s*\((.*)\)$")
_GENERIC = re.compile(r"^(array|map)\s*<(.*)>$")


def parse_type(text: str, *, fields: tuple[StructMember, ...] = ()) -> FieldType:
    """Reads a type written as text.

    Args:
        text: e.g. `long`, `decimal(12,2)`, `timestamp(epoch_millis)`, `array<string>`.
        fields: the fields of the struct, for `struct`, `array<struct>` or `map<struct>`.

    Returns:
        The type.

    Raises:
        ContractError: an unknown type, a bad decimal or encoding, or struct fields missing
            (or given to a type that is not a struct).
    """
    result = _parse(text, fields)
    if fields and result.innermost.kind is not TypeKind.STRUCT:
        raise ContractError(
            f"fields are declared for type {text!r}, which has none; use struct, "
            "array<struct> or map<struct>"
        )
    return result


def _parse(text: str, fields: tuple[StructMember, ...]) -> FieldType:
    if not isinstance(text, str):
        raise ContractError(f"a type is text such as 'long', got {text!r}; use {TYPE_HELP}")
    spec = text.strip().lower()
    generic = _GENERIC.match(spec)
    if generic:
        element = generic.group(2).strip()
        if generic.group(1) == "map" and element.startswith("string,"):
            element = element.removeprefix("string,")
        return FieldType(TypeKind(generic.group(1)), element=_parse(element, fields))
    call = _CALL.match(spec)
    name, args = (call.group(1), call.group(2)) if call else (spec, None)
    if name == "decimal":
        parts = [p.strip() for p in (args or "").split(",")]
        if args is None or len(parts) != 2 or not all(p.isdigit() for p in parts):
            raise ContractError(
                f"bad decimal {text!r}: write decimal(precision,scale), e.g. decimal(12,2)"
            )
        return FieldType(TypeKind.DECIMAL, precision=int(parts[0]), scale=int(parts[1]))
    if name == "timestamp":
        encodings = ", ".join(e.value for e in TimestampEncoding)
        if args is not None and args.strip() not in set(TimestampEncoding):
            raise ContractError(f"bad timestamp encoding in {text!r}; use one of {encodings}")
        return FieldType(
            TypeKind.TIMESTAMP, encoding=TimestampEncoding(args.strip()) if args else None
        )
    if args is not None or name not in set(TypeKind) or name in ("array", "map"):
        raise ContractError(f"unknown type {text!r}; use {TYPE_HELP}")
    if name == "struct":
        return FieldType(TypeKind.STRUCT, fields=fields)
    return FieldType(TypeKind(name))


def stable_repr(obj: object, quiet: tuple[str, ...]) -> str:
    """The dataclass `repr` of `obj`, leaving out the `quiet` fields while at their defaults.

    Fields added to the contract's dataclasses after tables were written are quiet: the
    `repr` is the declaration's fingerprint (`pipelines.contract.fingerprint`), so a
    declaration that does not use them keeps the fingerprint it had.
    """
    parts = []
    for spec in dataclasses.fields(obj):
        value = getattr(obj, spec.name)
        if spec.name in quiet and value == spec.default:
            continue
        if spec.repr or spec.name in quiet:
            parts.append(f"{spec.name}={value!r}")
    return f"{type(obj).__qualname__}({', '.join(parts)})"
