"""The silver stage (`run_contract_silver`) over the file trash contract, on real Spark, Delta
tables and a KV bucket.

A batch processed after an earlier one, and processed again (a crash after its merges, before
the watermark moved), gives the tables of the whole range routed at once: it is judged
against the rows of earlier runs whose (event type, eventId) it shares, read back from
silver and quarantine (`colliding_keys`), and the merges, bounded to the batch's seqs,
insert nothing twice. (The stage's own first run, its crash and its idle run are
tests/pipelines/silver/test_stage.py's, on ORDERS.)
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

import pytest

from pipelines.lakehouse.watermarks import Watermark, WatermarkStore
from pipelines.silver import colliding_keys
from pipelines.silver.expectations import recorded_outcomes
from pipelines.silver.stage import QUARANTINE, recorded_failures, run_contract_silver
from resources.jetstream import KeyValueSpec
from tests.pipelines.file_trash.test_silver import (
    CONTRACT,
    DELETED,
    MISSING,
    NOW,
    SOURCE,
    STREAM,
    TRASHED,
    bronze,
    changed,
    deleted_event,
    route,
    trashed_event,
)

STAGE = "silver.file_events"
# Duplicates in a batch and of the earlier batch (of valid rows and of quarantined first
# occurrences with an eventId, in both event types), one eventId in both types.
BATCHES = [
    [
        deleted_event("e-1"),
        deleted_event("e-2"),
        deleted_event("e-1"),  # a copy in the batch
        trashed_event("t-1"),
        deleted_event("e-3", userId="bob"),  # quarantined, eventId kept
        b"{",
        changed(deleted_event("e-4"), "eventType", "FileRenamedEvent"),
        deleted_event("same"),
    ],
    [
        deleted_event("e-2"),  # a copy of batch 1's valid row
        trashed_event("t-1"),  # the same for the other type
        deleted_event("e-3"),  # a copy of a quarantined first occurrence
        deleted_event("e-5"),
        deleted_event("e-5"),
        trashed_event("same"),  # same eventId, other type: not a copy
        changed(trashed_event("t-2"), "data.trashId", MISSING),
        changed(deleted_event("e-4"), "eventType", "FileRenamedEvent"),
        trashed_event("t-2"),  # its first occurrence was quarantined for a missing field
        deleted_event("e-1"),  # a copy of batch 1's first row
        deleted_event("e-6", fileSize=-1),
        deleted_event("e-6"),
        b"[]",
        trashed_event("t-3"),
    ],
]
RUN_COLUMNS = ("run_id", "processed_at", "quarantined_at")


@pytest.fixture
def store(js, unique_name) -> WatermarkStore:
    return WatermarkStore(js.create_key_value(KeyValueSpec(unique_name)))


def table_paths(root) -> dict:
    return {
        "bronze_path": str(root / "bronze/file_events"),
        "table_paths": {
            DELETED: str(root / "silver/file_deleted"),
            TRASHED: str(root / "silver/file_trashed"),
        },
        "quarantine_path": str(root / "quarantine/file_events"),
    }


def run(spark, store, paths, number: int):
    return run_contract_silver(
        spark, store, CONTRACT, stream=STREAM, stage=STAGE, run_id=f"run-{number}",
        now=NOW + dt.timedelta(minutes=number), source_table=SOURCE, **paths,
    )  # fmt: skip


def contents(frame) -> set[tuple]:
    """The rows, without the columns that name the run that wrote them."""
    kept = [c for c in frame.columns if c not in RUN_COLUMNS]
    return {tuple(map(hashable, row)) for row in frame.select(*kept).collect()}


def hashable(value):
    if isinstance(value, list):
        return tuple(value)
    return bytes(value) if isinstance(value, bytearray) else value


def test_a_batch_judged_against_earlier_runs_gives_the_tables_of_one_batch_and_once(
    spark, store, table_root
):
    paths = table_paths(table_root)
    first, second = BATCHES
    seqs = range(len(first) + 1, len(first) + len(second) + 1)
    # Silver already holds the first batch (as routed), and its watermark is past it.
    earlier = route(bronze(spark, first), run_id="run-1")
    every = {**paths["table_paths"], QUARANTINE: paths["quarantine_path"]}
    for name, frame in {**earlier.tables, QUARANTINE: earlier.quarantine}.items():
        frame.write.format("delta").save(every[name])
    rows = bronze(spark, first).unionByName(bronze(spark, second, seqs=seqs))
    rows.write.format("delta").save(paths["bronze_path"])
    store.save(store.load(STAGE).advanced(len(first), run_id="run-1", now=NOW))
    before = store.load(STAGE)

    result = run(spark, store, paths, 2)
    # Again: its merges landed, the watermark did not move (a crash in between).
    store.save(replace(before, revision=store.load(STAGE).revision))
    again = run(spark, store, paths, 2)

    whole = route(bronze(spark, [p for payloads in BATCHES for p in payloads]))
    wanted = {**whole.tables, QUARANTINE: whole.quarantine}
    assert (result.bronze_start, result.bronze_end, result.rows_in) == (9, 22, 14)
    assert {name: m.inserted for name, m in result.tables.items()} == {DELETED: 1, TRASHED: 2}
    assert result.quarantine.inserted == 11
    for name, path in every.items():
        assert contents(spark.read.format("delta").load(path)) == contents(wanted[name]), name
    quarantine = spark.read.format("delta").load(paths["quarantine_path"])
    quarantined = {r.seq: r.failed_rules for r in quarantine.collect()}
    duplicates = sorted(seq for seq, rules in quarantined.items() if "event_id_unique" in rules)
    assert duplicates == [3, 9, 10, 11, 13, 17, 18, 20]
    assert (again.bronze_start, again.bronze_end, again.rows_in) == (9, 22, 14)
    assert {name: m.inserted for name, m in again.tables.items()} == {DELETED: 0, TRASHED: 0}
    assert again.quarantine.inserted == 0
    assert again.failures == result.failures  # its own rows are not copies of themselves
    assert again.failures == {
        DELETED: {
            "required_fields_present": 0,
            "field_types_valid": 0,
            "event_id_unique": 5,
            "file_size_in_range": 1,
            "mime_type_well_formed": 0,
            "deleted_at_not_in_future": 0,
            "user_id_format": 0,
            "field_rules": 0,  # the rows breaking deleted_at_not_in_future, the one it holds
        },
        TRASHED: {
            "required_fields_present": 1,
            "field_types_valid": 0,
            "event_id_unique": 2,
        },
        QUARANTINE: {"parseable_json": 1, "known_event_type": 1},
    }
    assert recorded_failures(store.load(STAGE)) == again.failures


def test_colliding_keys_are_only_the_prior_rows_sharing_a_key_with_the_batch(spark):
    schema = "event_type string, event_id string, stream string, seq long"
    deleted = spark.createDataFrame(
        [(DELETED, "e-1", STREAM, 1), (DELETED, "same", STREAM, 2)], schema
    )
    trashed = spark.createDataFrame([(TRASHED, "same", STREAM, 3)], schema)
    quarantine = spark.createDataFrame(
        [
            (DELETED, "e-3", STREAM, 4),  # a first occurrence that broke a rule
            (DELETED, "e-3", STREAM, 5),  # its copy
            (None, None, STREAM, 6),  # not JSON
        ],
        schema,
    )
    keys = spark.createDataFrame(
        [(DELETED, "e-3"), (TRASHED, "same"), ("X", "e-1")], "event_type string, event_id string"
    )

    prior = colliding_keys(keys, CONTRACT, {DELETED: deleted, TRASHED: trashed}, quarantine)

    assert sorted(tuple(r) for r in prior.collect()) == [
        (DELETED, "e-3", STREAM, 4),
        (DELETED, "e-3", STREAM, 5),
        (TRASHED, "same", STREAM, 3),
    ]


@pytest.mark.parametrize(
    "details",
    [{}, {"bronze_version": 3}, {"failures": None}, {"failures": "garbage"}],
    ids=["never-ran", "saved-before-counts", "null", "not-an-object"],
)
def test_a_watermark_without_failure_counts_records_none(details):
    watermark = Watermark(STAGE, 40, details=details)

    assert recorded_failures(watermark) is None
    assert recorded_outcomes(watermark.details) == {}
