"""The silver stage reads back only the silver keys that can collide with the batch, and bounds
its merges to the batch's seqs; its tables are the same, row for row, as with the full read of
every key and unbounded merges (real Spark, Delta tables and KV bucket)."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

from chispa import assert_df_equality

from pipelines.delta_tables import merge_new_rows
from pipelines.file_trash import silver_stage
from pipelines.file_trash.silver_stage import STAGE, SilverPaths, run_silver
from pipelines.watermarks import WatermarkStore
from resources.jetstream import KeyValueSpec
from resources.quality import ValidationReport
from tests.pipelines.file_trash.test_silver import (
    MISSING,
    NOW,
    STREAM,
    bronze,
    changed,
    deleted_event,
    trashed_event,
)

TABLES = ("file_deleted", "file_trashed", "quarantine")

# Three batches of one stream: duplicates in the batch, of earlier batches (valid rows and
# quarantined first occurrences with an eventId, both event types), one eventId in both types.
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
    ],
    [
        trashed_event("t-2"),  # its first occurrence was quarantined for a missing field
        deleted_event("e-1"),
        deleted_event("e-6", fileSize=-1),
        deleted_event("e-6"),
        b"[]",
        trashed_event("t-3"),
    ],
]


def passing(frame, suite) -> ValidationReport:
    """A validation that checks nothing: the tables, not the suites, are compared here."""
    return ValidationReport(suite.name, True, (), NOW, b"{}")


def full_read_and_unbounded_merges(monkeypatch) -> None:
    """The stage as it was: every silver key read back, merges over the whole tables."""
    read_all = silver_stage.existing_keys
    monkeypatch.setattr(
        silver_stage,
        "existing_keys",
        lambda spark, paths, among=None: read_all(spark, paths),
    )
    monkeypatch.setattr(
        silver_stage,
        "merge_new_rows",
        lambda spark, rows, path, schema, seqs: merge_new_rows(spark, rows, path, schema),
    )


def run_batches(spark, js, root, bucket: str) -> SilverPaths:
    """Lands each batch in bronze and runs the stage after it; the last batch is processed
    a second time (a crash after the merges, before the watermark moved)."""
    paths = SilverPaths(
        bronze=str(root / "bronze"),
        **{name: str(root / name) for name in TABLES},
    )
    watermarks = WatermarkStore(js.create_key_value(KeyValueSpec(bucket)))
    seq = 1
    for number, payloads in enumerate(BATCHES):
        seqs = range(seq, seq + len(payloads))
        seq += len(payloads)
        bronze(spark, payloads, seqs=seqs).write.format("delta").mode("append").save(paths.bronze)
        before = watermarks.load(STAGE)
        run_silver(
            spark,
            paths,
            watermarks=watermarks,
            validate=passing,
            stream=STREAM,
            now=NOW + dt.timedelta(minutes=number),
            run_id=f"run-{number}",
        )
        if number == len(BATCHES) - 1:
            watermarks.save(replace(before, revision=watermarks.load(STAGE).revision))
            run_silver(
                spark,
                paths,
                watermarks=watermarks,
                validate=passing,
                stream=STREAM,
                now=NOW + dt.timedelta(minutes=number),
                run_id=f"run-{number}",
            )
    return paths


def test_batch_keyed_dedup_gives_the_same_tables_as_reading_every_key(
    spark, js, tmp_path, monkeypatch, unique_name
):
    new = run_batches(spark, js, tmp_path / "new", f"{unique_name}_new")
    with monkeypatch.context() as patch:
        full_read_and_unbounded_merges(patch)
        old = run_batches(spark, js, tmp_path / "old", f"{unique_name}_old")

    for name in TABLES:
        got = spark.read.format("delta").load(getattr(new, name))
        expected = spark.read.format("delta").load(getattr(old, name))
        assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)
    quarantined = {
        (r.seq, tuple(r.failed_rules))
        for r in spark.read.format("delta").load(new.quarantine).collect()
    }
    duplicates = sorted(seq for seq, rules in quarantined if "event_id_unique" in rules)
    assert duplicates == [3, 9, 10, 11, 13, 17, 18, 20]


def test_existing_keys_among_the_batch_are_only_those_it_can_collide_with(spark, tmp_path):
    paths = SilverPaths(bronze="", **{name: str(tmp_path / name) for name in TABLES})
    schema = "event_type string, event_id string, stream string, seq long"
    rows = {
        "file_deleted": [
            ("FileDeletedEvent", "e-1", STREAM, 1),
            ("FileDeletedEvent", "same", STREAM, 2),
        ],
        "file_trashed": [("FilePlacedInTrashEvent", "same", STREAM, 3)],
        "quarantine": [
            ("FileDeletedEvent", "e-3", STREAM, 4),  # a first occurrence that broke a rule
            ("FileDeletedEvent", "e-3", STREAM, 5),  # its copy
            (None, None, STREAM, 6),  # not JSON
        ],
    }
    for name, values in rows.items():
        spark.createDataFrame(values, schema).write.format("delta").save(getattr(paths, name))
    among = spark.createDataFrame(
        [("FileDeletedEvent", "e-3"), ("FilePlacedInTrashEvent", "same"), ("X", "e-1")],
        "event_type string, event_id string",
    )

    keys = silver_stage.existing_keys(spark, paths, among=among)

    assert sorted((r.event_id, r.seq) for r in keys.collect()) == [
        ("e-3", 4),
        ("e-3", 5),
        ("same", 3),
    ]
