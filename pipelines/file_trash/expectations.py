"""The Great Expectations suites of the file trash silver tables, defined in code.

Each suite runs on the *candidate* frame of its silver table: every row of that event type
before the valid/quarantine split, with its typed silver columns plus `failed_rules`. Rows
that break a rule are quarantined one by one by the pipeline whatever the suite says; a check
asks whether the batch *as a whole* is healthy, so every expectation carries `mostly` and a
failing critical check stops gold. Each check is tagged with the rule of
`pipelines.file_trash.rules` it enforces (the same name quarantine rows list in
`failed_rules`); its name is the Dagster asset check name.

All expectation types used here (not null, unique, between, match regex) were checked on
Spark DataFrames with GX 1.24: uniqueness is a window count per value, and a timestamp bound
is a tz-aware `datetime` compared as a Spark TIMESTAMP literal.
"""

from __future__ import annotations

import datetime as dt

from pipelines.file_trash import rules
from resources.quality import QualityCheck, QualitySuite

FILE_DELETED_SUITE = "silver/file_deleted"
FILE_TRASHED_SUITE = "silver/file_trashed"

FILE_DELETED_REQUIRED = (
    "event_id",
    "event_timestamp",
    "file_id",
    "file_name",
    "file_path",
    "file_size",
    "mime_type",
    "user_id",
    "deleted_at",
)
FILE_TRASHED_REQUIRED = (
    "event_id",
    "event_timestamp",
    "trash_id",
    "file_id",
    "file_name",
    "user_id",
    "trashed_at",
    "expires_at",
    "original_event_id",
)


def _check_mostly(mostly: float) -> None:
    if not 0 < mostly <= 1:
        raise ValueError(f"mostly must be in (0, 1], got {mostly!r}; e.g. 0.95 for 95% of rows")


def _not_null_checks(columns: tuple[str, ...], mostly: float) -> list[QualityCheck]:
    return [
        QualityCheck(
            name=f"{column}_not_null",
            rule=rules.REQUIRED_FIELDS_PRESENT.name,
            description=f"`{column}` is not null in at least {mostly:.0%} of the rows. It is "
            "null when its field is missing from the payload, and also when the field has the "
            "wrong JSON type (it does not parse into the typed column): both count here.",
            critical=True,
            expectation="ExpectColumnValuesToNotBeNull",
            kwargs={"column": column, "mostly": mostly},
        )
        for column in columns
    ]


def _event_id_unique(mostly: float) -> QualityCheck:
    return QualityCheck(
        name="event_id_unique",
        rule=rules.EVENT_ID_UNIQUE.name,
        description=f"At least {mostly:.0%} of the non-null `event_id`s occur once in the "
        "batch. GX counts every row of a repeated eventId, the first one included, while the "
        "pipeline quarantines only the later copies (and copies of rows already in silver).",
        critical=True,
        expectation="ExpectColumnValuesToBeUnique",
        kwargs={"column": "event_id", "mostly": mostly},
    )


def file_deleted_suite(*, now: dt.datetime, mostly: float = 0.95) -> QualitySuite:
    """The suite of `silver/file_deleted`, over its candidate frame.

    Critical (they block gold): required fields present, event_id unique, file_size in range.
    Warnings: mime_type well formed, deleted_at not in the future, user_id format.

    Args:
        now: the clock (tz-aware); deleted_at may be at most `now + CLOCK_SKEW`.
        mostly: the share of rows each check needs to pass, in (0, 1].

    Returns:
        The suite, one check per expectation, each tagged with its rule.

    Raises:
        ValueError: `now` is naive or `mostly` is out of range.
    """
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError(f"now must be timezone-aware (UTC), got {now!r}")
    _check_mostly(mostly)
    latest = (now + rules.CLOCK_SKEW).astimezone(dt.UTC)
    share = f"at least {mostly:.0%} of the non-null"
    checks = [
        *_not_null_checks(FILE_DELETED_REQUIRED, mostly),
        _event_id_unique(mostly),
        QualityCheck(
            name="file_size_in_range",
            rule=rules.FILE_SIZE_IN_RANGE.name,
            description=f"In {share} rows, 0 <= `file_size` <= {rules.MAX_FILE_SIZE} (1 TiB).",
            critical=True,
            expectation="ExpectColumnValuesToBeBetween",
            kwargs={
                "column": "file_size",
                "min_value": 0,
                "max_value": rules.MAX_FILE_SIZE,
                "mostly": mostly,
            },
        ),
        QualityCheck(
            name="mime_type_well_formed",
            rule=rules.MIME_TYPE_WELL_FORMED.name,
            description=f"In {share} rows, `mime_type` matches {rules.MIME_TYPE_PATTERN}.",
            critical=False,
            expectation="ExpectColumnValuesToMatchRegex",
            kwargs={
                "column": "mime_type",
                "regex": rules.spark_pattern(rules.MIME_TYPE_PATTERN),
                "mostly": mostly,
            },
        ),
        QualityCheck(
            name="deleted_at_not_in_future",
            rule=rules.DELETED_AT_NOT_IN_FUTURE.name,
            description=f"In {share} rows, `deleted_at` is at most {latest.isoformat()} "
            f"(the run's clock plus {rules.CLOCK_SKEW} of clock skew).",
            critical=False,
            expectation="ExpectColumnValuesToBeBetween",
            kwargs={"column": "deleted_at", "max_value": latest, "mostly": mostly},
        ),
        QualityCheck(
            name="user_id_format",
            rule=rules.USER_ID_FORMAT.name,
            description=f"In {share} rows, `user_id` matches {rules.USER_ID_PATTERN}.",
            critical=False,
            expectation="ExpectColumnValuesToMatchRegex",
            kwargs={
                "column": "user_id",
                "regex": rules.spark_pattern(rules.USER_ID_PATTERN),
                "mostly": mostly,
            },
        ),
    ]
    return QualitySuite(name=FILE_DELETED_SUITE, checks=tuple(checks))


def file_trashed_suite(*, mostly: float = 0.95) -> QualitySuite:
    """The suite of `silver/file_trashed`: required fields present and event_id unique.

    Args:
        mostly: the share of rows each check needs to pass, in (0, 1].

    Returns:
        The suite; every check is critical.

    Raises:
        ValueError: `mostly` is out of range.
    """
    _check_mostly(mostly)
    checks = (*_not_null_checks(FILE_TRASHED_REQUIRED, mostly), _event_id_unique(mostly))
    return QualitySuite(name=FILE_TRASHED_SUITE, checks=checks)
