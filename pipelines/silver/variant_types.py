"""A contract type read out of a VARIANT value: typed when the JSON value has the type, else null.

Every function takes the value (`variant`) and its JSON type as `schema_of_variant` writes it
(`kind`: `STRING`, `BIGINT`, `DECIMAL(5,3)`, `DOUBLE`, `OBJECT<...>`, `ARRAY<...>`, `VOID` for
JSON null, SQL null when the path is absent), so a missing value (null kind or `VOID`) is
told apart from a present one of the wrong JSON type: `from_json` would turn the number 42
into the text "42" for a string field.

- integer, long: a JSON integer that fits 32 or 64 bits.
- double: any JSON number. decimal(p,s): a JSON number that fits p digits with at most s
  after the point (a value that would be rounded is mistyped, never silently rounded; with
  p = 38 there is no room left to tell, and Spark rounds).
- timestamp(iso8601): a string such as 2026-11-21T10:00:00.000Z (a zone is required; Spark's
  lenient cast would take a bare date). epoch_seconds: a number (fractions to the
  microsecond); epoch_millis: an integer; both within years 1-9999.
- string: a string; a field with `number_text` (pydantic's Decimal) also takes a number
  held exactly (an integer, or a decimal of at most 38 digits), as its JSON text.
- date: a `yyyy-MM-dd` string. boolean: true or false. json: any value, kept as its JSON
  text (`{"a":1}`, `"text"` with its quotes, `12.50`). variant: any value, as a VARIANT.
- struct: an object (its fields are read one by one, see `pipelines.silver.parse`); array,
  map: an array / an object whose elements all conform (JSON null elements stay null, or
  do not conform when the field's `items_nullable` is false).
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from pipelines.contract import Field, FieldType, TimestampEncoding, TypeKind

ISO_TIMESTAMP_FORMAT = "yyyy-MM-dd'T'HH:mm:ss[.SSSSSSSSS]XXX"
DATE_FORMAT = "yyyy-MM-dd"
INTEGER_KINDS = ("TINYINT", "SMALLINT", "INT", "BIGINT")
_MAX_EPOCH_SECONDS = 253_402_300_799  # 9999-12-31T23:59:59Z


def present(kind: Column) -> Column:
    """Whether the value is there and not JSON null."""
    return kind.isNotNull() & (kind != "VOID")


def _is_number(kind: Column) -> Column:
    return kind.isin(*INTEGER_KINDS) | kind.startswith("DECIMAL") | (kind == "DOUBLE")


def _text(variant: Column, kind: Column) -> Column:
    return F.when(kind == "STRING", F.variant_get(variant, "$", "string"))


def _decimal(variant: Column, kind: Column, field_type: FieldType) -> Column:
    precision, scale = field_type.precision, field_type.scale
    value = F.try_variant_get(variant, "$", f"decimal({precision},{scale})")
    # The same integer digits with as many decimals as fit: differs if `value` was rounded.
    wide = F.try_variant_get(variant, "$", f"decimal(38,{38 - precision + scale})")
    exact = wide.isNull() | (wide == value)
    return F.when(_is_number(kind) & exact, value)


def _epoch(variant: Column, kind: Column, encoding: TimestampEncoding) -> Column:
    if encoding is TimestampEncoding.EPOCH_MILLIS:
        millis = F.try_variant_get(variant, "$", "bigint")
        bound = _MAX_EPOCH_SECONDS * 1000 + 999
        fits = millis.between(-bound, bound)  # abs() overflows on the smallest long
        return F.when(kind.isin(*INTEGER_KINDS) & fits, F.timestamp_millis(millis))
    seconds = F.try_variant_get(variant, "$", "decimal(38,6)")
    fits = seconds.between(-_MAX_EPOCH_SECONDS, _MAX_EPOCH_SECONDS)
    micros = (seconds * F.lit(1_000_000)).cast("bigint")
    return F.when(_is_number(kind) & fits, F.timestamp_micros(micros))


def exact_number(kind: Column) -> Column:
    """Whether the JSON value is a number held exactly (an integer or a decimal; Spark reads
    a number with an exponent, or with more than 38 digits, as a double)."""
    return kind.isin(*INTEGER_KINDS) | kind.startswith("DECIMAL")


def field_typed(variant: Column, kind: Column, field: Field) -> Column:
    """`typed` for a field: with `number_text`, a number held exactly is taken as its text."""
    value = typed(variant, kind, field.type)
    if field.number_text:
        return F.when(exact_number(kind), F.to_json(variant)).otherwise(value)
    return value


def typed(variant: Column, kind: Column, field_type: FieldType) -> Column:
    """The value as `field_type.spark_sql`; null unless the JSON value has the type.

    A struct's fields come out of the variant here too (used inside arrays and maps; top-level
    structs are built from their fields' own columns by `pipelines.silver.parse`).
    """
    k = field_type.kind
    if k is TypeKind.STRING:
        return _text(variant, kind)
    if k is TypeKind.JSON:
        return F.when(present(kind), F.to_json(variant))
    if k is TypeKind.VARIANT:
        return F.when(present(kind), variant)
    if k in (TypeKind.INTEGER, TypeKind.LONG):
        spark_type = field_type.spark_sql
        return F.when(kind.isin(*INTEGER_KINDS), F.try_variant_get(variant, "$", spark_type))
    if k is TypeKind.DOUBLE:
        return F.when(_is_number(kind), F.try_variant_get(variant, "$", "double"))
    if k is TypeKind.DECIMAL:
        return _decimal(variant, kind, field_type)
    if k is TypeKind.BOOLEAN:
        return F.when(kind == "BOOLEAN", F.variant_get(variant, "$", "boolean"))
    if k is TypeKind.TIMESTAMP:
        if field_type.encoding is TimestampEncoding.ISO8601:
            return F.try_to_timestamp(_text(variant, kind), F.lit(ISO_TIMESTAMP_FORMAT))
        return _epoch(variant, kind, field_type.encoding)
    if k is TypeKind.DATE:
        return F.try_to_date(_text(variant, kind), DATE_FORMAT)
    if k is TypeKind.STRUCT:
        members = []
        for f in field_type.fields:
            inner = F.variant_get(variant, json_path(f.path), "variant")
            members.append(field_typed(inner, F.schema_of_variant(inner), f).alias(f.column))
        return F.when(kind.startswith("OBJECT"), F.struct(*members))
    element = field_type.element
    if k is TypeKind.ARRAY:
        items = F.variant_get(variant, "$", "array<variant>")
        values = F.transform(items, lambda e: typed(e, F.schema_of_variant(e), element))
        return F.when(kind.startswith("ARRAY"), values)
    entries = F.variant_get(variant, "$", "map<string,variant>")
    values = F.transform_values(entries, lambda _, e: typed(e, F.schema_of_variant(e), element))
    return F.when(kind.startswith("OBJECT"), values)


def from_text(text: Column, field_type: FieldType) -> Column:
    """A header's or subject token's text as `field_type.spark_sql`; null unless it reads as
    one: a string as is; a timestamp(iso8601) or date as written in JSON; a number, boolean
    or epoch timestamp as its JSON literal (`42`, `1.5`, `true`), so what a payload field
    accepts (a decimal that would be rounded is not)."""
    k = field_type.kind
    if k is TypeKind.STRING:
        return text
    if k is TypeKind.DATE:
        return F.try_to_date(text, DATE_FORMAT)
    if k is TypeKind.TIMESTAMP and field_type.encoding is TimestampEncoding.ISO8601:
        return F.try_to_timestamp(text, F.lit(ISO_TIMESTAMP_FORMAT))
    parsed = F.try_parse_json(text)
    return typed(parsed, F.schema_of_variant(parsed), field_type)


def conforms(
    variant: Column, kind: Column, field_type: FieldType, *, null_elements: bool = True
) -> Column:
    """Whether a present value has the type all the way down (required struct fields included).

    For a top-level struct only the object itself is judged here: its fields are judged one
    by one, each with its own path. A JSON null element of an array (value of a map)
    conforms when `null_elements` (`Field.items_nullable` unset or true), and so does JSON
    null in a struct member inside it where its own `nullable` allows.
    """
    return _conforms(variant, kind, field_type, top=True, null_elements=null_elements)


def _conforms(
    variant: Column,
    kind: Column,
    field_type: FieldType,
    *,
    top: bool,
    null_elements: bool = True,
) -> Column:
    k = field_type.kind
    if k is TypeKind.STRUCT:
        ok = kind.startswith("OBJECT")
        if top:
            return ok
        for f in field_type.fields:
            inner = F.variant_get(variant, json_path(f.path), "variant")
            inner_kind = F.schema_of_variant(inner)
            member = _conforms(
                inner, inner_kind, f.type, top=False, null_elements=f.items_nullable is not False
            )
            if f.number_text:
                member = member | exact_number(inner_kind)
            # Null: a value when nullable, absent when optional and not declared otherwise.
            null_ok = f.nullable is True or (not f.required and f.nullable is None)
            ok = ok & F.coalesce(
                F.when(present(inner_kind), member)
                .when(inner_kind == "VOID", F.lit(null_ok))
                .otherwise(F.lit(not f.required)),
                F.lit(False),
            )
        return ok
    if k in (TypeKind.ARRAY, TypeKind.MAP):
        element = field_type.element

        def element_ok(e: Column) -> Column:
            e_kind = F.schema_of_variant(e)
            if null_elements:
                return ~present(e_kind) | _conforms(e, e_kind, element, top=False)
            return present(e_kind) & _conforms(e, e_kind, element, top=False)

        if k is TypeKind.ARRAY:
            items = F.variant_get(variant, "$", "array<variant>")
            return kind.startswith("ARRAY") & F.forall(items, element_ok)
        entries = F.map_values(F.variant_get(variant, "$", "map<string,variant>"))
        return kind.startswith("OBJECT") & F.forall(entries, element_ok)
    return typed(variant, kind, field_type).isNotNull()


def expected(field_type: FieldType) -> str:
    """What a value of the type looks like in JSON, for `field_types_valid`'s message."""
    k = field_type.kind
    if k is TypeKind.TIMESTAMP:
        return {
            TimestampEncoding.ISO8601: "an ISO-8601 timestamp string",
            TimestampEncoding.EPOCH_SECONDS: "a number of seconds since 1970-01-01",
            TimestampEncoding.EPOCH_MILLIS: "an integer number of milliseconds since 1970-01-01",
        }[field_type.encoding]
    if k is TypeKind.ARRAY:
        return f"an array of {field_type.element}"
    if k is TypeKind.MAP:
        return f"an object of {field_type.element}"
    return {
        TypeKind.STRING: "a string",
        TypeKind.JSON: "any JSON value",
        TypeKind.VARIANT: "any JSON value",
        TypeKind.INTEGER: "an integer of 32 bits",
        TypeKind.LONG: "an integer of 64 bits",  # larger ones: decimal(38,0) or json
        TypeKind.DOUBLE: "a number",
        TypeKind.DECIMAL: f"a number that fits {field_type}",
        TypeKind.BOOLEAN: "true or false",
        TypeKind.DATE: "a yyyy-MM-dd date string",
        TypeKind.STRUCT: "an object",
    }[k]


def json_path(path: str) -> str:
    """`data.fileSize` -> `$['data']['fileSize']` (any key, quotes escaped)."""
    return "$" + "".join("['" + key.replace("'", "\\'") + "']" for key in path.split("."))
