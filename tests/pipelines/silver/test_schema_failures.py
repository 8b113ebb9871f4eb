"""`schema_failures`: the keywords a batch's rows failed, counted per row, and kept small
enough to record with the watermark (a KV value) whatever fails."""

from types import SimpleNamespace

from pipelines.silver.layout import EVENT_TYPE, SCHEMA_ERRORS
from pipelines.silver.schema_verdicts import (
    EXAMPLE,
    MOST_FAILED,
    MOST_FAILED_IN_ALL,
    schema_failures,
)

CHECKED = SimpleNamespace(event_types=[SimpleNamespace(schema_check=object())])
SCHEMA = f"{EVENT_TYPE} string, seq long, {SCHEMA_ERRORS} array<struct<at:string,message:string>>"


def test_a_row_counts_once_per_keyword_and_the_count_past_the_tenth_error_is_no_keyword(spark):
    twice = [("/items/type", "/0: not a number"), ("/items/type", "/1: not a number")]
    rows = [
        ("A", 1, [{"at": at, "message": m} for at, m in twice]),
        (
            "A",
            2,
            [{"at": "/items/type", "message": "/3: x"}, {"at": None, "message": "and 2 more"}],
        ),
        ("B", 3, []),
    ]

    found = schema_failures(spark.createDataFrame(rows, SCHEMA), CHECKED)

    assert found == {"A": {"/items/type": {"rows": 2, "example": "/0: not a number"}}}


def test_what_is_kept_is_bounded_per_event_type_in_all_and_in_length(spark):
    long_place = "/properties/" + "x" * 500
    rows = [
        (f"E{n % 6}", seq, [{"at": f"{long_place}/{n}", "message": "m" * 1000}])
        for n in range(400)
        for seq in range(n * 10, n * 10 + 1 + n % 7)
    ]

    found = schema_failures(spark.createDataFrame(rows, SCHEMA), CHECKED)

    kept = [(at, entry) for table in found.values() for at, entry in table.items()]
    assert len(kept) == MOST_FAILED_IN_ALL
    assert max(len(table) for table in found.values()) <= MOST_FAILED
    assert all(len(at) == len(e["example"]) == EXAMPLE for at, e in kept)
    # A place keeps its end, where the keyword is: long places stay apart.
    assert all(at.startswith("...") and at.rsplit("/", 1)[1].isdigit() for at, _ in kept)
    assert min(e["rows"] for _, e in kept) >= 3  # the most failed first: 1 to 7 rows each
