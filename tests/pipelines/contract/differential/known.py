"""Where a judge's verdict differs from the one the case intends, and why (docs/schema-interop.md).

`KNOWN[(judge, label)]` is the reason; the judge differs on every message of that case.
Judges: `pydantic`, `zod` (the owning tools), `jsonschema[<schema>]` and `silver[<schema>]`
(the jsonschema package and the project's silver, each given the JSON Schema that pydantic
or zod generated). The list is exact: a difference not listed fails the test, and so does a
listed one that no longer occurs.
"""

from __future__ import annotations

from jsonschema import Draft202012Validator

JUDGES = (
    "pydantic",
    "jsonschema[pydantic]",
    "silver[pydantic]",
    "zod",
    "jsonschema[zod]",
    "silver[zod]",
)
SCHEMA_OF = {judge: "zod" if "zod" in judge else "pydantic" for judge in JUDGES}

_UUID_FORMS = (
    "pydantic's UUID takes every form Rust's uuid crate parses (32 hex digits without "
    "hyphens, braces, a urn:uuid: prefix); JSON Schema's uuid is the hyphenated form only"
)
_NAIVE = (
    "pydantic's `datetime` takes a date-time without an offset (a naive one); RFC 3339 "
    "requires the offset. `AwareDatetime` refuses it"
)
_SPEEDATE = (
    "pydantic's date-time parser takes more than RFC 3339: a space for the T, HH:MM without "
    "seconds, a Unix timestamp in a string"
)
_INTEGRAL_FLOAT = (
    "strict pydantic refuses 5.0 for an int; JSON Schema counts an integer-valued number as "
    "an integer (lax pydantic takes it, with the coercions of LAX_COERCIONS)"
)
_DOLLAR = (
    "jsonschema runs `pattern` with Python's re.search, whose `$` also matches before a final "
    "newline; ECMA-262's `$` (zod, and the JSON Schema spec), Rust's (pydantic) and silver's "
    "(`$` made `\\z`) match only at the end"
)
_DECIMAL_PLACES = (
    "pydantic's JSON Schema for a Decimal carries neither max_digits nor decimal_places: only "
    "the model refuses 12.345"
)
_DECIMAL_STRING = (
    "pydantic's JSON Schema for a Decimal is anyOf [number with its bounds, string], the "
    "string without any constraint: JSON Schema takes any string, the model parses it and "
    "checks the bounds"
)
_RFC9562 = (
    "z.uuid() requires RFC 9562's version digit (1-8) and variant (8, 9, a, b); JSON "
    "Schema's uuid is RFC 4122's syntax, any hex digits (z.guid() reads it that way)"
)
_UPPER_T = "z.iso.datetime() requires an upper-case T and Z; RFC 3339 allows lower case"
_ZOD_PATTERN = (
    "zod writes its own regular expression as `pattern` beside `format`, so a JSON Schema "
    "validator checks zod's stricter reading: "
)

KNOWN: dict[tuple[str, str], str] = {
    ("pydantic", "order_id.format.no_hyphens"): _UUID_FORMS,
    ("pydantic", "order_id.format.braces"): _UUID_FORMS,
    ("pydantic", "order_id.format.urn"): _UUID_FORMS,
    ("pydantic", "placed_at.format.no_offset"): _NAIVE,
    ("pydantic", "placed_at.format.space"): _SPEEDATE,
    ("pydantic", "placed_at.format.no_seconds"): _SPEEDATE,
    ("pydantic", "placed_at.format.epoch_text"): _SPEEDATE,
    ("pydantic", "total.type.underscore_text"): (
        "pydantic reads a Decimal's text by Python's rules, which allow underscores between "
        "digits (1_000); a JSON number has none"
    ),
    ("pydantic", "quantity.type.integral_float"): _INTEGRAL_FLOAT,
    ("pydantic", "discount_pct.type.integral_float"): _INTEGRAL_FLOAT,
    ("jsonschema[pydantic]", "customer.pattern.trailing_newline"): _DOLLAR,
    ("jsonschema[pydantic]", "address.zip.pattern.trailing_newline"): _DOLLAR,
    ("jsonschema[pydantic]", "total.decimal_places.three"): _DECIMAL_PLACES,
    ("jsonschema[pydantic]", "total.minimum.below"): _DECIMAL_STRING,
    ("jsonschema[pydantic]", "total.maximum.above"): _DECIMAL_STRING,
    ("jsonschema[pydantic]", "total.type.underscore_text"): _DECIMAL_STRING,
    ("jsonschema[pydantic]", "total.type.nan_text"): _DECIMAL_STRING,
    ("jsonschema[pydantic]", "total.type.word"): _DECIMAL_STRING,
    ("zod", "order_id.format.not_rfc9562_version"): _RFC9562,
    ("zod", "placed_at.format.lowercase"): _UPPER_T,
    ("jsonschema[zod]", "order_id.format.not_rfc9562_version"): _ZOD_PATTERN + _RFC9562,
    ("jsonschema[zod]", "placed_at.format.lowercase"): _ZOD_PATTERN + _UPPER_T,
    ("jsonschema[zod]", "customer.pattern.trailing_newline"): _DOLLAR,
    ("jsonschema[zod]", "address.zip.pattern.trailing_newline"): _DOLLAR,
}

_SILVER_INTEGRAL_FLOAT = (
    "silver reads an integer column only from a JSON integer (5.0 is mistyped: a value that "
    "is not an integer in the text is never truncated); JSON Schema counts 5.0 as an integer"
)
_SILVER_DUPLICATE_KEY = (
    "Spark's parse_json refuses an object with a key written twice (parseable_json); "
    "Python's, JavaScript's and pydantic's parsers keep the last value"
)
for _schema in ("pydantic", "zod"):
    _silver = f"silver[{_schema}]"
    KNOWN.update(
        {
            (_silver, "quantity.type.integral_float"): _SILVER_INTEGRAL_FLOAT,
            (_silver, "discount_pct.type.integral_float"): _SILVER_INTEGRAL_FLOAT,
            (_silver, "(root).json.duplicate_key"): _SILVER_DUPLICATE_KEY,
        }
    )
# Silver on one tool's schema only.
KNOWN.update(
    {
        ("silver[pydantic]", "total.decimal_places.three"): _DECIMAL_PLACES,
        ("silver[zod]", "order_id.format.not_rfc9562_version"): _ZOD_PATTERN + _RFC9562,
        ("silver[zod]", "placed_at.format.lowercase"): _ZOD_PATTERN + _UPPER_T,
    }
)

# jsonschema checks `date-time` only when rfc3339-validator is installed (it is not one of
# the project's dependencies); without it every string passes. zod's schema is not affected:
# its `pattern` beside the format checks the date-time.
_NO_DATE_TIME_CHECK = (
    "jsonschema checks format date-time only with the rfc3339-validator package installed "
    "(not a dependency here); without it, any string is a date-time"
)
if "date-time" not in Draft202012Validator.FORMAT_CHECKER.checkers:
    for _label in (
        "placed_at.format.no_offset",
        "placed_at.format.date_only",
        "placed_at.format.space",
        "placed_at.format.no_seconds",
        "placed_at.format.hour_24",
        "placed_at.format.february_30",
        "placed_at.format.epoch_text",
    ):
        KNOWN[("jsonschema[pydantic]", _label)] = _NO_DATE_TIME_CHECK

# What pydantic's default (lax) mode takes beyond strict mode, all of which JSON Schema
# refuses: why the models are strict.
LAX_COERCIONS: dict[str, str] = {
    "placed_at.format.date_only": "a date is taken as midnight",
    "placed_at.type.epoch_number": "a number is taken as a Unix timestamp",
    "delivery_date.format.midnight": "a date-time at midnight is taken as its date",
    "quantity.type.numeric_string": '"5" is taken as 5',
    "quantity.type.boolean": "true is taken as 1",
    "weight_kg.type.numeric_string": '"5" is taken as 5.0',
    "gift.type.text": '"true" is taken as true',
    "gift.type.number": "1 is taken as true",
    "lines[].qty.type.numeric_string": '"2" is taken as 2',
}
