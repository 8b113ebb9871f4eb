"""The Spark checks of the size and multiple constraints (`pipelines.contract.sizes`).

Each gives (broken, detail) on a typed value; `pipelines.silver.rule_columns` dispatches here.

- min_length: `length` counts Unicode code points, as JSON Schema and Python do (zod counts
  UTF-16 units: a character outside the BMP counts 2 there).
- multiple_of: judged in decimal arithmetic (decimal(38,18)): an integer or decimal column
  exactly; a double column on its shortest decimal text (`0.3` is a multiple of `0.1`, as in
  JSON Schema, where a binary float would say no). A double that needs more than 18 digits
  after the point, or is 10^20 or more, cannot be judged exactly and breaks the rule, with a
  detail that says so (declare the field `decimal(p,s)` with x-jsl-type to judge it).
- unique_items: `array_distinct` equality: numbers by value, structs member by member, nulls
  equal to each other; `json` elements by their JSON text (`{"a":1,"b":2}` and
  `{"b":2,"a":1}` differ there, not in JSON Schema).
- min_properties, max_properties: a map's keys; a struct's members present and not null.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from pipelines.contract import Constraint, FieldType, TypeKind
from pipelines.contract.sizes import (
    MaxItems,
    MaxProperties,
    MinItems,
    MinLength,
    MinProperties,
    MultipleOf,
    UniqueItems,
)

EXACT = "decimal(38,18)"  # the type multiple_of is judged in
_MAX_SCALE = 18


def _count(value: Column, field_type: FieldType) -> Column:
    """A map's size, or the number of a struct's members that are not null."""
    if field_type.kind is TypeKind.MAP:
        return F.size(value)
    present = [
        F.when(value.getField(f.column).isNotNull(), F.lit(1)).otherwise(F.lit(0))
        for f in field_type.fields
    ]
    return sum(present[1:], present[0])


def exact_decimal(value: Column, field_type: FieldType) -> tuple[Column, Column]:
    """(the value as decimal(38,18), whether that is exact) of a number column."""
    kind = field_type.kind
    if kind in (TypeKind.INTEGER, TypeKind.LONG):
        return value.cast(EXACT), F.lit(True)
    if kind is TypeKind.DECIMAL:
        fits = field_type.scale <= _MAX_SCALE and field_type.precision - field_type.scale <= 20
        return (value.cast(EXACT), F.lit(True)) if fits else (value, F.lit(True))
    return text_decimal(value.cast("string"))  # the shortest text that reads back the same


def text_decimal(text: Column) -> tuple[Column, Column]:
    """(a number's text as decimal(38,18), whether that is exact): not when it has more than
    18 digits after the point or is 10^20 or more (both null when it is no number)."""
    text = F.trim(text)
    fraction = F.length(F.regexp_extract(text, r"\.([0-9]*)", 1))
    exponent = F.coalesce(F.regexp_extract(text, r"[eE]([+-]?[0-9]+)", 1).try_cast("int"), F.lit(0))
    number = text.try_cast(EXACT)
    return number, number.isNotNull() & (fraction - exponent <= _MAX_SCALE)


def size_check(c: Constraint, path: str, value: Column, field_type: FieldType):
    """(broken, detail) of a size or multiple constraint; None for another kind."""
    if isinstance(c, MinLength):
        return F.length(value) < c.length, F.concat(
            F.lit(f"{path} is "),
            F.length(value).cast("string"),
            F.lit(f" characters long, fewer than {c.length}"),
        )
    if isinstance(c, MinItems | MaxItems):
        few = isinstance(c, MinItems)
        broken = F.size(value) < c.count if few else F.size(value) > c.count
        return broken, F.concat(
            F.lit(f"{path} has "),
            F.size(value).cast("string"),
            F.lit(f" elements, {'fewer' if few else 'more'} than {c.count}"),
        )
    if isinstance(c, UniqueItems):
        repeated = F.size(value) - F.size(F.array_distinct(value))
        return repeated > 0, F.concat(
            F.lit(f"{path} has "), repeated.cast("string"), F.lit(" repeated elements")
        )
    if isinstance(c, MinProperties | MaxProperties):
        few = isinstance(c, MinProperties)
        count = _count(value, field_type)
        return (count < c.count if few else count > c.count), F.concat(
            F.lit(f"{path} has "),
            count.cast("string"),
            F.lit(f" properties, {'fewer' if few else 'more'} than {c.count}"),
        )
    if isinstance(c, MultipleOf):
        number, exact = exact_decimal(value, field_type)
        factor = F.lit(c.exact).cast(EXACT) if field_type.kind is not TypeKind.DECIMAL else None
        remainder = number % (factor if factor is not None else F.lit(c.exact))
        shown = f"{c.exact.normalize():f}"
        inexact = F.lit(
            f" cannot be judged exactly as a multiple of {shown} (a double with more than "
            "18 decimals or of 10^20 or more)"
        )
        why = F.when(~exact, inexact).otherwise(F.lit(f" is not a multiple of {shown}"))
        detail = F.concat(F.lit(f"{path} "), value.cast("string"), why)
        # Absent or null is not judged (`exact` is false there: no number to read).
        return value.isNotNull() & (~exact | (remainder != 0)), detail
    return None
