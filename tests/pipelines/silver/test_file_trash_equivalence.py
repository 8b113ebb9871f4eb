"""The generated silver of pipelines/file_trash/contract.yaml gives today's hand-written silver.

The same bronze rows (the payloads of tests/pipelines/file_trash/test_silver.py, plus
envelope and data-object problems) go through `pipelines.file_trash.silver.route_bronze` and
through `pipelines.silver` with the contract: equal silver rows, and per quarantined row the
same rules, event id and event type. The readable errors differ by design, and only as
`ERROR_DIFFERENCES` lists.
"""

import pytest

from pipelines.contract import read_contract
from pipelines.file_trash.silver import route_bronze
from pipelines.settings import PROJECT_DIR
from pipelines.silver import parse_events, route
from tests.pipelines.file_trash.test_silver import (
    MISSING,
    MIXED_PAYLOADS,
    NOW,
    SOURCE,
    bronze,
    changed,
    deleted_event,
    encoded,
    trashed_event,
)

CONTRACT = read_contract(PROJECT_DIR / "pipelines" / "file_trash" / "contract.yaml")
TABLES = {"FileDeletedEvent": "file_deleted", "FilePlacedInTrashEvent": "file_trashed"}
PAYLOADS = [
    *MIXED_PAYLOADS,
    b"42",
    b"",
    b'"text"',
    b"\xff\xfe{}",
    b'{"eventId":"x"}x',
    deleted_event("e-9", userId="bob"),
    deleted_event("e-5", mimeType="PDF"),
    changed(deleted_event("e-6"), "data.fileSize", "12"),
    deleted_event("e-7", deletedAt="2026-11-21T12:06:00Z"),  # 6 minutes after publishing
    deleted_event("e-8", deletedAt="2026-11-21"),  # no time, no zone
    changed(deleted_event("e-10"), "data", MISSING),
    changed(deleted_event("e-11"), "data", "not an object"),
    changed(deleted_event("e-12"), "eventId", 12),
    changed(deleted_event("e-13"), "timestamp", MISSING),
    changed(changed(deleted_event("e-14"), "eventType", MISSING), "data.userId", 7),
    changed(deleted_event("e-15"), "data.fileSize", 2**70),
    deleted_event("e-16", userId="user-001\n"),
    trashed_event("t-3", expiresAt=None),
    changed(trashed_event("t-1"), "data.fileId", "other"),  # a duplicate of another type's id
    deleted_event("t-1"),  # the same id in another event type: not a duplicate
]
# seq -> (hand-written error, generated error) where they differ by design: the generated
# silver names fields by their full JSON path, and the contract has no `data` field, so a
# missing `data` object reports each required field in it.
ERROR_DIFFERENCES = {
    4: (
        "file_size_in_range: fileSize -1 is outside [0, 1099511627776]",
        "file_size_in_range: data.fileSize -1 is outside [0, 1099511627776]",
    ),
    16: (
        "user_id_format: userId 'bob' does not match ^user-[0-9]{3,}$",
        "user_id_format: data.userId 'bob' does not match ^user-[0-9]{3,}$",
    ),
    17: (
        "mime_type_well_formed: mimeType 'PDF' does not match ^[a-z]+/[a-z0-9][a-z0-9.+-]*$",
        "mime_type_well_formed: data.mimeType 'PDF' does not match ^[a-z]+/[a-z0-9][a-z0-9.+-]*$",
    ),
    19: (
        "deleted_at_not_in_future: deletedAt 2026-11-21T12:06:00.000Z is later than its publish "
        "time + clock skew (2026-11-21T12:05:00.000Z)",
        "deleted_at_not_in_future: data.deletedAt 2026-11-21T12:06:00.000Z is later than its "
        "publish time + clock skew (2026-11-21T12:05:00.000Z)",
    ),
    21: (
        "required_fields_present: missing or null: data",
        "required_fields_present: missing or null: data.fileId, data.fileName, data.filePath, "
        "data.fileSize, data.mimeType, data.userId, data.deletedAt",
    ),
    27: (
        "user_id_format: userId 'user-001\n' does not match ^user-[0-9]{3,}$",
        "user_id_format: data.userId 'user-001\n' does not match ^user-[0-9]{3,}$",
    ),
}


@pytest.fixture(scope="module")
def both(spark):
    frame = bronze(spark, PAYLOADS)
    old = route_bronze(frame, existing=None, now=NOW, run_id="run-1", source_table=SOURCE)
    new = route(
        parse_events(frame, CONTRACT), CONTRACT, run_id="run-1", now=NOW, source_table=SOURCE
    )
    return old, new


def rows(frame) -> dict[int, dict]:
    return {row.seq: row.asDict() for row in frame.collect()}


@pytest.mark.parametrize("event_type", list(TABLES))
def test_silver_tables_have_the_same_rows_and_columns(both, event_type):
    old, new = both
    hand_written = getattr(old, TABLES[event_type])
    generated = new.tables[event_type]

    assert generated.columns == hand_written.columns
    assert rows(generated) == rows(hand_written)
    assert rows(generated)  # not vacuous


def test_quarantine_rows_have_the_same_rules_id_and_type(both):
    old, new = both
    hand_written, generated = rows(old.quarantine), rows(new.quarantine)

    assert generated.keys() == hand_written.keys()
    for seq, row in hand_written.items():
        mine = generated[seq]
        assert set(mine["failed_rules"]) == set(row["failed_rules"]), seq
        assert (mine["event_id"], mine["event_type"]) == (row["event_id"], row["event_type"]), seq
        assert bytes(mine["payload"]) == encoded(PAYLOADS[seq - 1])
        same = {k: v for k, v in row.items() if k not in ("failed_rules", "error")}
        assert {k: mine[k] for k in same} == same, seq


def test_errors_are_the_same_but_for_full_paths_and_the_missing_data_object(both):
    old, new = both
    hand_written, generated = rows(old.quarantine), rows(new.quarantine)

    differences = {
        seq: (row["error"], generated[seq]["error"])
        for seq, row in hand_written.items()
        if row["error"] != generated[seq]["error"]
    }
    assert differences == ERROR_DIFFERENCES


def test_candidates_hold_the_same_rows_with_the_same_rules(both):
    old, new = both
    for event_type in TABLES:
        hand_written = {r.seq: set(r.failed_rules) for r in old.candidates[event_type].collect()}
        generated = {r.seq: set(r.failed_rules) for r in new.candidates[event_type].collect()}
        assert generated == hand_written
