"""The file trash silver's Great Expectations suites, generated from its contract.

One expectation per rule and column (`pipelines.silver.expectations.contract_suite`); a check
is critical (it blocks gold) when its rule is `quarantine+block`: required fields present,
event id unique and file size in range. The suites run on the candidates of a routed batch
(every row of the type, quarantined ones too) on real Spark and GX.
"""

from __future__ import annotations

import pytest

from pipelines.silver.expectations import contract_suite, expectation_frame, rule_outcomes
from resources.quality import validate_dataframe
from tests.pipelines.file_trash.test_silver import (
    CONTRACT,
    DELETED,
    NOW,
    TRASHED,
    bronze,
    changed,
    deleted_event,
    route,
    trashed_event,
)

TIB = 1 << 40
DELETED_REQUIRED = [
    "event_id", "event_type", "event_timestamp", "file_id", "file_name", "file_path",
    "file_size", "mime_type", "user_id", "deleted_at",
]  # fmt: skip
TRASHED_REQUIRED = [
    "event_id", "event_type", "event_timestamp", "trash_id", "file_id", "file_name", "user_id",
    "trashed_at", "expires_at", "original_event_id",
]  # fmt: skip


def test_the_file_deleted_suite_blocks_on_missing_fields_copies_and_impossible_sizes():
    suite = contract_suite(CONTRACT, CONTRACT.event_type(DELETED), mostly=0.95)

    assert suite.name == "silver/file_deleted"
    checks = {c.name: (c.rule, c.critical, c.expectation) for c in suite.checks}
    assert checks == {
        **{
            f"{column}_not_null": (
                "required_fields_present", True, "ExpectColumnValuesToNotBeNull",
            )
            for column in DELETED_REQUIRED
        },
        "event_id_unique": ("event_id_unique", True, "ExpectColumnValuesToBeUnique"),
        "file_size_in_range": ("file_size_in_range", True, "ExpectColumnValuesToBeBetween"),
        "mime_type_well_formed": (
            "mime_type_well_formed", False, "ExpectColumnValuesToMatchRegex",
        ),
        "deleted_at_not_in_future": (
            "deleted_at_not_in_future", False, "ExpectColumnPairValuesAToBeGreaterThanB",
        ),
        "user_id_format": ("user_id_format", False, "ExpectColumnValuesToMatchRegex"),
    }  # fmt: skip
    assert dict(suite.check("file_size_in_range").kwargs) == {
        "column": "file_size",
        "min_value": 0,
        "max_value": TIB,
        "mostly": 0.95,
    }
    assert suite.check("user_id_format").kwargs["regex"] == r"^user-[0-9]{3,}\z"
    assert suite.check("mime_type_well_formed").kwargs["regex"] == (
        r"^[a-z]+/[a-z0-9][a-z0-9.+-]*\z"
    )
    assert all(c.kwargs["mostly"] == 0.95 for c in suite.checks)
    # The not-null checks read the field's presence: a mistyped value is not missing.
    assert suite.check("file_size_not_null").kwargs["column"] == "file_size__present"


def test_the_file_trashed_suite_checks_required_fields_and_copies_all_critical():
    suite = contract_suite(CONTRACT, CONTRACT.event_type(TRASHED))

    assert suite.name == "silver/file_trashed"
    assert [c.name for c in suite.checks] == [
        *(f"{column}_not_null" for column in TRASHED_REQUIRED),
        "event_id_unique",
    ]
    assert all(c.critical for c in suite.checks)


@pytest.fixture(scope="module")
def reports(spark):
    """Each suite (every row needed: mostly 1) on the candidates of one batch."""
    soon = "2026-11-21T12:04:00.000Z"  # within the 5 minutes of skew after publishing
    payloads = [
        *(deleted_event(f"e-{n}") for n in range(1, 11)),
        deleted_event("e-11", fileSize=TIB),
        deleted_event("e-12", fileSize=TIB + 1),
        deleted_event("e-13", fileSize=-5),
        deleted_event("e-14", mimeType="Application/PDF", userId="u-1"),
        deleted_event("e-15", deletedAt=soon),
        deleted_event("e-16", deletedAt="2026-11-21T13:00:00.000Z"),
        changed(deleted_event("e-17"), "data.fileSize", "12"),  # mistyped: null file_size
        changed(deleted_event("e-18"), "data.fileSize", None),
        deleted_event("e-1"),  # a copy
        trashed_event("t-1"),
        trashed_event("t-1"),
        changed(trashed_event("t-2"), "data.trashId", None),
    ]
    batch = route(bronze(spark, payloads))
    found = {}
    for name in (DELETED, TRASHED):
        event = CONTRACT.event_type(name)
        frame = expectation_frame(batch.candidates[name], CONTRACT, event)
        found[name] = validate_dataframe(frame, contract_suite(CONTRACT, event), evaluated_at=NOW)
    return found


def test_impossible_sizes_missing_sizes_and_copies_fail_critical_checks(reports):
    report = reports[DELETED]

    # The other checks pass: the valid rows, and the bad ones for what they do not break.
    assert {o.name for o in report.outcomes if not o.success} == {
        "file_size_in_range",
        "file_size_not_null",
        "event_id_unique",
        "mime_type_well_formed",
        "user_id_format",
        "deleted_at_not_in_future",
    }

    size = report.outcome("file_size_in_range")
    assert (size.success, size.unexpected_count) == (False, 2)
    assert set(size.sample_values) == {str(TIB + 1), "-5"}
    # e-18's null size is missing; e-17's mistyped one breaks field_types_valid, not this.
    assert report.outcome("file_size_not_null").unexpected_count == 1
    # GX counts every row of a repeated id, the first one included.
    unique = report.outcome("event_id_unique")
    assert (unique.unexpected_count, unique.sample_values) == (2, ("e-1",))
    assert {o.name for o in report.critical_failures} == {
        "file_size_in_range",
        "file_size_not_null",
        "event_id_unique",
    }


def test_formats_and_a_future_deleted_at_are_warnings(reports):
    report = reports[DELETED]

    assert {o.name for o in report.warnings} == {
        "mime_type_well_formed",
        "user_id_format",
        "deleted_at_not_in_future",
    }
    assert report.outcome("user_id_format").sample_values == ("u-1",)
    assert report.outcome("mime_type_well_formed").sample_values == ("Application/PDF",)
    assert report.outcome("deleted_at_not_in_future").unexpected_count == 1  # not e-15's


def test_the_trashed_suite_fails_on_a_copy_and_a_missing_trash_id(reports):
    report = reports[TRASHED]

    assert {o.name for o in report.critical_failures} == {"event_id_unique", "trash_id_not_null"}
    assert report.warnings == ()
    outcomes = rule_outcomes(report)
    assert outcomes["required_fields_present"]["unexpected"] == 1
    assert outcomes["event_id_unique"]["unexpected"] == 2
