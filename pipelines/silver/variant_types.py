"""A contract type read out of a VARIANT value: typed when the JSON value has the type, else null.

The typing functions write Spark SQL text (the caller makes a column of it with `F.expr`),
so a contract of thousands of paths builds its plan with one call into the JVM per column,
not one per operator: about 7x faster to build (docs/performance.md, "Large schemas").
`expected` writes a message, `json_path` a variant path. Each typing function takes the value
(`variant`, SQL text: a column's quoted name or an expression) and its JSON type as
`schema_of_variant` writes it (`kind`: `STRING`, `BIGINT`, `DECIMAL(5,3)`, `DOUBLE`,
`OBJECT<...>`, `ARRAY<...>`, `VOID` for JSON null, SQL null when the path is absent), so a
missing value (null kind or `VOID`) is told apart from a present one of the wrong JSON type:
`from_json` would turn the number 42 into the text "42" for a string field.

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

from pipelines.contract import Field, FieldType, TimestampEncoding, TypeKind

ISO_TIMESTAMP_FORMAT = "yyyy-MM-dd'T'HH:mm:ss[.SSSSSSSSS]XXX"
DATE_FORMAT = "yyyy-MM-dd"
INTEGER_KINDS = ("TINYINT", "SMALLINT", "INT", "BIGINT")
_MAX_EPOCH_SECONDS = 253_402_300_799  # 9999-12-31T23:59:59Z
_INTEGER = "(" + ", ".join(f"'{k}'" for k in INTEGER_KINDS) + ")"


def literal(text: str) -> str:
    """`text` as a Spark SQL string literal (`it's` -> `'it\\'s'`); `$` as `\\u0024`, since
    Spark's parser substitutes `${...}` (`spark.sql.variable.substitute`) before it reads a
    literal."""
    quoted = text.replace("\\", "\\\\").replace("'", "\\'").replace("$", "\\u0024")
    return "'" + quoted + "'"


def name(column: str) -> str:
    """A column's name, quoted for Spark SQL (`_v1` -> `` `_v1` ``)."""
    return "`" + column.replace("`", "``") + "`"


def _get(variant: str, path: str, sql_type: str, *, strict: bool = False) -> str:
    function = "variant_get" if strict else "try_variant_get"
    return f"{function}({variant}, {literal(path)}, {literal(sql_type)})"


def _kind(variant: str) -> str:
    return f"schema_of_variant({variant})"


def present(kind: str) -> str:
    """Whether the value is there and not JSON null."""
    return f"({kind} IS NOT NULL AND {kind} != 'VOID')"


def is_object(kind: str) -> str:
    """Whether the value is an object (false when absent)."""
    return f"coalesce({_starts(kind, 'OBJECT')}, false)"


def _starts(kind: str, prefix: str) -> str:
    return f"startswith({kind}, '{prefix}')"


def _is_number(kind: str) -> str:
    return f"({kind} IN {_INTEGER} OR {_starts(kind, 'DECIMAL')} OR {kind} = 'DOUBLE')"


def _when(condition: str, value: str) -> str:
    return f"CASE WHEN {condition} THEN {value} END"


def _text(variant: str, kind: str) -> str:
    return _when(f"{kind} = 'STRING'", _get(variant, "$", "string", strict=True))


def _decimal(variant: str, kind: str, field_type: FieldType) -> str:
    precision, scale = field_type.precision, field_type.scale
    value = _get(variant, "$", f"decimal({precision},{scale})")
    # The same integer digits with as many decimals as fit: differs if `value` was rounded.
    wide = _get(variant, "$", f"decimal(38,{38 - precision + scale})")
    exact = f"({wide} IS NULL OR {wide} = {value})"
    return _when(f"{_is_number(kind)} AND {exact}", value)


def _epoch(variant: str, kind: str, encoding: TimestampEncoding) -> str:
    if encoding is TimestampEncoding.EPOCH_MILLIS:
        millis = _get(variant, "$", "bigint")
        bound = _MAX_EPOCH_SECONDS * 1000 + 999
        fits = f"{millis} BETWEEN {-bound} AND {bound}"  # abs() overflows on the smallest long
        return _when(f"{kind} IN {_INTEGER} AND {fits}", f"timestamp_millis({millis})")
    seconds = _get(variant, "$", "decimal(38,6)")
    fits = f"{seconds} BETWEEN {-_MAX_EPOCH_SECONDS} AND {_MAX_EPOCH_SECONDS}"
    micros = f"CAST({seconds} * 1000000 AS BIGINT)"
    return _when(f"{_is_number(kind)} AND {fits}", f"timestamp_micros({micros})")


def exact_number(kind: str) -> str:
    """Whether the JSON value is a number held exactly (an integer or a decimal; Spark reads
    a number with an exponent, or with more than 38 digits, as a double)."""
    return f"({kind} IN {_INTEGER} OR {_starts(kind, 'DECIMAL')})"


def field_typed(variant: str, kind: str, field: Field, depth: int = 0) -> str:
    """`typed` for a field: with `number_text`, a number held exactly is taken as its text."""
    value = typed(variant, kind, field.type, depth)
    if field.number_text:
        return f"CASE WHEN {exact_number(kind)} THEN to_json({variant}) ELSE {value} END"
    return value


def typed(variant: str, kind: str, field_type: FieldType, depth: int = 0) -> str:
    """The value as `field_type.spark_sql`; null unless the JSON value has the type.

    A struct's fields come out of the variant here too (used inside arrays and maps; top-level
    structs are built from their fields' own columns by `pipelines.silver.parse`). `depth`
    numbers the lambdas' variables of arrays and maps inside one another.
    """
    k = field_type.kind
    if k is TypeKind.STRING:
        return _text(variant, kind)
    if k is TypeKind.JSON:
        return _when(present(kind), f"to_json({variant})")
    if k is TypeKind.VARIANT:
        return _when(present(kind), variant)
    if k in (TypeKind.INTEGER, TypeKind.LONG):
        return _when(f"{kind} IN {_INTEGER}", _get(variant, "$", field_type.spark_sql))
    if k is TypeKind.DOUBLE:
        return _when(_is_number(kind), _get(variant, "$", "double"))
    if k is TypeKind.DECIMAL:
        return _decimal(variant, kind, field_type)
    if k is TypeKind.BOOLEAN:
        return _when(f"{kind} = 'BOOLEAN'", _get(variant, "$", "boolean", strict=True))
    if k is TypeKind.TIMESTAMP:
        if field_type.encoding is TimestampEncoding.ISO8601:
            return f"try_to_timestamp({_text(variant, kind)}, {literal(ISO_TIMESTAMP_FORMAT)})"
        return _epoch(variant, kind, field_type.encoding)
    if k is TypeKind.DATE:
        return f"try_to_date({_text(variant, kind)}, {literal(DATE_FORMAT)})"
    if k is TypeKind.STRUCT:
        members = []
        for f in field_type.fields:
            inner = _get(variant, json_path(f.path), "variant", strict=True)
            members += [literal(f.column), field_typed(inner, _kind(inner), f, depth)]
        return _when(_starts(kind, "OBJECT"), f"named_struct({', '.join(members)})")
    element, e = field_type.element, f"__item{depth}"
    value = typed(e, _kind(e), element, depth + 1)
    if k is TypeKind.ARRAY:
        items = _get(variant, "$", "array<variant>", strict=True)
        return _when(_starts(kind, "ARRAY"), f"transform({items}, {e} -> {value})")
    entries = _get(variant, "$", "map<string,variant>", strict=True)
    return _when(
        _starts(kind, "OBJECT"), f"transform_values({entries}, (__key{depth}, {e}) -> {value})"
    )


def from_text(text: str, field_type: FieldType) -> str:
    """A header's or subject token's text as `field_type.spark_sql`; null unless it reads as
    one: a string as is; a timestamp(iso8601) or date as written in JSON; a number, boolean
    or epoch timestamp as its JSON literal (`42`, `1.5`, `true`), so what a payload field
    accepts (a decimal that would be rounded is not)."""
    k = field_type.kind
    if k is TypeKind.STRING:
        return text
    if k is TypeKind.DATE:
        return f"try_to_date({text}, {literal(DATE_FORMAT)})"
    if k is TypeKind.TIMESTAMP and field_type.encoding is TimestampEncoding.ISO8601:
        return f"try_to_timestamp({text}, {literal(ISO_TIMESTAMP_FORMAT)})"
    parsed = f"try_parse_json({text})"
    return typed(parsed, _kind(parsed), field_type)


def conforms(variant: str, kind: str, field_type: FieldType, *, null_elements: bool = True) -> str:
    """Whether a present value has the type all the way down (required struct fields included).

    For a top-level struct only the object itself is judged here: its fields are judged one
    by one, each with its own path. A JSON null element of an array (value of a map)
    conforms when `null_elements` (`Field.items_nullable` unset or true), and so does JSON
    null in a struct member inside it where its own `nullable` allows.
    """
    return _conforms(variant, kind, field_type, top=True, null_elements=null_elements, depth=0)


def _conforms(
    variant: str, kind: str, field_type: FieldType, *, top: bool, null_elements: bool, depth: int
) -> str:
    k = field_type.kind
    if k is TypeKind.STRUCT:
        ok = _starts(kind, "OBJECT")
        if top:
            return ok
        for f in field_type.fields:
            inner = _get(variant, json_path(f.path), "variant", strict=True)
            inner_kind = _kind(inner)
            member = _conforms(
                inner,
                inner_kind,
                f.type,
                top=False,
                null_elements=f.items_nullable is not False,
                depth=depth,
            )
            if f.number_text:
                member = f"({member} OR {exact_number(inner_kind)})"
            # Null: a value when nullable, absent when optional and not declared otherwise.
            null_ok = f.nullable is True or (not f.required and f.nullable is None)
            judged = (
                f"CASE WHEN {present(inner_kind)} THEN {member} "
                f"WHEN {inner_kind} = 'VOID' THEN {str(null_ok).lower()} "
                f"ELSE {str(not f.required).lower()} END"
            )
            ok = f"{ok} AND coalesce({judged}, false)"
        return f"({ok})"
    if k in (TypeKind.ARRAY, TypeKind.MAP):
        e = f"__item{depth}"
        e_kind = _kind(e)
        inner = _conforms(
            e, e_kind, field_type.element, top=False, null_elements=True, depth=depth + 1
        )
        if null_elements:
            element_ok = f"(NOT {present(e_kind)} OR {inner})"
        else:
            element_ok = f"({present(e_kind)} AND {inner})"
        if k is TypeKind.ARRAY:
            items = _get(variant, "$", "array<variant>", strict=True)
            return f"({_starts(kind, 'ARRAY')} AND forall({items}, {e} -> {element_ok}))"
        entries = f"map_values({_get(variant, '$', 'map<string,variant>', strict=True)})"
        return f"({_starts(kind, 'OBJECT')} AND forall({entries}, {e} -> {element_ok}))"
    return f"({typed(variant, kind, field_type, depth)} IS NOT NULL)"


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
    """`data.fileSize` -> `$['data']['fileSize']`; a key holding `'` in double quotes
    (`["it's"]`): Spark's variant paths have no escapes, and a contract's keys never hold
    both quotes (`pipelines.contract.fields.field_source`)."""
    return "$" + "".join(f'["{k}"]' if "'" in k else f"['{k}']" for k in path.split("."))
