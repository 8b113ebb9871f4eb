"""A checked frame routed to one silver table per event type and a quarantine, by the contract.

Every bronze row ends up in exactly one output: a row of a declared event type that breaks
no `quarantine`-severity rule lands in its event type's table (with its derived columns);
every other row lands in quarantine with every rule it broke (any severity), a readable
error, its payload and where it came from. `warn` and `block` rules never move a row: they
are counted for the asset checks (`SilverBatch.candidates`, `rule_failures`).

Derived columns are Spark SQL expressions over the table's columns (`deleted_at + INTERVAL
30 DAYS`), evaluated with `F.expr` after typing, only on rows that go to the table and
where every column the expression names is not null (else null), and cast to their declared
type: so an expression that would fail on bad data (an ANSI overflow) never sees it.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from pipelines.contract import UNKNOWN_FIELDS_COLUMN, Contract, EventType, Rule, UnknownFields
from pipelines.contract.fingerprint import contract_version, event_type_version
from pipelines.silver import layout
from pipelines.silver.duplicates import mark_duplicates
from pipelines.silver.layout import EVENT_ID, EVENT_TYPE, SOURCE_COLUMNS
from pipelines.silver.rule_columns import failed_rules, failure_error, silver_rules, violations
from pipelines.silver.schema import QUARANTINE_SCHEMA, silver_schema, spark_type

QUARANTINED = "quarantined"  # candidates' column: whether the row goes to quarantine
_LITERAL = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_WORD = re.compile(r"`([^`]+)`|\b([A-Za-z_][A-Za-z0-9_]*)\b")


@dataclass(frozen=True)
class SilverBatch:
    """What `route` makes of a checked frame.

    Attributes:
        tables: event type name -> its silver rows (`silver_schema` of the event type).
        quarantine: every other row, with all the rules it broke (`QUARANTINE_SCHEMA`).
        candidates: event type name -> every row of that type before the split: its silver
            columns, `failed_rules` (every broken rule, any severity) and `quarantined`.
        judged: every row before the split, each of the others a projection of it: the
            checked frame with `failed_rules` and `quarantined` (`judge`; `routed_counts`
            counts it).
    """

    tables: dict[str, DataFrame]
    quarantine: DataFrame
    candidates: dict[str, DataFrame]
    judged: DataFrame


def inputs(expression: str, columns: list[str]) -> list[str]:
    """The `columns` a Spark SQL expression names (outside string literals), in its order."""
    known = {c.lower(): c for c in columns}
    found: dict[str, None] = {}
    for match in _WORD.finditer(_LITERAL.sub(" ", expression)):
        name = (match.group(1) or match.group(2)).lower()
        if name in known:
            found[known[name]] = None
    return list(found)


def _with_derived(rows: DataFrame, event: EventType, columns: Sequence[str]) -> DataFrame:
    """`rows` (whose columns are `columns`) with `event`'s derived columns, in order."""
    columns = list(columns)
    for d in event.derived:
        names = inputs(d.expression, columns)
        value = F.expr(d.expression)
        if d.type is not None:
            value = value.cast(spark_type(d.type))
        ready = ~F.col(QUARANTINED)
        for name in names:
            ready = ready & F.col(name).isNotNull()
        rows = rows.withColumn(d.name, F.when(ready, value))
        columns.append(d.name)
    return rows


_JUDGED = ("run_id", "processed_at", "failed_rules", QUARANTINED)  # columns `judge` adds


def candidate_columns(event: EventType) -> list[str]:
    """The columns of `event`'s candidates (`SilverBatch.candidates`) before its derived
    ones, known without asking Spark (over Spark Connect a frame's `columns` is a request)."""
    unknown = [UNKNOWN_FIELDS_COLUMN] if event.unknown_fields is UnknownFields.KEEP else []
    return [
        *(f.column for f in event.fields),
        *unknown,
        *SOURCE_COLUMNS,
        *_JUDGED,
        "contract_version",
    ]


def _candidates(frame: DataFrame, contract: Contract, event: EventType) -> DataFrame:
    struct = F.col(layout.event_struct(contract, event.name))
    columns: list[Column] = [struct.getField(f.column).alias(f.column) for f in event.fields]
    if event.unknown_fields is UnknownFields.KEEP:
        unknown = F.col(layout.unknown_map(contract, event.name)).alias(UNKNOWN_FIELDS_COLUMN)
        columns.append(unknown)
    rows = (
        frame.where(F.col(EVENT_TYPE) == event.name)
        .select(*columns, *SOURCE_COLUMNS, *_JUDGED)
        .withColumn("contract_version", F.lit(event_type_version(contract, event)))
    )
    return _with_derived(rows, event, candidate_columns(event))


def _check_arguments(now: dt.datetime, run_id: str) -> None:
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError(f"now must be timezone-aware (e.g. UTC), got the naive {now!r}")
    if not isinstance(run_id, str) or not run_id:
        raise ValueError(f"run_id must be a non-empty string, got {run_id!r}")


def route(
    checked: DataFrame,
    contract: Contract,
    existing: DataFrame | None = None,
    *,
    run_id: str,
    now: dt.datetime,
    source_table: str | None = None,
) -> SilverBatch:
    """De-duplicates, checks and routes a checked frame to silver tables and quarantine:
    `split(judge(...))`.

    Routing is by event type (the discriminator, or the subject without one). Re-processing
    a range with the same `existing`, `run_id` and `now` gives the same rows.

    Args:
        checked: the output of `pipelines.silver.parse.parse_events`.
        contract: the stream's event contract.
        existing: (event_type, event_id, stream, seq) of rows processed before (silver, and
            quarantine rows with an event id), for `event_id_unique` across runs; None if
            none. Only those whose key is in the batch matter (`colliding_keys`).
        run_id: the run (or caller) processing the batch, recorded on every row.
        now: the time of processing (timezone-aware): processed_at, quarantined_at.
        source_table: the bronze table, recorded on quarantined rows.

    Returns:
        The silver rows per event type, the quarantine and the candidates per event type.

    Raises:
        ValueError: `now` is naive or `run_id` empty.
    """
    judged = judge(checked, contract, existing, run_id=run_id, now=now)
    return split(judged, contract, now=now, source_table=source_table)


def any_of(columns: Sequence[Column]) -> Column:
    """`columns[0] | columns[1] | ...` (false for none) as a balanced tree, log2(n) deep.

    Spark turns a Column into an expression, and analyses it, recursively: one `|` per rule
    chained left to right is as deep as the contract has rules, and ~320 of them overflowed
    the driver's default 1 MiB thread stack (StackOverflowError in `judge`'s `withColumns`).
    """
    if not columns:
        return F.lit(False)
    if len(columns) == 1:
        return columns[0]
    half = len(columns) // 2
    return any_of(columns[:half]) | any_of(columns[half:])


def judge(
    checked: DataFrame,
    contract: Contract,
    existing: DataFrame | None = None,
    *,
    run_id: str,
    now: dt.datetime,
) -> DataFrame:
    """Every row of a checked frame, de-duplicated and judged: `SilverBatch.judged`.

    Arguments as `route`'s. A caller that computes the result once (`localCheckpoint`) and
    hands it to `split` has every output of the batch read it.

    Returns:
        The checked frame with `failed_rules` (every broken rule, any severity),
        `quarantined`, `run_id` and `processed_at`.

    Raises:
        ValueError: `now` is naive or `run_id` empty.
    """
    _check_arguments(now, run_id)
    frame = mark_duplicates(checked, contract, existing)
    broken = violations(contract)
    rules = silver_rules(contract)
    stopping = [broken[r.name] for r in rules if r.severity.quarantines]
    return frame.withColumns(
        {
            "failed_rules": failed_rules(contract),
            QUARANTINED: any_of(stopping),
            "run_id": F.lit(run_id),
            "processed_at": F.lit(now),
        }
    )


def split(
    judged: DataFrame,
    contract: Contract,
    *,
    now: dt.datetime,
    source_table: str | None = None,
) -> SilverBatch:
    """The silver rows per event type, the quarantine and the candidates of a judged frame
    (`judge`), each a projection of it.

    Args:
        judged: what `judge` returned, as is or computed once.
        contract: the stream's event contract.
        now: the time of processing (`judge`'s): quarantined_at.
        source_table: the bronze table, recorded on quarantined rows.
    """
    tables, candidates = {}, {}
    spark = judged.sparkSession
    for event in contract.event_types:
        schema = silver_schema(event, spark)
        rows = _candidates(judged, contract, event)
        candidates[event.name] = rows
        tables[event.name] = rows.where(~F.col(QUARANTINED)).select(*schema.fieldNames()).to(schema)
    quarantine = judged.where(F.col(QUARANTINED)).select(
        *SOURCE_COLUMNS,
        "payload",
        F.col(EVENT_ID).alias("event_id"),
        F.col(EVENT_TYPE).alias("event_type"),
        "failed_rules",
        failure_error(contract).alias("error"),
        F.lit(source_table).cast("string").alias("source_table"),
        "run_id",
        F.lit(now).alias("quarantined_at"),
        F.lit(contract_version(contract)).alias("contract_version"),
    )
    return SilverBatch(tables, quarantine.to(QUARANTINE_SCHEMA), candidates, judged)


def rule_failures(candidates: DataFrame, contract: Contract) -> dict[str, int]:
    """How many rows of `candidates` break each rule (one aggregate; every rule listed).

    Args:
        candidates: a `SilverBatch.candidates` frame (or any frame with `failed_rules`).
        contract: the stream's event contract.

    Returns:
        Rule name -> failing rows, in `silver_rules` order.
    """
    return judged_rows(candidates, contract, split=False).failing


class Judged(NamedTuple):
    """What `judged_rows` counted in a frame."""

    rows: int
    failing: dict[str, int]  # rule name -> failing rows, in `silver_rules` order
    kept: int | None  # rows not quarantined: a candidates frame's table rows (None: not split)
    shared: int  # rows breaking any rule with no check of its own (a `field_rules` check's)


def _failing_sums(rules: Sequence[Rule]) -> list[Column]:
    """Per rule, in order, the rows whose `failed_rules` holds it (aliased `_0`, `_1`, ...),
    then the rows whose `failed_rules` holds any rule with no check of its own (`_shared`: a
    row's `failed_rules` holds only rules of its own event type, so one sum serves every
    type)."""
    shared = [F.lit(r.name) for r in rules if not r.own_check]
    broke_shared = F.arrays_overlap("failed_rules", F.array(*shared)) if shared else F.lit(False)
    return [
        *(
            F.sum(F.array_contains("failed_rules", r.name).cast("long")).alias(f"_{n}")
            for n, r in enumerate(rules)
        ),
        F.sum(broke_shared.cast("long")).alias("_shared"),
    ]


def judged_rows(frame: DataFrame, contract: Contract, *, split: bool = True) -> Judged:
    """The rows of `frame`, how many break each rule, how many break any rule with no check
    of its own (`Judged.shared`) and, with `split`, how many are not quarantined, in one
    aggregate.

    Args:
        frame: a `SilverBatch.candidates` frame; with `split=False`, any frame with
            `failed_rules` (the quarantine).
        contract: the stream's event contract.
        split: count the rows whose `quarantined` column is false (`Judged.kept`).
    """
    rules = silver_rules(contract)
    sums = _failing_sums(rules)
    if split:
        sums.append(F.sum((~F.col(QUARANTINED)).cast("long")).alias("_kept"))
    row = frame.agg(F.count(F.lit(1)).alias("_rows"), *sums).first()
    failing = {r.name: int(row[f"_{n}"] or 0) for n, r in enumerate(rules)}
    kept = int(row["_kept"] or 0) if split else None
    return Judged(int(row["_rows"]), failing, kept, int(row["_shared"] or 0))


def routed_counts(batch: SilverBatch, contract: Contract) -> tuple[dict[str, Judged], Judged]:
    """What `judged_rows` counts in each event type's candidates (split) and in the
    quarantine (not split), and the rows breaking any rule with no check of its own
    (`Judged.shared`, for `field_rules`), from one aggregate over `batch.judged`.

    Returns:
        Event type name -> its candidates' counts, and the quarantine's counts.
    """
    rules = silver_rules(contract)
    names = [e.name for e in contract.event_types]
    groups = (
        batch.judged.groupBy(
            F.when(F.col(EVENT_TYPE).isin(*names), F.col(EVENT_TYPE)).alias("_type"),
            F.col(QUARANTINED).alias("_quarantined"),
        )
        .agg(F.count(F.lit(1)).alias("_rows"), *_failing_sums(rules))
        .collect()
    )

    def counted(chosen: list, kept: int | None) -> Judged:
        failing = {r.name: sum(int(g[f"_{n}"] or 0) for g in chosen) for n, r in enumerate(rules)}
        shared = sum(int(g["_shared"] or 0) for g in chosen)
        return Judged(sum(g["_rows"] for g in chosen), failing, kept, shared)

    typed = {}
    for name in names:
        own = [g for g in groups if g["_type"] == name]
        typed[name] = counted(own, sum(g["_rows"] for g in own if g["_quarantined"] is False))
    return typed, counted([g for g in groups if g["_quarantined"] is True], None)
