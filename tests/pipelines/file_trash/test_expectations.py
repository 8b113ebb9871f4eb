"""The file trash silver suites on small candidate frames built by hand."""

from __future__ import annotations

import datetime as dt

import pytest
from pyspark.sql.types import (
    ArrayType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from pipelines.file_trash import rules
from pipelines.file_trash.expectations import file_deleted_suite, file_trashed_suite
from resources.quality import validate_dataframe

NOW = dt.datetime(2026, 11, 21, 10, 0, tzinfo=dt.UTC)
_S, _L, _T = StringType(), LongType(), TimestampType()
# The candidate frame of silver/file_deleted: the contract's columns plus failed_rules.
FILE_DELETED_CANDIDATE = StructType(
    [
        StructField(name, data_type)
        for name, data_type in [
            ("event_id", _S),
            ("event_type", _S),
            ("event_timestamp", _T),
            ("file_id", _S),
            ("file_name", _S),
            ("file_path", _S),
            ("file_size", _L),
            ("mime_type", _S),
            ("user_id", _S),
            ("deleted_at", _T),
            ("expires_at", _T),
            ("stream", _S),
            ("seq", _L),
            ("subject", _S),
            ("published", _T),
            ("run_id", _S),
            ("processed_at", _T),
            ("failed_rules", ArrayType(_S)),
        ]
    ]
)
FILE_TRASHED_CANDIDATE = StructType(
    [
        StructField(name, data_type)
        for name, data_type in [
            ("event_id", _S),
            ("event_type", _S),
            ("event_timestamp", _T),
            ("trash_id", _S),
            ("file_id", _S),
            ("file_name", _S),
            ("user_id", _S),
            ("trashed_at", _T),
            ("expires_at", _T),
            ("original_event_id", _S),
            ("stream", _S),
            ("seq", _L),
            ("failed_rules", ArrayType(_S)),
        ]
    ]
)


def _deleted(seq: int, **overrides) -> tuple:
    deleted_at = NOW - dt.timedelta(minutes=seq)
    row = {
        "event_id": f"evt-{seq:04d}",
        "event_type": "FileDeletedEvent",
        "event_timestamp": deleted_at,
        "file_id": f"file-{seq}",
        "file_name": "report.pdf",
        "file_path": f"/users/user-{seq % 7:03d}/documents/report.pdf",
        "file_size": 1000 + seq,
        "mime_type": "application/pdf",
        "user_id": f"user-{seq % 7:03d}",
        "deleted_at": deleted_at,
        "expires_at": deleted_at + rules.TRASH_RETENTION,
        "stream": "FILE_EVENTS",
        "seq": seq,
        "subject": "files.deleted",
        "published": deleted_at,
        "run_id": "run-1",
        "processed_at": NOW,
        "failed_rules": [],
    }
    row.update(overrides)
    return tuple(row[field.name] for field in FILE_DELETED_CANDIDATE)


def _trashed(seq: int, **overrides) -> tuple:
    trashed_at = NOW - dt.timedelta(minutes=seq)
    row = {
        "event_id": f"trashed-{seq}",
        "event_type": "FilePlacedInTrashEvent",
        "event_timestamp": trashed_at,
        "trash_id": f"trash-{seq}",
        "file_id": f"file-{seq}",
        "file_name": "notes.txt",
        "user_id": "user-001",
        "trashed_at": trashed_at,
        "expires_at": trashed_at + rules.TRASH_RETENTION,
        "original_event_id": f"evt-{seq:04d}",
        "stream": "FILE_EVENTS",
        "seq": seq,
        "failed_rules": [],
    }
    row.update(overrides)
    return tuple(row[field.name] for field in FILE_TRASHED_CANDIDATE)


def _deleted_frame(spark, rows: list[tuple]):
    return spark.createDataFrame(rows, FILE_DELETED_CANDIDATE)


def test_clean_candidates_pass_every_check(spark):
    frame = _deleted_frame(spark, [_deleted(seq) for seq in range(1, 101)])

    report = validate_dataframe(frame, file_deleted_suite(now=NOW), evaluated_at=NOW)

    assert report.success, report.to_json()
    assert report.row_count == 100
    assert all(o.unexpected_count == 0 for o in report.outcomes)


def test_one_negative_size_in_a_hundred_passes_but_is_reported_with_its_value(spark):
    rows = [_deleted(seq, file_size=-5 if seq == 42 else 1000 + seq) for seq in range(1, 101)]

    report = validate_dataframe(
        _deleted_frame(spark, rows), file_deleted_suite(now=NOW), evaluated_at=NOW
    )

    size = report.outcome("file_size_in_range")
    assert (size.success, size.unexpected_count, size.sample_values) == (True, 1, ("-5",))
    assert size.rule == "file_size_in_range"
    assert report.critical_failures == ()


def test_half_the_sizes_negative_fails_file_size_in_range_and_blocks(spark):
    rows = [_deleted(seq, file_size=-seq if seq % 2 else seq) for seq in range(1, 101)]

    report = validate_dataframe(
        _deleted_frame(spark, rows), file_deleted_suite(now=NOW), evaluated_at=NOW
    )

    size = report.outcome("file_size_in_range")
    assert (size.success, size.unexpected_count, size.unexpected_percent) == (False, 50, 50.0)
    assert [o.name for o in report.critical_failures] == ["file_size_in_range"]


def test_size_above_one_tebibyte_is_out_of_range(spark):
    rows = [_deleted(1, file_size=rules.MAX_FILE_SIZE), _deleted(2, file_size=(1 << 40) + 1)]

    report = validate_dataframe(
        _deleted_frame(spark, rows), file_deleted_suite(now=NOW, mostly=1.0), evaluated_at=NOW
    )

    size = report.outcome("file_size_in_range")
    assert (size.unexpected_count, size.sample_values) == (1, (str((1 << 40) + 1),))


def test_deleted_at_beyond_the_clock_skew_is_a_warning(spark):
    within_skew = NOW + dt.timedelta(minutes=4)
    future = NOW + dt.timedelta(hours=1)
    rows = [
        _deleted(1, deleted_at=within_skew),
        _deleted(2, deleted_at=future),
        *[_deleted(seq) for seq in range(3, 11)],
    ]

    report = validate_dataframe(
        _deleted_frame(spark, rows), file_deleted_suite(now=NOW, mostly=1.0), evaluated_at=NOW
    )

    future_check = report.outcome("deleted_at_not_in_future")
    assert (future_check.success, future_check.unexpected_count) == (False, 1)
    assert future_check.sample_values[0].startswith("2026-11-21T11:00:00")
    assert [o.name for o in report.warnings] == ["deleted_at_not_in_future"]
    assert report.critical_failures == ()


def test_duplicate_event_ids_are_reported_and_block_beyond_mostly(spark):
    rows = [_deleted(seq, event_id="evt-dup" if seq <= 3 else f"evt-{seq}") for seq in range(1, 21)]

    report = validate_dataframe(
        _deleted_frame(spark, rows), file_deleted_suite(now=NOW), evaluated_at=NOW
    )

    unique = report.outcome("event_id_unique")
    # GX counts every row of a repeated value, the first occurrence included.
    assert (unique.success, unique.unexpected_count, unique.sample_values) == (
        False,
        3,
        ("evt-dup",),
    )
    assert [o.name for o in report.critical_failures] == ["event_id_unique"]


def test_missing_or_mistyped_fields_fail_the_not_null_checks(spark):
    rows = [_deleted(seq, file_size=None if seq <= 10 else seq) for seq in range(1, 101)]

    report = validate_dataframe(
        _deleted_frame(spark, rows), file_deleted_suite(now=NOW), evaluated_at=NOW
    )

    not_null = report.outcome("file_size_not_null")
    assert (not_null.success, not_null.unexpected_count, not_null.rule) == (
        False,
        10,
        "required_fields_present",
    )
    assert [o.name for o in report.critical_failures] == ["file_size_not_null"]
    assert report.outcome("file_size_in_range").success


def test_mime_type_and_user_id_formats_are_warnings(spark):
    rows = [_deleted(1, mime_type="Application/PDF", user_id="u-1"), _deleted(2)]

    report = validate_dataframe(
        _deleted_frame(spark, rows), file_deleted_suite(now=NOW), evaluated_at=NOW
    )

    assert [o.name for o in report.warnings] == ["mime_type_well_formed", "user_id_format"]
    assert report.outcome("user_id_format").sample_values == ("u-1",)
    assert report.critical_failures == ()


def test_every_check_is_tagged_with_a_contract_rule_and_uses_mostly():
    suite = file_deleted_suite(now=NOW, mostly=0.9)

    rule_names = {rule.name for rule in rules.RULES}
    assert {check.rule for check in suite.checks} <= rule_names
    assert {c.name for c in suite.checks if not c.critical} == {
        "mime_type_well_formed",
        "deleted_at_not_in_future",
        "user_id_format",
    }
    assert {c.rule for c in suite.checks if c.critical} == {
        "required_fields_present",
        "event_id_unique",
        "file_size_in_range",
    }
    assert all(c.kwargs["mostly"] == 0.9 for c in suite.checks)
    assert "wrong JSON type" in suite.check("file_size_not_null").description


def test_file_trashed_suite_checks_required_fields_and_unique_event_ids(spark):
    rows = [_trashed(1, event_id="t-1"), _trashed(2, event_id="t-1"), _trashed(3, trash_id=None)]
    frame = spark.createDataFrame(rows, FILE_TRASHED_CANDIDATE)

    report = validate_dataframe(frame, file_trashed_suite(mostly=1.0), evaluated_at=NOW)

    assert {o.name for o in report.critical_failures} == {"event_id_unique", "trash_id_not_null"}
    assert all(o.critical for o in report.outcomes)


def test_a_naive_clock_or_a_mostly_out_of_range_is_refused():
    with pytest.raises(ValueError, match="timezone-aware"):
        file_deleted_suite(now=dt.datetime(2026, 11, 21, 10, 0))
    with pytest.raises(ValueError, match="mostly must be in"):
        file_deleted_suite(now=NOW, mostly=1.5)
    with pytest.raises(ValueError, match="mostly must be in"):
        file_trashed_suite(mostly=0)
