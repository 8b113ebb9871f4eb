"""The row-level quality rules of the file trash silver tables, in one place.

Each rule has a stable name: quarantine rows list the rules they broke in `failed_rules`, the
Great Expectations suite tags its expectations with it, and the asset checks count by it.

The Column builders here read a *checked frame*: the rows `pipelines.file_trash.silver` parses
from bronze, with the typed silver columns (`event_type`, `event_id`, `file_size`, `mime_type`,
`user_id`, `deleted_at`, `stream`, `seq`) and these internal columns:

- `_payload_problem` (string): why the payload is not a JSON object; null if it is one.
- `_missing_fields` (array<string>): JSON paths absent or null, e.g. `data.userId`.
- `_mistyped_fields` (array<string>): present paths of the wrong JSON type, with what was
  expected, e.g. `data.fileSize (expected an integer)`.
- `_duplicate_of` (struct<seq long, stream string>): the first occurrence of the row's
  eventId; null unless the row is a later copy.

A rule that cannot be evaluated (its field is missing or mistyped, or the row is of an event
type the rule does not apply to) is not reported as broken: the missing or mistyped field is.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as F

# Re-exported: the event model owns the bounds its JSON Schemas publish; the rules check them.
from pipelines.file_trash.events import MAX_FILE_SIZE, MIME_TYPE_PATTERN, USER_ID_PATTERN

FILE_DELETED_EVENT = "FileDeletedEvent"
FILE_TRASHED_EVENT = "FilePlacedInTrashEvent"
EVENT_TYPES = (FILE_DELETED_EVENT, FILE_TRASHED_EVENT)

CLOCK_SKEW = dt.timedelta(minutes=5)
TRASH_RETENTION = dt.timedelta(days=30)

PAYLOAD_PROBLEM = "_payload_problem"
MISSING_FIELDS = "_missing_fields"
MISTYPED_FIELDS = "_mistyped_fields"
DUPLICATE_OF = "_duplicate_of"


@dataclass(frozen=True)
class Rule:
    """A row-level quality rule.

    Attributes:
        name: the stable identifier (quarantine rows, expectation meta, asset checks).
        description: one readable sentence for the UI and the quarantine docs.
        applies_to: the event types whose rows the rule checks.
    """

    name: str
    description: str
    applies_to: tuple[str, ...]


PARSEABLE_JSON = Rule(
    "parseable_json",
    "The payload is valid UTF-8 JSON whose top level is an object (not an array, number, "
    "string or null), with nothing after it.",
    EVENT_TYPES,
)
KNOWN_EVENT_TYPE = Rule(
    "known_event_type",
    f"eventType is {FILE_DELETED_EVENT} or {FILE_TRASHED_EVENT}; events of other types have "
    "no silver table.",
    EVENT_TYPES,
)
REQUIRED_FIELDS_PRESENT = Rule(
    "required_fields_present",
    "Every envelope field (eventId, eventType, timestamp, data) and every data field of the "
    "event type is present and not null.",
    EVENT_TYPES,
)
FIELD_TYPES_VALID = Rule(
    "field_types_valid",
    "Every present field has the JSON type of the event schema: text fields are strings, "
    "fileSize is an integer that fits in 64 bits, data is an object, and timestamps are "
    "ISO-8601 strings with a zone, such as 2026-11-21T10:00:00.000Z.",
    EVENT_TYPES,
)
EVENT_ID_UNIQUE = Rule(
    "event_id_unique",
    "No earlier message (lower stream sequence) of the same event type has the same eventId, "
    "in this batch or already in silver: the first occurrence is kept, later ones are "
    "quarantined.",
    EVENT_TYPES,
)
FILE_SIZE_IN_RANGE = Rule(
    "file_size_in_range",
    f"fileSize is between 0 and {MAX_FILE_SIZE:,} bytes (1 TiB).",
    (FILE_DELETED_EVENT,),
)
MIME_TYPE_WELL_FORMED = Rule(
    "mime_type_well_formed",
    "mimeType is a lower-case type/subtype such as application/pdf "
    f"(it matches {MIME_TYPE_PATTERN}).",
    (FILE_DELETED_EVENT,),
)
DELETED_AT_NOT_IN_FUTURE = Rule(
    "deleted_at_not_in_future",
    "deletedAt is not later than the time the stream stored the event plus "
    f"{int(CLOCK_SKEW.total_seconds() // 60)} minutes of allowed clock skew (a file cannot be "
    "deleted after the event saying so was published).",
    (FILE_DELETED_EVENT,),
)
USER_ID_FORMAT = Rule(
    "user_id_format",
    f"userId is 'user-' followed by at least three digits, such as user-001 "
    f"(it matches {USER_ID_PATTERN}).",
    (FILE_DELETED_EVENT,),
)

RULES = (
    PARSEABLE_JSON,
    KNOWN_EVENT_TYPE,
    REQUIRED_FIELDS_PRESENT,
    FIELD_TYPES_VALID,
    EVENT_ID_UNIQUE,
    FILE_SIZE_IN_RANGE,
    MIME_TYPE_WELL_FORMED,
    DELETED_AT_NOT_IN_FUTURE,
    USER_ID_FORMAT,
)
RULES_BY_NAME = {rule.name: rule for rule in RULES}


def spark_pattern(pattern: str) -> str:
    """`pattern` for Spark's `rlike`, its final `$` made `\\z` (the very end of the text).

    Java's `$` also matches before a final line break, so `^user-[0-9]{3,}$` would accept
    "user-001\\n".

    Args:
        pattern: a regular expression such as `USER_ID_PATTERN`.

    Returns:
        The pattern anchored at the end of the text.
    """
    return pattern[:-1] + r"\z" if pattern.endswith("$") else pattern


def _check_now(now: dt.datetime) -> None:
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError(f"now must be timezone-aware (e.g. UTC), got the naive {now!r}")


def _iso(column: Column) -> Column:
    return F.date_format(column, "yyyy-MM-dd'T'HH:mm:ss.SSSXXX")


def _applies(rule: Rule) -> Column:
    return F.col("event_type").isin(*rule.applies_to)


def _quoted(column: Column) -> Column:
    return F.concat(F.lit("'"), column, F.lit("'"))


def plus(timestamp: Column, delta: dt.timedelta) -> Column:
    """`timestamp + delta`, exact to the microsecond and independent of the session time zone."""
    return F.timestamp_micros(
        F.unix_micros(timestamp) + F.lit(delta // dt.timedelta(microseconds=1))
    )


def _checks(now: dt.datetime) -> dict[str, tuple[Column, Column]]:
    """Per rule name: (broken, detail), both evaluated on a checked frame."""
    _check_now(now)
    # The reference is the row's own publish time (never later than `now`), not the clock
    # of processing: so a row is judged the same however late, or how often, it is processed.
    latest = plus(F.least(F.col("published"), F.lit(now)), CLOCK_SKEW)
    event_type, event_id = F.col("event_type"), F.col("event_id")
    size, mime, user = F.col("file_size"), F.col("mime_type"), F.col("user_id")
    deleted_at, first = F.col("deleted_at"), F.col(DUPLICATE_OF)
    missing, mistyped = F.col(MISSING_FIELDS), F.col(MISTYPED_FIELDS)
    known = ", ".join(EVENT_TYPES)
    return {
        PARSEABLE_JSON.name: (F.col(PAYLOAD_PROBLEM).isNotNull(), F.col(PAYLOAD_PROBLEM)),
        KNOWN_EVENT_TYPE.name: (
            ~F.coalesce(event_type.isin(*EVENT_TYPES), F.lit(False)),
            F.when(
                event_type.isNull(), F.lit(f"eventType is not a string; expected {known}")
            ).otherwise(
                F.concat(F.lit("eventType "), _quoted(event_type), F.lit(f" is not {known}"))
            ),
        ),
        REQUIRED_FIELDS_PRESENT.name: (
            F.size(missing) > 0,
            F.concat(F.lit("missing or null: "), F.array_join(missing, ", ")),
        ),
        FIELD_TYPES_VALID.name: (
            F.size(mistyped) > 0,
            F.concat(F.lit("wrong type: "), F.array_join(mistyped, ", ")),
        ),
        EVENT_ID_UNIQUE.name: (
            _applies(EVENT_ID_UNIQUE) & first.isNotNull(),
            F.concat(
                F.lit("eventId "),
                _quoted(event_id),
                F.lit(" was first seen in stream "),
                _quoted(first["stream"]),
                F.lit(" at seq "),
                first["seq"].cast("string"),
                F.lit("; this later copy is not kept"),
            ),
        ),
        FILE_SIZE_IN_RANGE.name: (
            _applies(FILE_SIZE_IN_RANGE) & ~size.between(0, MAX_FILE_SIZE),
            F.concat(
                F.lit("fileSize "), size.cast("string"), F.lit(f" is outside [0, {MAX_FILE_SIZE}]")
            ),
        ),
        MIME_TYPE_WELL_FORMED.name: (
            _applies(MIME_TYPE_WELL_FORMED) & ~mime.rlike(spark_pattern(MIME_TYPE_PATTERN)),
            F.concat(
                F.lit("mimeType "), _quoted(mime), F.lit(f" does not match {MIME_TYPE_PATTERN}")
            ),
        ),
        DELETED_AT_NOT_IN_FUTURE.name: (
            _applies(DELETED_AT_NOT_IN_FUTURE) & (deleted_at > latest),
            F.concat(
                F.lit("deletedAt "),
                _iso(deleted_at),
                F.lit(" is later than its publish time + clock skew ("),
                _iso(latest),
                F.lit(")"),
            ),
        ),
        USER_ID_FORMAT.name: (
            _applies(USER_ID_FORMAT) & ~user.rlike(spark_pattern(USER_ID_PATTERN)),
            F.concat(F.lit("userId "), _quoted(user), F.lit(f" does not match {USER_ID_PATTERN}")),
        ),
    }


def violations(*, now: dt.datetime) -> dict[str, Column]:
    """One boolean Column per rule name, true where a row of a checked frame breaks it.

    Never null: a rule that cannot be evaluated on a row is false there. When the payload is
    not a JSON object, only `parseable_json` is true.

    Args:
        now: the time of processing (timezone-aware), for `deleted_at_not_in_future`.

    Returns:
        The Columns, keyed and ordered like `RULES`.

    Raises:
        ValueError: if `now` is naive.
    """
    checks = _checks(now)
    parsed = F.col(PAYLOAD_PROBLEM).isNull()
    result = {}
    for rule in RULES:
        broken = F.coalesce(checks[rule.name][0], F.lit(False))
        result[rule.name] = broken if rule is PARSEABLE_JSON else parsed & broken
    return result


def failed_rules(*, now: dt.datetime) -> Column:
    """The names of the rules a row of a checked frame breaks, in `RULES` order.

    Args:
        now: the time of processing (timezone-aware).

    Returns:
        An array<string> Column, empty for a valid row.

    Raises:
        ValueError: if `now` is naive.
    """
    broken = violations(now=now)
    return F.array_compact(F.array(*(F.when(broken[r.name], F.lit(r.name)) for r in RULES)))


def failure_error(*, now: dt.datetime) -> Column:
    """A readable explanation of every rule a row breaks, e.g. `user_id_format: userId ...`.

    Args:
        now: the time of processing (timezone-aware).

    Returns:
        A string Column: `<rule>: <detail>` per broken rule joined by `; `, empty if valid.

    Raises:
        ValueError: if `now` is naive.
    """
    broken, checks = violations(now=now), _checks(now)
    parts = (
        F.when(broken[r.name], F.concat(F.lit(f"{r.name}: "), checks[r.name][1])) for r in RULES
    )
    return F.concat_ws("; ", *parts)
