"""Gold: aggregates of `silver/file_deleted`, as pure DataFrame -> DataFrame transforms.

- `daily_trash_by_user`: files and bytes trashed per UTC day and user;
- `daily_trash_by_mime_type`: the same per mime type;
- `expiring_files`: files whose time in the trash ends within a horizon.

Days are the UTC dates of `deleted_at`, computed from epoch seconds, so they do not depend on
the session time zone.
"""

from __future__ import annotations

import datetime as dt

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    DateType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

_SECONDS_PER_DAY = 86_400


def _schema(*fields: tuple[str, object]) -> StructType:
    return StructType([StructField(name, data_type, nullable=True) for name, data_type in fields])


DAILY_TRASH_BY_USER_SCHEMA = _schema(
    ("day", DateType()), ("user_id", StringType()), ("files", LongType()), ("bytes", LongType())
)
DAILY_TRASH_BY_MIME_TYPE_SCHEMA = _schema(
    ("day", DateType()), ("mime_type", StringType()), ("files", LongType()), ("bytes", LongType())
)
EXPIRING_FILES_SCHEMA = _schema(
    ("file_id", StringType()),
    ("file_name", StringType()),
    ("user_id", StringType()),
    ("deleted_at", TimestampType()),
    ("expires_at", TimestampType()),
    ("days_left", IntegerType()),
)


def utc_day(timestamp: Column) -> Column:
    """The UTC calendar date of `timestamp`, whatever the session time zone."""
    return F.date_from_unix_date(F.floor(F.unix_seconds(timestamp) / _SECONDS_PER_DAY).cast("int"))


def _daily(file_deleted: DataFrame, key: str, schema: StructType) -> DataFrame:
    return (
        file_deleted.groupBy(utc_day(F.col("deleted_at")).alias("day"), F.col(key))
        .agg(F.count(F.lit(1)).alias("files"), F.sum("file_size").alias("bytes"))
        .to(schema)
    )


def daily_trash_by_user(file_deleted: DataFrame) -> DataFrame:
    """Files and bytes trashed per UTC day (of deleted_at) and user.

    Args:
        file_deleted: rows of `silver/file_deleted` (deleted_at, user_id, file_size used).

    Returns:
        One row per (day, user_id) with at least one file (`DAILY_TRASH_BY_USER_SCHEMA`).
    """
    return _daily(file_deleted, "user_id", DAILY_TRASH_BY_USER_SCHEMA)


def daily_trash_by_mime_type(file_deleted: DataFrame) -> DataFrame:
    """Files and bytes trashed per UTC day (of deleted_at) and mime type.

    Args:
        file_deleted: rows of `silver/file_deleted` (deleted_at, mime_type, file_size used).

    Returns:
        One row per (day, mime_type) with at least one file (`DAILY_TRASH_BY_MIME_TYPE_SCHEMA`).
    """
    return _daily(file_deleted, "mime_type", DAILY_TRASH_BY_MIME_TYPE_SCHEMA)


def expiring_files(file_deleted: DataFrame, *, now: dt.datetime, within: dt.timedelta) -> DataFrame:
    """Files whose trash retention ends in [now, now + within).

    Args:
        file_deleted: rows of `silver/file_deleted`.
        now: the clock (timezone-aware).
        within: the horizon, positive.

    Returns:
        file_id, file_name, user_id, deleted_at, expires_at and days_left, the whole days
        until expires_at (0 when it expires within 24 hours) (`EXPIRING_FILES_SCHEMA`).

    Raises:
        ValueError: if `now` is naive or `within` is not positive.
    """
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError(f"now must be timezone-aware (e.g. UTC), got the naive {now!r}")
    if within <= dt.timedelta(0):
        raise ValueError(f"within must be a positive timedelta, got {within!r}")
    expires_at = F.col("expires_at")
    micros_left = F.unix_micros(expires_at) - F.lit(_epoch_micros(now))
    days_left = F.floor(micros_left / (_SECONDS_PER_DAY * 1_000_000)).cast("int")
    return (
        file_deleted.where((expires_at >= F.lit(now)) & (expires_at < F.lit(now + within)))
        .withColumn("days_left", days_left)
        .select(*EXPIRING_FILES_SCHEMA.fieldNames())
        .to(EXPIRING_FILES_SCHEMA)
    )


def _epoch_micros(moment: dt.datetime) -> int:
    return (moment - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(
        microseconds=1
    )
