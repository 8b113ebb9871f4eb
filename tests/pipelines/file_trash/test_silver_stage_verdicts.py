"""The silver watermark records each check's verdict of the batch that moved it, so that a
run with nothing new can report the verdict of what silver holds (real KV bucket)."""

from __future__ import annotations

import datetime as dt

import pytest

from pipelines.file_trash.silver_stage import (
    FILE_DELETED,
    FILE_TRASHED,
    STAGE,
    check_verdicts,
    recorded_verdicts,
)
from pipelines.watermarks import Watermark, WatermarkStore
from resources.jetstream import KeyValueSpec
from resources.quality import CheckOutcome, ValidationReport

NOW = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.UTC)


def report(**passed: bool) -> ValidationReport:
    """A validation report whose checks passed or failed as given."""
    outcomes = tuple(
        CheckOutcome(name, name, True, success, "expect", None, 10, 0, 0.0, 0.95, (), None)
        for name, success in passed.items()
    )
    return ValidationReport("suite", all(passed.values()), outcomes, NOW, b"{}")


@pytest.fixture
def watermarks(js, unique_name) -> WatermarkStore:
    return WatermarkStore(js.create_key_value(KeyValueSpec(unique_name)))


def test_the_verdicts_of_a_batch_survive_the_watermark_round_trip(watermarks):
    reports = {
        FILE_DELETED: report(file_size_in_range=False, user_id_format=True),
        FILE_TRASHED: report(event_id_unique=True),
    }
    watermarks.save(
        watermarks.load(STAGE).advanced(
            40, run_id="run-1", now=NOW, bronze_start=1, checks=check_verdicts(reports)
        )
    )

    loaded = watermarks.load(STAGE)

    assert recorded_verdicts(loaded) == {
        FILE_DELETED: {"file_size_in_range": False, "user_id_format": True},
        FILE_TRASHED: {"event_id_unique": True},
    }
    assert (loaded.position, loaded.details["bronze_start"]) == (40, 1)


@pytest.mark.parametrize(
    "details",
    [{}, {"bronze_version": 3}, {"checks": None}, {"checks": "garbage"}],
    ids=["never-ran", "saved-before-verdicts", "null", "not-an-object"],
)
def test_a_watermark_without_verdicts_records_none(details):
    assert recorded_verdicts(Watermark(STAGE, 40, details=details)) is None
