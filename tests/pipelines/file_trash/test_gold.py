"""Gold: daily trash per user and per mime type, and files about to expire, on a real Spark."""

import datetime as dt

import pytest
from chispa import assert_df_equality
from pyspark.sql.types import StructField, StructType

from pipelines.contract import read_contract
from pipelines.file_trash.gold import (
    DAILY_TRASH_BY_MIME_TYPE_SCHEMA,
    DAILY_TRASH_BY_USER_SCHEMA,
    EXPIRING_FILES_SCHEMA,
    daily_trash_by_mime_type,
    daily_trash_by_user,
    expiring_files,
)
from pipelines.settings import PROJECT_DIR
from pipelines.silver import silver_schema

CONTRACT = read_contract(PROJECT_DIR / "pipelines" / "file_trash" / "contract.yaml")
# silver/file_deleted's columns and types, without its column comments (which pass through
# to the gold frames, whose expected frames here carry none).
SILVER_FILE_DELETED_SCHEMA = StructType(
    [
        StructField(f.name, f.dataType)
        for f in silver_schema(CONTRACT.event_type("FileDeletedEvent"))
    ]
)
NOW = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.timezone.utc)
DAY = dt.date(2026, 11, 21)


def at(day: int, hour: int, minute: int = 0, second: int = 0) -> dt.datetime:
    return dt.datetime(2026, 11, day, hour, minute, second, tzinfo=dt.timezone.utc)


def silver_rows(spark, rows, *, retention=dt.timedelta(days=30)):
    """silver/file_deleted rows from (file_id, user_id, mime_type, file_size, deleted_at)."""
    full = [
        (
            f"e-{file_id}", "FileDeletedEvent", deleted_at, file_id, f"{file_id}.bin",
            f"/users/{user}/{file_id}.bin", size, mime, user, deleted_at, deleted_at + retention,
            "FILE_EVENTS", seq, "files.deleted", deleted_at, "run-1", NOW, "v1",
        )
        for seq, (file_id, user, mime, size, deleted_at) in enumerate(rows, start=1)
    ]  # fmt: skip
    return spark.createDataFrame(full, SILVER_FILE_DELETED_SCHEMA)


@pytest.fixture(scope="module")
def trash(spark):
    return silver_rows(
        spark,
        [
            ("a", "user-001", "application/pdf", 100, at(20, 23, 59, 59)),
            ("b", "user-001", "application/pdf", 200, at(21, 0, 0, 0)),
            ("c", "user-001", "image/png", 300, at(21, 11)),
            ("d", "user-002", "application/pdf", 1 << 40, at(21, 11)),
            ("e", "user-002", "image/png", 0, at(22, 1)),
        ],
    )


def test_daily_trash_by_user_counts_files_and_bytes_per_utc_day(spark, trash):
    expected = spark.createDataFrame(
        [
            (dt.date(2026, 11, 20), "user-001", 1, 100),
            (DAY, "user-001", 2, 500),
            (DAY, "user-002", 1, 1 << 40),
            (dt.date(2026, 11, 22), "user-002", 1, 0),
        ],
        DAILY_TRASH_BY_USER_SCHEMA,
    )

    result = daily_trash_by_user(trash)

    assert_df_equality(result, expected, ignore_row_order=True, ignore_nullable=True)


def test_daily_trash_by_mime_type_counts_files_and_bytes_per_utc_day(spark, trash):
    expected = spark.createDataFrame(
        [
            (dt.date(2026, 11, 20), "application/pdf", 1, 100),
            (DAY, "application/pdf", 2, 200 + (1 << 40)),
            (DAY, "image/png", 1, 300),
            (dt.date(2026, 11, 22), "image/png", 1, 0),
        ],
        DAILY_TRASH_BY_MIME_TYPE_SCHEMA,
    )

    result = daily_trash_by_mime_type(trash)

    assert_df_equality(result, expected, ignore_row_order=True, ignore_nullable=True)


def test_the_day_is_the_utc_date_whatever_the_session_time_zone(spark, trash):
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        days = {(r.day, r.user_id): r.files for r in daily_trash_by_user(trash).collect()}
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)

    assert days[(DAY, "user-001")] == 2


def test_expiring_files_are_those_expiring_from_now_until_the_horizon(spark):
    retention = dt.timedelta(days=30)
    deleted = {
        "expired": NOW - retention - dt.timedelta(microseconds=1),
        "now": NOW - retention,
        "in 36 hours": NOW - retention + dt.timedelta(hours=36),
        "last moment": NOW - retention + dt.timedelta(days=7) - dt.timedelta(microseconds=1),
        "at the horizon": NOW - retention + dt.timedelta(days=7),
    }
    rows = [(name, "user-001", "text/plain", 1, moment) for name, moment in deleted.items()]
    frame = silver_rows(spark, rows, retention=retention)

    result = expiring_files(frame, now=NOW, within=dt.timedelta(days=7))

    expected = spark.createDataFrame(
        [
            (name, f"{name}.bin", "user-001", deleted[name], deleted[name] + retention, days)
            for name, days in [("now", 0), ("in 36 hours", 1), ("last moment", 6)]
        ],
        EXPIRING_FILES_SCHEMA,
    )
    assert_df_equality(result, expected, ignore_row_order=True, ignore_nullable=True)


def test_empty_silver_gives_empty_gold_with_the_gold_schemas(spark):
    empty = spark.createDataFrame([], SILVER_FILE_DELETED_SCHEMA)

    frames = [
        (daily_trash_by_user(empty), DAILY_TRASH_BY_USER_SCHEMA),
        (daily_trash_by_mime_type(empty), DAILY_TRASH_BY_MIME_TYPE_SCHEMA),
        (expiring_files(empty, now=NOW, within=dt.timedelta(days=7)), EXPIRING_FILES_SCHEMA),
    ]

    for frame, schema in frames:
        assert [(f.name, f.dataType) for f in frame.schema] == [
            (f.name, f.dataType) for f in schema
        ]
        assert frame.count() == 0


@pytest.mark.parametrize(
    ("now", "within", "message"),
    [
        (dt.datetime(2026, 11, 21), dt.timedelta(days=1), "now must be timezone-aware"),
        (NOW, dt.timedelta(0), "within must be a positive timedelta"),
    ],
)
def test_expiring_files_refuses_a_naive_clock_or_an_empty_horizon(spark, now, within, message):
    empty = spark.createDataFrame([], SILVER_FILE_DELETED_SCHEMA)
    with pytest.raises(ValueError, match=message):
        expiring_files(empty, now=now, within=within)
