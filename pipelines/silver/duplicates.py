"""`event_id_unique`: the first occurrence of an event id per event type is kept, across runs.

Among rows of a declared event type with an event id, in the batch and in `existing` (the
keys of rows processed before, silver and quarantine), the lowest (seq, stream) per (event
type, event id) is the first occurrence; every other row with that key is a later copy,
whatever else it breaks. A row whose own (stream, seq) is in `existing` is the same message
processed again, not a copy of itself: so a range processed in one batch or in several, or
twice, gives the same rows.

Only prior rows whose key is in the batch can change the verdict, so `colliding_keys` reads
the silver and quarantine tables' keys semi-joined with the batch's keys (`event_keys`).
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from pipelines.contract import Contract
from pipelines.silver.layout import DUPLICATE_OF, EVENT_ID, EVENT_TYPE, PAYLOAD_PROBLEM, id_field

KEY_COLUMNS = ("event_type", "event_id", "stream", "seq")
_KEY_TYPES = {"event_type": "string", "event_id": "string", "stream": "string", "seq": "bigint"}


def _judged(contract: Contract) -> Column:
    """Whether `event_id_unique` judges the row: a declared event type with an event id."""
    names = [e.name for e in contract.event_types]
    return (
        F.col(EVENT_TYPE).isin(*names)
        & F.col(EVENT_ID).isNotNull()
        & F.col(PAYLOAD_PROBLEM).isNull()
    )


def event_keys(checked: DataFrame, contract: Contract) -> DataFrame:
    """The distinct (event_type, event_id) the batch's duplicates are judged on.

    Args:
        checked: the output of `pipelines.silver.parse.parse_events`.
        contract: the stream's event contract.

    Returns:
        Distinct event_type, event_id (strings).
    """
    keys = checked.where(_judged(contract))
    return keys.select(
        F.col(EVENT_TYPE).alias("event_type"), F.col(EVENT_ID).alias("event_id")
    ).distinct()


def colliding_keys(
    keys: DataFrame,
    contract: Contract,
    tables: Mapping[str, DataFrame],
    quarantine: DataFrame | None = None,
) -> DataFrame:
    """(event_type, event_id, stream, seq) of prior rows whose key is one of `keys`.

    Args:
        keys: the batch's keys (`event_keys`).
        contract: the stream's event contract.
        tables: event type name -> its silver table as read (missing types: no table yet).
        quarantine: the quarantine table (event_type, event_id, stream, seq), or None.

    Returns:
        The prior rows' keys that share a key with the batch: a semi-join, so only those rows
        come out (Spark reads the key columns of the tables, nothing else).
    """
    frames = []
    for name, table in tables.items():
        field = id_field(contract, contract.event_type(name))
        if field is None:
            continue
        frames.append(
            table.select(
                F.lit(name).alias("event_type"),
                F.col(field.column).cast("string").alias("event_id"),
                F.col("stream").cast("string"),
                F.col("seq").cast("bigint"),
            )
        )
    if quarantine is not None:
        prior = quarantine.where(F.col("event_id").isNotNull())
        frames.append(prior.select(*(F.col(k).cast(t) for k, t in _KEY_TYPES.items())))
    if not frames:
        schema = ", ".join(f"{k} {t}" for k, t in _KEY_TYPES.items())
        return keys.sparkSession.createDataFrame([], schema)
    prior = frames[0]
    for frame in frames[1:]:
        prior = prior.unionByName(frame)
    return prior.join(keys, on=["event_type", "event_id"], how="left_semi")


def mark_duplicates(
    checked: DataFrame, contract: Contract, existing: DataFrame | None
) -> DataFrame:
    """Adds `_duplicate_of`: the (seq, stream) of the first occurrence of the row's event id.

    Args:
        checked: the output of `pipelines.silver.parse.parse_events`.
        contract: the stream's event contract.
        existing: (event_type, event_id, stream, seq) of rows processed before, or None; it is
            semi-joined with the batch's keys, so passing more than `colliding_keys` gives
            the same result.

    Returns:
        `checked` with `_duplicate_of` (struct<seq, stream>), null unless the row is a later
        copy of a row with the same event type and event id.
    """
    frame = checked.withColumn("_eligible", _judged(contract))
    if existing is not None:
        prior = existing.select(*(F.col(k).cast(t) for k, t in _KEY_TYPES.items()))
        prior = prior.join(event_keys(checked, contract), ["event_type", "event_id"], "left_semi")
        prior = prior.select(
            F.col("event_type").alias(EVENT_TYPE),
            F.col("event_id").alias(EVENT_ID),
            "stream",
            "seq",
            F.lit(True).alias("_eligible"),
            F.lit(True).alias("_prior"),
        )
        frame = frame.withColumn("_prior", F.lit(False)).unionByName(
            prior, allowMissingColumns=True
        )
    # Rows not judged get a key of their own, so they neither match nor pile up in one task.
    own = F.concat_ws(":", F.col("stream"), F.col("seq").cast("string"))
    window = Window.partitionBy(
        F.when(F.col("_eligible"), F.col(EVENT_TYPE)).otherwise(F.lit(None)),
        F.when(F.col("_eligible"), F.col(EVENT_ID)).otherwise(own),
    )
    first = F.min(F.struct(F.col("seq").alias("seq"), F.col("stream").alias("stream"))).over(window)
    is_self = (first["seq"] == F.col("seq")) & (first["stream"] == F.col("stream"))
    frame = frame.withColumn(DUPLICATE_OF, F.when(F.col("_eligible") & ~is_self, first))
    if existing is not None:
        frame = frame.where(~F.col("_prior")).drop("_prior")
    return frame.drop("_eligible")
