"""Silver: bronze payloads parsed into typed rows, routed by eventType, checked, de-duplicated.

`route_bronze` is pure: bronze rows in, the valid rows of each silver table and the
quarantined rest out, every bronze row in exactly one of the three.

A payload is parsed once into a VARIANT (`try_parse_json`) and each field of the event schemas
is looked up with its JSON type (`schema_of_variant`), which tells a missing or null field
(`required_fields_present`) from one of the wrong JSON type (`field_types_valid`): `from_json`
cannot, as a string field turns the number 42 into the text "42". Timestamps are parsed with
an explicit ISO-8601 pattern; Spark's lenient cast would accept a bare date. `parse_json`
ignores what follows the first JSON value, so the text is parsed wrapped in `[...]` (exactly
one value inside) and must end with `}`; `{"a":1}] [{}` would still pass, as `{"a":1}`.

Duplicates (`event_id_unique`): among rows of a known event type with a string eventId, in
the batch and in `existing`, the lowest (seq, stream) per (event type, eventId) is the first
occurrence and every other row with that key is a duplicate, whatever else it breaks. So a
first occurrence that breaks another rule is quarantined and its copies still are duplicates:
pass quarantine rows with an event_id in `existing` too, and a range processed in one batch
or in several gives the same rows. Only the rows of `existing` whose key is among the batch's
(`event_keys`) matter, so a caller may pass those alone.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from pipelines.file_trash import rules
from pipelines.file_trash.rules import FILE_DELETED_EVENT, FILE_TRASHED_EVENT, TRASH_RETENTION
from pipelines.silver.parse import payload_problem

ISO_TIMESTAMP_FORMAT = "yyyy-MM-dd'T'HH:mm:ss[.SSSSSSSSS]XXX"
_INTEGER_KINDS = ("TINYINT", "SMALLINT", "INT", "BIGINT")
_EXPECTED = {
    StringType(): "a string",
    LongType(): "an integer",
    TimestampType(): "an ISO-8601 timestamp string",
}


def _json(name: str, data_type: DataType, column: str | None = None) -> StructField:
    return StructField(name, data_type, False, {"column": column} if column else {})


def _envelope(data: StructType) -> StructType:
    return StructType(
        [
            _json("eventId", StringType(), "event_id"),
            _json("eventType", StringType(), "event_type"),
            _json("timestamp", TimestampType(), "event_timestamp"),
            _json("data", data),
        ]
    )


# The events as published: JSON names, typed; metadata["column"] is the silver column.
FILE_DELETED_DATA_SCHEMA = StructType(
    [
        _json("fileId", StringType(), "file_id"),
        _json("fileName", StringType(), "file_name"),
        _json("filePath", StringType(), "file_path"),
        _json("fileSize", LongType(), "file_size"),
        _json("mimeType", StringType(), "mime_type"),
        _json("userId", StringType(), "user_id"),
        _json("deletedAt", TimestampType(), "deleted_at"),
    ]
)
FILE_TRASHED_DATA_SCHEMA = StructType(
    [
        _json("trashId", StringType(), "trash_id"),
        _json("fileId", StringType(), "file_id"),
        _json("fileName", StringType(), "file_name"),
        _json("userId", StringType(), "user_id"),
        _json("trashedAt", TimestampType(), "trashed_at"),
        _json("expiresAt", TimestampType(), "expires_at"),
        _json("originalEventId", StringType(), "original_event_id"),
    ]
)
FILE_DELETED_SCHEMA = _envelope(FILE_DELETED_DATA_SCHEMA)
FILE_TRASHED_SCHEMA = _envelope(FILE_TRASHED_DATA_SCHEMA)
EVENT_SCHEMAS = {FILE_DELETED_EVENT: FILE_DELETED_SCHEMA, FILE_TRASHED_EVENT: FILE_TRASHED_SCHEMA}


def _columns(*fields: tuple[str, DataType]) -> list[StructField]:
    return [StructField(name, data_type, nullable=True) for name, data_type in fields]


_S, _L, _T = StringType(), LongType(), TimestampType()
_ENVELOPE = [("event_id", _S), ("event_type", _S), ("event_timestamp", _T)]
_SOURCE = [("stream", _S), ("seq", _L), ("subject", _S), ("published", _T)]
_RUN = [("run_id", _S), ("processed_at", _T)]
SILVER_FILE_DELETED_SCHEMA = StructType(
    _columns(
        *_ENVELOPE,
        *[(f.metadata["column"], f.dataType) for f in FILE_DELETED_DATA_SCHEMA],
        ("expires_at", _T),
        *_SOURCE,
        *_RUN,
    )
)
SILVER_FILE_TRASHED_SCHEMA = StructType(
    _columns(*_ENVELOPE, *[(f.metadata["column"], f.dataType) for f in FILE_TRASHED_DATA_SCHEMA])
    + _columns(*_SOURCE, *_RUN)
)
QUARANTINE_SCHEMA = StructType(
    _columns(*_SOURCE, ("payload", BinaryType()), ("event_id", _S), ("event_type", _S))
    + _columns(("failed_rules", ArrayType(_S)), ("error", _S), ("source_table", _S))
    + _columns(("run_id", _S), ("quarantined_at", _T))
)
SILVER_SCHEMAS = {
    FILE_DELETED_EVENT: SILVER_FILE_DELETED_SCHEMA,
    FILE_TRASHED_EVENT: SILVER_FILE_TRASHED_SCHEMA,
}


@dataclass(frozen=True)
class SilverBatch:
    """What `route_bronze` makes of a batch of bronze rows.

    Attributes:
        file_deleted: valid FileDeletedEvent rows (`SILVER_FILE_DELETED_SCHEMA`).
        file_trashed: valid FilePlacedInTrashEvent rows (`SILVER_FILE_TRASHED_SCHEMA`).
        quarantine: every other row, with all the rules it broke (`QUARANTINE_SCHEMA`).
        candidates: per event type, every row whose eventType is that type, before the split:
            its silver columns plus `failed_rules` (what data quality validates and counts).
    """

    file_deleted: DataFrame
    file_trashed: DataFrame
    quarantine: DataFrame
    candidates: dict[str, DataFrame]


@dataclass(frozen=True)
class _Field:
    path: str  # JSON path below the top level, e.g. "data.fileSize"
    column: str  # the typed column; "_data" for the data object
    data_type: DataType


def _fields(schema: StructType, prefix: str = "") -> list[_Field]:
    fields = []
    for f in schema.fields:
        fields.append(_Field(prefix + f.name, f.metadata.get("column", "_" + f.name), f.dataType))
        if isinstance(f.dataType, StructType):
            fields.extend(_fields(f.dataType, f"{prefix}{f.name}."))
    return fields


_FIELDS_BY_TYPE = {event: _fields(schema) for event, schema in EVENT_SCHEMAS.items()}
_ALL_FIELDS = list({f.path: f for fields in _FIELDS_BY_TYPE.values() for f in fields}.values())
_ENVELOPE_FIELDS = [f for f in _ALL_FIELDS if "." not in f.path]


def _present(f: _Field) -> Column:
    kind = F.col(f"_k{f.column}")
    return kind.isNotNull() & (kind != "VOID")


def _typed(f: _Field) -> Column:
    """The field's typed value, null unless its JSON value has the schema's type."""
    value, kind = F.col(f"_v{f.column}"), F.col(f"_k{f.column}")
    if isinstance(f.data_type, StructType):
        return F.when(kind.startswith("OBJECT"), F.lit(True))
    if f.data_type == LongType():
        return F.when(kind.isin(*_INTEGER_KINDS), F.try_variant_get(value, "$", "bigint"))
    text = F.when(kind == "STRING", F.variant_get(value, "$", "string"))
    if f.data_type == TimestampType():
        return F.try_to_timestamp(text, F.lit(ISO_TIMESTAMP_FORMAT))
    return text


def _paths(fields: list[_Field], *, missing: bool) -> Column:
    """Per field: its path if missing (or, if not `missing`, if present but mistyped), else null."""
    if missing:
        return F.array(*(F.when(~_present(f), F.lit(f.path)) for f in fields))
    expected = [f"{f.path} (expected {_EXPECTED.get(f.data_type, 'an object')})" for f in fields]
    mistyped = (_present(f) & F.col(f.column).isNull() for f in fields)
    return F.array(
        *(F.when(bad, F.lit(text)) for bad, text in zip(mistyped, expected, strict=True))
    )


def _problems(*, missing: bool = False) -> Column:
    """The paths missing (or mistyped): the envelope's, and data's for a known event type."""
    no_data = F.array().cast(ArrayType(StringType()))
    data = F.when(~F.coalesce(F.col("_data"), F.lit(False)), no_data)
    for event, fields in _FIELDS_BY_TYPE.items():
        data_fields = [f for f in fields if f.path.startswith("data.")]
        data = data.when(F.col("event_type") == event, _paths(data_fields, missing=missing))
    envelope = _paths(_ENVELOPE_FIELDS, missing=missing)
    return F.array_compact(F.concat(envelope, data.otherwise(no_data)))


def parse_events(bronze: DataFrame) -> DataFrame:
    """Parses bronze payloads into a checked frame, without the duplicate check.

    Args:
        bronze: rows with at least stream, seq, subject, published and payload.

    Returns:
        The bronze columns, every typed column of both event schemas (`event_id`,
        `event_timestamp`, `file_size`, `expires_at` as published, ...; null where missing or
        mistyped) and the internal columns `rules` reads (`_payload_problem`,
        `_missing_fields`, `_mistyped_fields`). `event_type` is the payload's eventType,
        known or not, when it is a string.
    """
    text = F.col("payload").cast("string")
    wrapped = F.try_parse_json(F.concat(F.lit("["), text, F.lit("]")))
    frame = bronze.withColumns({"_wrapped": wrapped, "_text": text})
    doc, extra = (F.variant_get("_wrapped", f"$[{i}]", "variant") for i in (0, 1))
    frame = frame.withColumns({"_doc": doc, "_extra": extra})
    frame = frame.withColumns(
        {
            rules.PAYLOAD_PROBLEM: payload_problem(F.col("_text"), F.col("_doc"), F.col("_extra")),
            **{
                f"_v{f.column}": F.variant_get("_doc", f"$.{f.path}", "variant")
                for f in _ALL_FIELDS
            },
        }
    )
    frame = frame.withColumns(
        {f"_k{f.column}": F.schema_of_variant(f"_v{f.column}") for f in _ALL_FIELDS}
    )
    frame = frame.withColumns({f.column: _typed(f) for f in _ALL_FIELDS})
    frame = frame.withColumns(
        {rules.MISSING_FIELDS: _problems(missing=True), rules.MISTYPED_FIELDS: _problems()}
    )
    internal = ["_wrapped", "_text", "_doc", "_extra", "_data"]
    internal += [f"_{kv}{f.column}" for f in _ALL_FIELDS for kv in "vk"]
    return frame.drop(*internal)


def _duplicate_checked() -> Column:
    """Whether `event_id_unique` judges the row: a known event type with a string eventId."""
    return F.col("event_type").isin(*rules.EVENT_TYPES) & F.col("event_id").isNotNull()


def event_keys(bronze: DataFrame) -> DataFrame:
    """The distinct (event_type, event_id) of the rows `mark_duplicates` judges in `bronze`.

    Only rows of `existing` with one of these keys can change `mark_duplicates`' result for
    this batch: every other prior row sits alone in its (event_type, event_id) window, and
    prior rows themselves are dropped from the output. So `existing` semi-joined on these
    keys gives the same rows as `existing` whole, at a cost set by the batch.

    Args:
        bronze: bronze rows, as for `route_bronze`.

    Returns:
        Distinct event_type, event_id (both non-null strings).
    """
    checked = parse_events(bronze)
    judged = _duplicate_checked() & F.col(rules.PAYLOAD_PROBLEM).isNull()
    return checked.where(judged).select("event_type", "event_id").distinct()


def mark_duplicates(checked: DataFrame, existing: DataFrame | None) -> DataFrame:
    """Adds `_duplicate_of`: the (seq, stream) of the first occurrence of the row's eventId.

    Args:
        checked: the output of `parse_events`.
        existing: (event_type, event_id, stream, seq) of rows processed before, or None. Any
            set of them holding every row whose key is in `event_keys` of the batch gives
            the same result.

    Returns:
        `checked` with `_duplicate_of` (struct<seq, stream>), null unless the row is a later
        copy of a known-type row with the same event_type and event_id. A row whose own
        (stream, seq) is in `existing` is the same message, not a copy of it.
    """
    keys = ["event_type", "event_id", "stream", "seq"]
    eligible = _duplicate_checked()
    frame = checked.withColumn("_eligible", eligible & F.col(rules.PAYLOAD_PROBLEM).isNull())
    if existing is not None:
        types = {"event_type": "string", "event_id": "string", "stream": "string", "seq": "bigint"}
        prior = existing.select(*(F.col(k).cast(types[k]) for k in keys))
        prior = prior.where(eligible).withColumn("_eligible", F.lit(True))
        frame = frame.withColumn("_prior", F.lit(False)).unionByName(
            prior.withColumn("_prior", F.lit(True)), allowMissingColumns=True
        )
    # Ineligible rows get a key of their own, so they neither match nor pile up in one task.
    own = F.concat_ws(":", F.col("stream"), F.col("seq").cast("string"))
    window = Window.partitionBy(
        F.when(F.col("_eligible"), F.col("event_type")).otherwise(F.lit(None)),
        F.when(F.col("_eligible"), F.col("event_id")).otherwise(own),
    )
    first = F.min(F.struct(F.col("seq").alias("seq"), F.col("stream").alias("stream"))).over(window)
    is_self = (first["seq"] == F.col("seq")) & (first["stream"] == F.col("stream"))
    frame = frame.withColumn(rules.DUPLICATE_OF, F.when(F.col("_eligible") & ~is_self, first))
    if existing is not None:
        frame = frame.where(~F.col("_prior")).drop("_prior")
    return frame.drop("_eligible")


def route_bronze(
    bronze: DataFrame,
    *,
    existing: DataFrame | None,
    now: dt.datetime,
    run_id: str,
    source_table: str,
    retention: dt.timedelta = TRASH_RETENTION,
) -> SilverBatch:
    """Parses, checks, de-duplicates and routes bronze rows to silver or quarantine.

    Routing is by the payload's eventType, not by subject. Each bronze row ends up in exactly
    one of `file_deleted`, `file_trashed` and `quarantine`, so re-processing a range (with
    the same `existing`, `now` and `run_id`) gives the same rows.

    Args:
        bronze: bronze rows (`BRONZE_SCHEMA`; stream, seq, subject, published, payload used).
        existing: (event_type, event_id, stream, seq) of rows already processed (silver, and
            quarantine rows with an event_id), for `event_id_unique` across runs; None if none.
        now: the time of processing (timezone-aware): processed_at, quarantined_at, and the
            reference of `deleted_at_not_in_future`.
        run_id: the Dagster run (or caller) processing the batch.
        source_table: where the rows come from, recorded in quarantine (e.g. "bronze/file_events").
        retention: how long a deleted file stays in the trash: expires_at = deleted_at + retention.

    Returns:
        The valid rows per silver table, the quarantine, and the candidates per event type.

    Raises:
        ValueError: if `now` is naive, `run_id` empty or `retention` not positive.
    """
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError(f"now must be timezone-aware (e.g. UTC), got the naive {now!r}")
    if not run_id:
        raise ValueError(f"run_id must be a non-empty string, got {run_id!r}")
    if retention <= dt.timedelta(0):
        raise ValueError(f"retention must be a positive timedelta, got {retention!r}")
    checked = mark_duplicates(parse_events(bronze), existing)
    checked = checked.withColumns(
        {
            "failed_rules": rules.failed_rules(now=now),
            "run_id": F.lit(run_id),
            "processed_at": F.lit(now),
        }
    )
    is_deleted = F.col("event_type") == FILE_DELETED_EVENT
    checked = checked.withColumn(
        "expires_at",
        F.when(is_deleted, rules.plus(F.col("deleted_at"), retention)).otherwise(
            F.col("expires_at")
        ),
    )
    valid = F.size("failed_rules") == 0
    outputs, candidates = {}, {}
    for event, schema in SILVER_SCHEMAS.items():
        of_type = checked.where(F.col("event_type") == event)
        candidates[event] = of_type.select(*schema.fieldNames(), "failed_rules")
        outputs[event] = of_type.where(valid).select(*schema.fieldNames()).to(schema)
    quarantine = checked.where(~valid).withColumns(
        {
            "error": rules.failure_error(now=now),
            "source_table": F.lit(source_table),
            "quarantined_at": F.lit(now),
        }
    )
    return SilverBatch(
        file_deleted=outputs[FILE_DELETED_EVENT],
        file_trashed=outputs[FILE_TRASHED_EVENT],
        quarantine=quarantine.select(*QUARANTINE_SCHEMA.fieldNames()).to(QUARANTINE_SCHEMA),
        candidates=candidates,
    )
