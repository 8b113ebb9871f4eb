"""The in-memory (pandas) engine gives Spark's verdicts: each check run on both, same frames.

`validate_dataframe` runs a small frame's checks on a pandas copy where
`resources.quality.in_memory` says the verdict is the same as on Spark. These tests run the
same suites on the same frames with `pandas_max_rows=0` (Spark only) and with the default,
and compare every outcome field; and they run Java's `rlike` and Python's `re.search` on the
translated pattern over the same strings.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from decimal import Decimal

import pyarrow as pa
import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import (
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from pipelines.contract.formats import FORMAT_REGEX
from pipelines.silver.rule_columns import spark_pattern
from resources.quality import QualityCheck, QualitySuite, validate_dataframe
from resources.quality.in_memory import python_regex, refused_by_values, split

NOW = dt.datetime(2026, 11, 26, 12, 0, tzinfo=dt.timezone.utc)

# Patterns as the silver suites write them, and constructs whose meaning differs subtly.
PATTERNS = [
    *FORMAT_REGEX.values(),
    r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})\z",  # a shape
    spark_pattern("^user-[0-9]{3,}$"),
    spark_pattern(r"^[A-Z]{3}$"),
    "^abc$",
    "c$",
    "$",
    "a.c",
    "^.+$",
    r"^\d+\z",
    r"\w+",
    r"^\s*$",
    r"\S",
    r"\D",
    r"[^a-z]",
    r"[\d\-.]+",
    r"[\s\w]",
    "(?:ab)+?c",
    "a{2,3}",
    "a{2,}b",
    "(?=ab)a",
    "(?!ab)a",
    "(?<=a)b",
    "(?<!a)b",
    "\\u00e9",
    "\\x41",
    "é.",
    r"\.\$\^\(",
    "(a|b)c",
    "x*",
    "[\\u0080-\\uffff]",  # not a character beyond the BMP, in both
    "(?<=^.)b",  # Java's lookbehind counts UTF-16 halves: such subjects go to Spark (below)
]
REFUSED = [
    "(?i)abc",
    "(?s).",
    "(?m)^a$",
    r"\bword\b",
    r"\p{L}+",
    "a++",
    "a*+",
    r"(a)\1",
    r"\Qa.b\E",
    "[a-z&&[^b]]",
    "[a[b]]",
    "[]a]",
    r"a\Z",
    r"\h",
    r"\v",
    r"\R",
    "(?<name>a)",
    "(?>a)",
    "a{,3}",
    "{2}",
    r"\x{41}",
    "\\ud83d\\ude00",
    "[a",
    r"\G",
    "\t",
    "a{2147483648}",  # over Java's limit
]
SUBJECTS = [
    "",
    "abc",
    "abc\n",
    "abc\r",
    "abc\r\n",
    "abc\n\n",
    "abc\r\n\n",
    "abc\u0085",
    "abc\u2028",
    "abc\u2029",
    "a\rc",
    "a\nc",
    "a\u0085c",
    "a\u2028c",
    "a\tc",
    "c",
    "ABC",
    "aaab",
    "ababc",
    "ba",
    "AB-12",
    "٣٤",  # Arabic-Indic digits: \d in Python's Unicode mode, not Java's
    "\U0001d7d9",  # a mathematical digit outside the BMP
    "😀x",
    "😀b",
    "é",
    "éx",
    "É",
    "ß",
    "\u00a0",  # no-break space: \s in Unicode, not in Java's default
    "\x0b",
    "\x0c",
    " ",
    "user-001",
    "user-001\n",
    "EUR",
    "EUR\n",
    "2026-11-26T12:00:00Z",
    "2026-11-26T12:00:00Z\n",
    "2026-11-26",
    "3f2504e0-4f89-11d3-9a0c-0305e82c3301",
    "bob@example.com",
    "bob@example.com\r",
    "12:30:00",
    "P1DT2H",
    "https://example.com/a?b=c",
    "example.com",
    "192.168.0.1",
    "::1",
    "QUJD",
    "x.y$^(",
]


def test_python_regex_translates_ascii_classes_the_end_and_java_line_terminators():
    assert python_regex(r"^\d+\z") == r"(?a)^\d+\Z"
    assert python_regex("a.c") == "(?a)a[^\\n\\r\\x85\\u2028\\u2029]c"
    assert python_regex("[a-z]+?") == "(?a)[a-z]+?"


@pytest.mark.parametrize("pattern", REFUSED)
def test_python_regex_refuses_what_could_mean_something_else(pattern):
    assert python_regex(pattern) is None


def test_every_translated_pattern_matches_exactly_the_strings_java_does(spark):
    """Spark's `rlike` (Java's `Matcher.find`) against Python's `re.search` on the translation,
    every pattern on every subject, in one Spark query."""
    assert all(python_regex(p) is not None for p in PATTERNS), [
        p for p in PATTERNS if python_regex(p) is None
    ]
    subjects = spark.createDataFrame([(s,) for s in SUBJECTS], "s string")
    row = subjects.agg(
        *(F.collect_list(F.col("s").rlike(p)).alias(f"p{i}") for i, p in enumerate(PATTERNS))
    ).first()
    differences = {
        (pattern, subject)
        for i, pattern in enumerate(PATTERNS)
        for subject, java in zip(SUBJECTS, row[f"p{i}"], strict=True)
        if java != bool(re.search(python_regex(pattern), subject))
    }
    # Only where a lookbehind meets a character beyond the BMP (Java counts its two UTF-16
    # halves): such subjects keep a pattern on Spark (`refused_by_values`).
    assert differences == {("(?<=^.)b", "😀b")}
    beyond = [s for s in SUBJECTS if any(ord(c) > 0xFFFF for c in s)]
    check = _check("p", "ExpectColumnValuesToMatchRegex", column="s", regex="x")
    for subject in beyond:
        table = pa.table({"s": ["abc", subject, None]})
        assert refused_by_values(table, [check]) == {"p"}, subject
    assert refused_by_values(pa.table({"s": ["abc", "é", None]}), [check]) == set()


SCHEMA = StructType(
    [
        StructField("id", StringType()),
        StructField("n", LongType()),
        StructField("x", DoubleType()),
        StructField("f", FloatType()),
        StructField("d", DecimalType(20, 2)),
        StructField("day", DateType()),
        StructField("day__latest", DateType()),
        StructField("at", TimestampType()),
        StructField("at__latest", TimestampType()),
        StructField("name", StringType()),
    ]
)
T0 = dt.datetime(2026, 11, 26, 11, 0, tzinfo=dt.timezone.utc)


def _row(i: int, **overrides):
    row = {
        "id": f"e-{i}",
        "n": i,
        "x": i / 4,
        "f": float(i),
        "d": Decimal(f"{i}.25"),
        "day": dt.date(2026, 11, 26),
        "day__latest": dt.date(2026, 11, 26),
        "at": T0,
        "at__latest": T0 + dt.timedelta(minutes=5),
        "name": "doc",
    }
    return tuple({**row, **overrides}[f.name] for f in SCHEMA.fields)


def _check(name: str, expectation: str, **kwargs) -> QualityCheck:
    return QualityCheck(
        name=name,
        rule=name,
        description=name,
        critical=True,
        expectation=expectation,
        kwargs={"mostly": 1.0, **kwargs} if "column" in kwargs else kwargs,
    )


SUITE = QualitySuite(
    name="engines",
    checks=(
        _check("id_not_null", "ExpectColumnValuesToNotBeNull", column="id"),
        _check("n_not_null", "ExpectColumnValuesToNotBeNull", column="n"),
        _check("x_not_null", "ExpectColumnValuesToNotBeNull", column="x"),
        _check("id_unique", "ExpectColumnValuesToBeUnique", column="id"),
        _check("n_unique", "ExpectColumnValuesToBeUnique", column="n"),
        _check("n_range", "ExpectColumnValuesToBeBetween", column="n", min_value=0, max_value=90),
        _check(
            "n_strict",
            "ExpectColumnValuesToBeBetween",
            column="n",
            min_value=0,
            max_value=50,
            strict_min=True,
            strict_max=True,
        ),
        _check(
            "x_range", "ExpectColumnValuesToBeBetween", column="x", min_value=-0.0, max_value=9.5
        ),
        _check("f_range", "ExpectColumnValuesToBeBetween", column="f", min_value=0.1),
        _check("d_range", "ExpectColumnValuesToBeBetween", column="d", max_value=20.3),
        # 0.30 is above the double 0.3 (0.2999...89), but Spark compares it as that double
        _check("d_tenths", "ExpectColumnValuesToBeBetween", column="d", max_value=0.3),
        _check("name_set", "ExpectColumnValuesToBeInSet", column="name", value_set=["doc", "pdf"]),
        _check("n_set", "ExpectColumnValuesToBeInSet", column="n", value_set=[1, 2, 3]),
        _check("name_len", "ExpectColumnValueLengthsToBeBetween", column="name", max_value=3),
        _check("name_min", "ExpectColumnValueLengthsToBeBetween", column="name", min_value=3),
        _check("id_pattern", "ExpectColumnValuesToMatchRegex", column="id", regex=r"^e-\d+\z"),
        _check("name_lower", "ExpectColumnValuesToMatchRegex", column="name", regex="^[a-z]+$"),
        _check("name_flag", "ExpectColumnValuesToMatchRegex", column="name", regex="(?i)^DOC"),
        _check(
            "at_not_in_future",
            "ExpectColumnPairValuesAToBeGreaterThanB",
            column_A="at__latest",
            column_B="at",
            or_equal=True,
            ignore_row_if="either_value_is_missing",
        ),
        _check(  # GX's default ignore_row_if: a row missing one value is compared
            "day_pair_default",
            "ExpectColumnPairValuesAToBeGreaterThanB",
            column_A="day__latest",
            column_B="day",
            or_equal=True,
        ),
        _check(
            "day_not_in_future",
            "ExpectColumnPairValuesAToBeGreaterThanB",
            column_A="day__latest",
            column_B="day",
            or_equal=True,
            ignore_row_if="either_value_is_missing",
        ),
    ),
)
# The checks no frame lets pandas run: a flag in the pattern, a float32 range, a pair that
# compares rows missing one value.
ALWAYS_SPARK = {"name_flag", "f_range", "day_pair_default"}

FRAMES = {
    "clean": [_row(i) for i in range(1, 40)],
    "breaking": [
        *(_row(i) for i in range(1, 30)),
        _row(30, id=None, n=None, x=None),
        _row(31, id="e-1", n=1),  # a repeated id and n
        _row(32, n=-5, x=-0.0, name="Doc"),
        _row(33, n=120, x=math.inf, name="docs\n"),
        _row(34, x=-math.inf, name="do"),
        _row(35, name="doc\r"),
        _row(36, name="pdf\u2028"),
        _row(37, id="e-٣", name="ééé"),
        _row(38, id="e-38\n", name=None),
        _row(39, at=T0 + dt.timedelta(hours=1), day=dt.date(2026, 11, 27)),
        _row(40, at=None, day__latest=None),
        _row(41, at=dt.datetime(9999, 12, 31, tzinfo=dt.timezone.utc), at__latest=None),
        _row(42, at=dt.datetime(1, 1, 2, tzinfo=dt.timezone.utc), day=dt.date(1, 1, 1)),
        _row(50, x=9.5, n=50),
        _row(51, n=0, x=0.0),
        _row(52, d=Decimal("20.30")),
        _row(53, d=Decimal("20.31")),
        _row(54, d=Decimal("-9999999999.99")),
    ],
    "decimals in range": [_row(1, d=Decimal("0.30")), _row(2, d=Decimal("0.10")), _row(3, d=None)],
    "wide integers": [_row(1), _row(2, n=2**53 + 1), _row(3, n=-(2**62)), _row(4, n=90)],
    "wide decimals": [_row(1, d=Decimal("-123456789012345678.91")), _row(2, d=Decimal("20.3"))],
    "nan": [_row(1), _row(2, x=math.nan), _row(3, x=None)],
    "all null": [_row(i, id=None, n=None, x=None, name=None) for i in range(3)],
    "empty": [],
    "beyond the BMP": [_row(1), _row(2, name="😀"), _row(3, id="e-😀")],
}


def _gx_results(report):
    return json.loads(report.result_json)["results"]


def _outcomes(report):
    return [o.to_dict() for o in report.outcomes]


@pytest.mark.parametrize("frame", list(FRAMES))
def test_both_engines_give_the_same_outcome_for_every_check(spark, frame):
    df = spark.createDataFrame(FRAMES[frame], SCHEMA)
    on_spark = validate_dataframe(df, SUITE, evaluated_at=NOW, pandas_max_rows=0)
    either = validate_dataframe(df, SUITE, evaluated_at=NOW)

    assert on_spark.meta["engines"]["pandas"] == []
    in_memory = set(either.meta["engines"]["pandas"])
    assert in_memory and not in_memory & ALWAYS_SPARK
    if frame == "nan":  # x holds a NaN: its checks stay on Spark
        assert {"x_not_null", "x_range"} <= set(either.meta["engines"]["spark"])
    if frame == "wide integers":  # beyond 2**53 a range on n is judged as doubles, on Spark
        assert {"n_range", "n_strict"} <= set(either.meta["engines"]["spark"])
    if frame == "beyond the BMP":
        assert {"name_lower", "id_pattern"} <= set(either.meta["engines"]["spark"])
    if frame == "decimals in range":
        assert {"d_range", "d_tenths"} <= in_memory
        assert either.outcome("d_tenths").success
    if frame == "wide decimals":  # 19 digits: not every such decimal is a double
        assert "d_range" in either.meta["engines"]["spark"]
    assert (either.success, either.row_count) == (on_spark.success, on_spark.row_count)
    assert _outcomes(either) == _outcomes(on_spark)
    assert _gx_results(either) == _gx_results(on_spark)
    if frame == "breaking":  # found rows: its samples are Spark's
        assert "at_not_in_future" in either.meta["engines"]["spark"]
        assert {o.name for o in either.outcomes if not o.success} >= {
            "id_not_null",
            "id_unique",
            "n_range",
            "x_range",
            "name_lower",
            "at_not_in_future",
            "day_not_in_future",
        }


def test_a_frame_over_the_limit_is_checked_on_spark(spark):
    df = spark.createDataFrame(FRAMES["breaking"], SCHEMA)
    report = validate_dataframe(df, SUITE, evaluated_at=NOW, pandas_max_rows=10)

    assert report.meta["engines"] == {"pandas": [], "spark": [c.name for c in SUITE.checks]}
    assert report.row_count == len(FRAMES["breaking"])


def test_the_gx_result_keeps_the_java_pattern_and_no_pandas_row_numbers(spark):
    df = spark.createDataFrame(FRAMES["breaking"], SCHEMA)
    report = validate_dataframe(df, SUITE, evaluated_at=NOW, result_format="COMPLETE")
    results = {
        r["expectation_config"]["meta"]["check"]: r
        for r in json.loads(report.result_json)["results"]
    }

    assert "id_pattern" in report.meta["engines"]["pandas"]
    assert results["id_pattern"]["expectation_config"]["kwargs"]["regex"] == r"^e-\d+\z"
    assert not any("unexpected_index_list" in (r["result"] or {}) for r in results.values())
    assert [r["expectation_config"]["meta"]["check"] for r in results.values()] == [
        c.name for c in SUITE.checks
    ]


def test_strings_with_a_collation_and_nan_bounds_stay_on_spark():
    lower_case = StructType(
        [StructField("s", StringType("UTF8_LCASE")), StructField("x", DoubleType())]
    )
    checks = [
        _check("unique", "ExpectColumnValuesToBeUnique", column="s"),
        _check("in_set", "ExpectColumnValuesToBeInSet", column="s", value_set=["a"]),
        _check("pattern", "ExpectColumnValuesToMatchRegex", column="s", regex="a"),
        _check("nan", "ExpectColumnValuesToBeBetween", column="x", max_value=math.nan),
        _check("not_null", "ExpectColumnValuesToNotBeNull", column="s"),
    ]

    ready, rest = split(checks, lower_case)

    assert [c.name for c in ready] == ["not_null"]
    assert [c.name for c in rest] == ["unique", "in_set", "pattern", "nan"]


def test_a_frame_arrow_cannot_carry_is_checked_on_spark(spark):
    df = spark.range(3).select(F.expr("INTERVAL '1' YEAR").alias("span"))
    suite = QualitySuite(
        name="spans", checks=(_check("span", "ExpectColumnValuesToNotBeNull", column="span"),)
    )

    report = validate_dataframe(df, suite, evaluated_at=NOW)

    assert report.success and report.row_count == 3
    assert report.meta["engines"] == {"pandas": [], "spark": ["span"]}


def test_a_copy_pandas_cannot_hold_is_checked_on_spark(spark, monkeypatch):
    from resources.quality import in_memory

    def refuse(table):
        raise ValueError("year 10000 is out of range")

    df = spark.createDataFrame(FRAMES["breaking"], SCHEMA)
    on_spark = validate_dataframe(df, SUITE, evaluated_at=NOW, pandas_max_rows=0)
    monkeypatch.setattr(in_memory, "to_pandas", refuse)

    report = validate_dataframe(df, SUITE, evaluated_at=NOW)

    assert report.meta["engines"]["pandas"] == []
    assert _outcomes(report) == _outcomes(on_spark)
