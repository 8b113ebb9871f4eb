"""Which checks Great Expectations may run on an in-memory pandas copy of a Spark frame.

GX's Spark engine runs a Spark job or two per checked column; on a frame of a few thousand
rows those jobs are most of a validation's time (`bench/gx_engines.py`, a twelve-check silver
suite, local Spark: 1,000 rows 2.27 s on Spark against 0.62 s in memory; 100,000 rows 1.91 s
against 1.65 s; docs/performance.md). `validate_dataframe` therefore collects a small frame
once, as Arrow, and runs on pandas every check whose verdict is *provably the same* as
Spark's; the others stay on Spark. What can differ, and how each is kept equal or sent to
Spark:

- **Regular expressions.** Spark's `rlike` is Java's `Matcher.find`; GX's pandas engine is
  Python's `re.search`. `python_regex` translates a Java pattern into Python's with the same
  matches, for the constructs both share (classes, groups, lookarounds, greedy and lazy
  quantifiers, `^`, `$`, `\\z`, `\\d\\s\\w` in ASCII as Java's defaults are, `.` stopping at
  Java's line terminators), and returns None for anything else (inline flags, `\\b`,
  `\\p{..}`, possessive quantifiers, back references, nested classes, ...).
- **NaN.** Spark counts NaN as a value (not null; above every number); pandas counts it as
  missing. A floating column holding a NaN is left to Spark.
- **Numbers.** GX makes a range's bounds floats, so Spark compares the column as doubles, and
  so does numpy; Python compares its ints exactly. A range on an integer column holding a
  value beyond 2**53 is left to Spark, as are ranges on 32-bit float columns; a decimal
  column is compared as the doubles Spark makes of it, when its digits fit a double's.
- **Types.** A check runs in memory only on the column types listed in `_ready`: strings
  (binary collation) for patterns, lengths and sets; numbers for ranges; strings, integers
  and dates for uniqueness; timestamps, dates and numbers for pair comparisons that skip a
  row missing either value; any type for not-null.
- **Characters beyond the BMP.** Java's lookbehinds count their two UTF-16 halves; a pattern
  on a column holding such a character stays on Spark.
- **Samples.** A range on a decimal (compared as doubles in memory), a pair of timestamps
  (which pandas writes otherwise) and a uniqueness check (Spark's samples come sorted) that
  find rows run again on Spark, for Spark's samples (`samples_from_spark`). On no rows, GX's
  engines report the unexpected count differently; `empty_as_on_spark` gives Spark's.

`tests/resources/test_quality_engines.py` runs every check on both engines over the same
frames (edge values included) and asserts the same outcomes and the same GX results.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa
    from pyspark.sql.types import DataType, StructType

    from resources.quality.model import QualityCheck

# Above this many rows a frame is validated on Spark: pandas, one core in Python, is no longer
# faster than GX's Spark jobs (`bench/gx_engines.py`, local Spark, medians: 100,000 rows 1.65 s
# in memory against 1.91 s on Spark; 200,000 rows 2.94 s against 3.00 s).
PANDAS_MAX_ROWS = 100_000

_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
_EXACT_DOUBLE = 2**53  # every integer up to this is exactly a double
_JAVA_DOT = r"[^\n\r\x85\u2028\u2029]"  # Java's `.` without DOTALL or UNIX_LINES
# Java's `$` without MULTILINE: the end, or before a final line terminator (`\r\n` as one,
# and never between its `\r` and `\n`).
_JAVA_DOLLAR = r"(?=(?:\r\n|(?<!\r)\n|[\r\x85\u2028\u2029])?\Z)"
_SAME_ESCAPES = frozenset("dDsSwWtnrf")
_MAX_REPEAT = 1_000_000
# Java matches on UTF-16: its lookbehinds count the two halves of a character beyond the BMP
# (`(?<=^.)b` finds nothing in "😀b"; Python's finds the b). A pattern runs in memory only on
# a column without such characters (`refused_by_values`).
_BEYOND_BMP = "[\U00010000-\U0010ffff]"
_HEX = frozenset("0123456789abcdefABCDEF")


def python_regex(java: str) -> str | None:
    """A Python pattern matching (by `re.search`) what `java` matches (by `Matcher.find`).

    Args:
        java: a Java regular expression, as Spark's `rlike` takes it.

    Returns:
        The Python pattern, or None if `java` uses a construct whose meaning could differ.

    Examples:
        >>> python_regex(r"^\\d+\\z")
        '(?a)^\\\\d+\\\\Z'
        >>> python_regex(r"(?i)abc") is None
        True
    """
    out: list[str] = []
    i, n = 0, len(java)
    quantifiable = False  # the last item can take a quantifier
    while i < n:
        ch = java[i]
        if ch == "\\":
            escape = _escape(java, i, in_class=False)
            if escape is None:
                return None
            text, i = escape
            out.append(text)
            quantifiable = text not in (r"\A", r"\Z")
            continue
        if ch == "[":
            end = _class(java, i)
            if end is None:
                return None
            text, i = end
            out.append(text)
            quantifiable = True
            continue
        if ch == "(":
            if java.startswith("(?", i):
                opener = next(
                    (g for g in ("(?:", "(?=", "(?!", "(?<=", "(?<!") if java.startswith(g, i)),
                    None,
                )
                if opener is None:
                    return None  # inline flags, named or atomic groups
                out.append(opener)
                i += len(opener)
            else:
                out.append("(")
                i += 1
            quantifiable = False
            continue
        if ch in "*+?{":
            if not quantifiable:
                return None
            if ch == "{":
                bound = re.match(r"\{(\d+)(?:,(\d*))?\}", java[i:])
                if bound is None or max(int(n or 0) for n in bound.groups()) > _MAX_REPEAT:
                    return None  # Java refuses counts above 2**31 - 1; Python allows more
                out.append(bound.group())
                i += len(bound.group())
            else:
                out.append(ch)
                i += 1
            if i < n and java[i] == "+":
                return None  # possessive
            if i < n and java[i] == "?":
                out.append("?")  # lazy, the same in both
                i += 1
            quantifiable = False
            continue
        if ch == ".":
            out.append(_JAVA_DOT)
        elif ch == "$":
            out.append(_JAVA_DOLLAR)
        elif ch in "^|)" or _literal(ch):
            out.append(ch)
        else:
            return None
        quantifiable = ch not in "^|$"
        i += 1
    python = "(?a)" + "".join(out)
    try:
        re.compile(python)
    except re.error:
        return None
    return python


def _literal(ch: str) -> bool:
    """Whether `ch`, unescaped outside a class, is itself in both Java and Python."""
    if ch.isascii():
        return ch.isalnum() or ch in " _-,:;!\"'#%&/<=>@`~}]"
    return not "\ud800" <= ch <= "\udfff"


def _escape(java: str, i: int, *, in_class: bool) -> tuple[str, int] | None:
    """The Python text of the escape at `java[i]` (a backslash) and the index after it."""
    if i + 1 >= len(java):
        return None
    ch = java[i + 1]
    if ch in _SAME_ESCAPES:
        return "\\" + ch, i + 2
    if ch == "z" and not in_class:
        return r"\Z", i + 2
    if ch == "A" and not in_class:
        return r"\A", i + 2
    if ch == "x":
        digits = java[i + 2 : i + 4]
        if len(digits) == 2 and set(digits) <= _HEX:
            return "\\x" + digits, i + 4
        return None
    if ch == "u":
        digits = java[i + 2 : i + 6]
        if len(digits) == 4 and set(digits) <= _HEX and not 0xD800 <= int(digits, 16) <= 0xDFFF:
            return "\\u" + digits, i + 6
        return None
    if ch.isascii() and not ch.isalnum() and ch.isprintable() and ch != " ":
        return "\\" + ch, i + 2  # an escaped punctuation mark: itself in both
    return None


def _class(java: str, i: int) -> tuple[str, int] | None:
    """The Python text of the character class opening at `java[i]` and the index after it."""
    out = ["["]
    j = i + 1
    if j < len(java) and java[j] == "^":
        out.append("^")
        j += 1
    if j < len(java) and java[j] == "]":
        return None  # `[]...]`: a literal `]` in Python, an error or a union in Java
    while j < len(java):
        ch = java[j]
        if ch == "]":
            out.append("]")
            return "".join(out), j + 1
        if ch == "[" or java.startswith(("&&", "--", "||", "~~"), j):
            return None  # Java's unions and intersections; Python's future set operations
        if ch == "\\":
            escape = _escape(java, j, in_class=True)
            if escape is None:
                return None
            text, j = escape
            out.append(text)
            continue
        if "\ud800" <= ch <= "\udfff":
            return None
        out.append(ch)
        j += 1
    return None  # unclosed


def _ready(check: QualityCheck, types: dict[str, DataType]) -> bool:
    """Whether `check`'s verdict on pandas is the same as on Spark for columns of these
    types (before looking at the values: see `refused_by_values`)."""
    from pyspark.sql import types as T

    integral = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
    kwargs, kind = check.kwargs, check.expectation
    if kind == "ExpectColumnPairValuesAToBeGreaterThanB":
        a, b = types.get(kwargs.get("column_A")), types.get(kwargs.get("column_B"))
        comparable = (T.TimestampType, T.TimestampNTZType, T.DateType, T.DoubleType, *integral)
        # With a null on one side Spark's comparison is null (not unexpected) and pandas' is
        # False (unexpected): only rows with both values compare the same.
        return (
            kwargs.get("ignore_row_if") == "either_value_is_missing"
            and a is not None
            and type(a) is type(b)
            and isinstance(a, comparable)
        )
    column = types.get(kwargs.get("column"))
    if column is None:
        return False
    if kind == "ExpectColumnValuesToNotBeNull":
        return True
    if isinstance(column, T.StringType) and column.collation != "UTF8_BINARY":
        return False  # Spark compares, groups and matches such strings by their collation
    if kind == "ExpectColumnValuesToBeUnique":
        return isinstance(column, (T.StringType, T.DateType, *integral))
    if kind == "ExpectColumnValuesToMatchRegex":
        regex = kwargs.get("regex")
        return (
            isinstance(column, T.StringType)
            and isinstance(regex, str)
            and python_regex(regex) is not None
        )
    if kind == "ExpectColumnValueLengthsToBeBetween":
        bounds = (kwargs.get("min_value"), kwargs.get("max_value"))
        return isinstance(column, T.StringType) and all(v is None or _is_int(v) for v in bounds)
    if kind == "ExpectColumnValuesToBeInSet":
        values = kwargs.get("value_set")
        if not values:
            return False
        if isinstance(column, T.StringType):
            return all(isinstance(v, str) for v in values)
        return isinstance(column, integral) and all(_is_int(v) for v in values)
    if kind == "ExpectColumnValuesToBeBetween":
        # GX makes both bounds floats, and Spark compares a number column with a float as
        # doubles: so does numpy, and `to_pandas` makes decimals floats; Python's ints are
        # compared exactly, hence the 2**53 limit on an integer column's values and a
        # decimal's unscaled digits (`refused_by_values`).
        bounds = [v for v in (kwargs.get("min_value"), kwargs.get("max_value")) if v is not None]
        return (
            isinstance(column, (T.DoubleType, T.DecimalType, *integral))
            and bool(bounds)
            and all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and v == v  # not NaN
                for v in bounds
            )
        )
    return False


def _is_int(value: Any) -> bool:
    """A Python int (not a bool) that fits a long."""
    if isinstance(value, bool) or not isinstance(value, int):
        return False
    return _LONG_MIN <= value <= _LONG_MAX


def split(
    checks: tuple[QualityCheck, ...] | list[QualityCheck], schema: StructType
) -> tuple[list[QualityCheck], list[QualityCheck]]:
    """The checks pandas may run and those that stay on Spark, each in the suite's order."""
    types = {f.name: f.dataType for f in schema.fields}
    ready = [c for c in checks if _ready(c, types)]
    return ready, [c for c in checks if c not in ready]


def columns_of(checks: list[QualityCheck]) -> list[str]:
    """The columns `checks` read, in first-use order."""
    return list(dict.fromkeys(name for check in checks for name in check.columns))


def refused_by_values(table: pa.Table, checks: list[QualityCheck]) -> set[str]:
    """The checks (by name) whose columns hold values pandas would judge otherwise: a NaN in
    a floating column (Spark's value, pandas' missing), an integer beyond 2**53 under a range
    (exact in Python, a double in Spark), a character beyond the BMP under a pattern (see
    `_BEYOND_BMP`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    nan = {
        name
        for name, column in zip(table.column_names, table.columns, strict=True)
        if pa.types.is_floating(column.type) and pc.any(pc.is_nan(column)).as_py()
    }
    wide = {
        name
        for name, column in zip(table.column_names, table.columns, strict=True)
        if (pa.types.is_integer(column.type) or pa.types.is_decimal(column.type))
        and column.null_count < len(column)
        and _largest_digits(column) > _EXACT_DOUBLE
    }
    beyond_bmp = {
        name
        for name, column in zip(table.column_names, table.columns, strict=True)
        if pa.types.is_string(column.type)
        and pc.any(pc.match_substring_regex(column, _BEYOND_BMP)).as_py()
    }
    return {
        c.name
        for c in checks
        if set(c.columns) & nan
        or (c.expectation == "ExpectColumnValuesToBeBetween" and c.kwargs["column"] in wide)
        or (c.expectation == "ExpectColumnValuesToMatchRegex" and c.kwargs["column"] in beyond_bmp)
    }


# GX's Spark engine reports no unexpected count (None) for these on a frame with no rows
# (a sum over nothing); its pandas engine reports 0. `empty_as_on_spark` makes them agree.
_NO_COUNT_WHEN_EMPTY = frozenset(
    {
        "expect_column_values_to_not_be_null",
        "expect_column_values_to_be_between",
        "expect_column_values_to_be_in_set",
        "expect_column_value_lengths_to_be_between",
        "expect_column_values_to_match_regex",
    }
)


def empty_as_on_spark(result: dict) -> None:
    """Sets one GX result (of a check on no rows, on pandas) as GX's Spark engine gives it."""
    if result["expectation_config"]["type"] in _NO_COUNT_WHEN_EMPTY and result.get("result"):
        result["result"]["unexpected_count"] = None


def samples_from_spark(check: QualityCheck, schema: StructType) -> bool:
    """Whether the samples of `check`'s unexpected values must come from Spark to read the
    same: a pair of timestamps (pandas writes them in UTC to the microsecond, Spark in the
    driver's local time, as Python's `isoformat`), a range on a decimal column (compared
    as doubles in memory; Spark's samples are the decimals), and a uniqueness check (Spark's
    samples come sorted by value)."""
    from pyspark.sql import types as T

    types = {f.name: f.dataType for f in schema.fields}
    if check.expectation == "ExpectColumnValuesToBeUnique":
        return True  # Spark's window sorts the repeated values; pandas keeps the rows' order
    if check.expectation == "ExpectColumnValuesToBeBetween":
        return isinstance(types.get(check.kwargs.get("column")), T.DecimalType)
    column = types.get(check.kwargs.get("column_A"))
    return check.expectation == "ExpectColumnPairValuesAToBeGreaterThanB" and isinstance(
        column, (T.TimestampType, T.TimestampNTZType)
    )


def _largest_digits(column: pa.ChunkedArray) -> int:
    """The largest magnitude in an integer column, or unscaled in a decimal one (every
    decimal of scale above 22 counts as wide: 10**scale is then no double)."""
    import pyarrow.compute as pc

    largest = max(abs(pc.min(column).as_py()), abs(pc.max(column).as_py()))
    scale = getattr(column.type, "scale", 0)
    if scale > 22:
        return _EXACT_DOUBLE + 1
    return int(largest.scaleb(scale)) if scale else int(largest)


def to_pandas(table: pa.Table) -> pd.DataFrame:
    """`table` as pandas with every value as Spark compares it and every null None: integers
    as Python ints and floats as Python floats where a column has nulls (not NaN, which GX
    would count as distinct values), decimals as the doubles Spark compares them as, dates as
    `date`, timestamps at microseconds."""
    import pandas as pd
    import pyarrow as pa

    frame = table.to_pandas(integer_object_nulls=True, date_as_object=True)
    for name, column in zip(table.column_names, table.columns, strict=True):
        if pa.types.is_decimal(column.type):  # compared as doubles, as Spark does
            values = [None if v is None else float(v) for v in column.to_pylist()]
            frame[name] = pd.Series(values, dtype=object, index=frame.index)
        elif pa.types.is_floating(column.type) and column.null_count:
            frame[name] = pd.Series(column.to_pylist(), dtype=object, index=frame.index)
    return frame
