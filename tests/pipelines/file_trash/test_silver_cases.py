"""Every file trash case through the generated silver in one batch, its outcome pinned.

Each case is a bronze row; per row the test pins where it lands: its silver table, or the
quarantine with every rule it broke, its event id and type and the full error. The outcomes
were written out from the output of the generated silver (`pipelines/file_trash/contract.yaml`
through `pipelines.silver`) when the hand-written silver it replaced (`route_bronze`) gave
the same tables, rules, ids and types for every one of these rows (but the last, marked),
and the same errors but for a full JSON path (`data.fileSize` for `fileSize`) and a missing
`data` object, which the hand-written silver reported as `data` and the generated one as each
required field in it.
"""

from __future__ import annotations

import datetime as dt
from typing import NamedTuple

import pytest

from pipelines.file_trash.generator import GOOD, generate_event_mix
from pipelines.silver.route import candidate_columns, judged_rows, routed_counts
from tests.pipelines.file_trash.test_generator import RULE_OF_KIND
from tests.pipelines.file_trash.test_silver import (
    CONTRACT,
    DELETED,
    MISSING,
    NOW,
    TRASHED,
    bronze,
    changed,
    deleted_event,
    encoded,
    route,
    trashed_event,
)

TIB = 1 << 40  # the largest fileSize allowed
SOON = "2026-11-21T12:05:00.000Z"  # published (NOW) + 5 minutes: the latest deletedAt allowed
LATE = "2026-11-21T12:05:00.001Z"
MIME = "^[a-z]+/[a-z0-9][a-z0-9.+-]*$"
USER = "^user-[0-9]{3,}$"
KNOWN = "FileDeletedEvent, FilePlacedInTrashEvent"
DELETED_FIELDS = (
    "data.fileId, data.fileName, data.filePath, data.fileSize, data.mimeType, data.userId, "
    "data.deletedAt"
)


class Quarantined(NamedTuple):
    rules: list[str]
    event_id: str | None
    event_type: str | None
    error: str


def copy_error(event_id: str, seq: int) -> str:
    return (
        f"event_id_unique: eventId '{event_id}' was first seen in stream 'FILE_EVENTS' at seq "
        f"{seq}; this later copy is not kept"
    )


def payload_error(problem: str) -> Quarantined:
    return Quarantined(["parseable_json"], None, None, f"parseable_json: {problem}")


def wrong_type(event_id: str | None, path: str, expected: str, event_type=DELETED) -> Quarantined:
    error = f"field_types_valid: wrong type: {path} (expected {expected})"
    return Quarantined(["field_types_valid"], event_id, event_type, error)


def missing(event_id: str, paths: str, event_type=DELETED) -> Quarantined:
    error = f"required_fields_present: missing or null: {paths}"
    return Quarantined(["required_fields_present"], event_id, event_type, error)


def broken(rule: str, event_id: str, detail: str) -> Quarantined:
    return Quarantined([rule], event_id, DELETED, f"{rule}: {detail}")


# (name, payload, where it lands: DELETED, TRASHED or Quarantined). Seq is the position + 1.
CASES = [
    # The rows of tests/pipelines/silver/test_file_trash_equivalence.py (now deleted).
    ("valid deleted", deleted_event("e-1"), DELETED),
    ("valid trashed", trashed_event("t-1"), TRASHED),
    ("a copy of e-1", deleted_event("e-1"), Quarantined(
        ["event_id_unique"], "e-1", DELETED, copy_error("e-1", 1))),
    ("negative fileSize", changed(deleted_event("e-2"), "data.fileSize", -1), broken(
        "file_size_in_range", "e-2", f"data.fileSize -1 is outside [0, {TIB}]")),
    ("unknown eventType", changed(deleted_event("e-3"), "eventType", "FileRenamedEvent"),
        Quarantined(["known_event_type"], "e-3", "FileRenamedEvent",
                    f"known_event_type: eventType 'FileRenamedEvent' is not {KNOWN}")),
    ("truncated JSON", b"{", payload_error("payload is not valid JSON")),
    ("an array", b"[]", payload_error("payload is a JSON array, not an object")),
    ("JSON null", "null", payload_error("payload is JSON null, not an object")),
    ("no trashId", changed(trashed_event("t-2"), "data.trashId", MISSING), missing(
        "t-2", "data.trashId", TRASHED)),
    ("a unicode file name", deleted_event("e-4", fileName="résumé ✓.pdf"), DELETED),
    ("a number", b"42", payload_error("payload is a JSON number, not an object")),
    ("empty", b"", payload_error("payload is empty")),
    ("a string", b'"text"', payload_error("payload is a JSON string, not an object")),
    ("not UTF-8", b"\xff\xfe{}", payload_error("payload is not valid UTF-8")),
    ("text after the object", b'{"eventId":"x"}x', payload_error("payload is not valid JSON")),
    ("userId bob", deleted_event("e-9", userId="bob"), broken(
        "user_id_format", "e-9", f"data.userId 'bob' does not match {USER}")),
    ("mimeType PDF", deleted_event("e-5", mimeType="PDF"), broken(
        "mime_type_well_formed", "e-5", f"data.mimeType 'PDF' does not match {MIME}")),
    ("fileSize as text", changed(deleted_event("e-6"), "data.fileSize", "12"), wrong_type(
        "e-6", "data.fileSize", "an integer of 64 bits")),
    ("deletedAt 6 minutes after publishing", deleted_event("e-7", deletedAt="2026-11-21T12:06:00Z"),
        broken("deleted_at_not_in_future", "e-7", "data.deletedAt 2026-11-21T12:06:00.000Z is "
               "later than its publish time + clock skew (2026-11-21T12:05:00.000Z)")),
    ("date-only deletedAt", deleted_event("e-8", deletedAt="2026-11-21"), wrong_type(
        "e-8", "data.deletedAt", "an ISO-8601 timestamp string")),
    ("no data", changed(deleted_event("e-10"), "data", MISSING), missing("e-10", DELETED_FIELDS)),
    ("data not an object", changed(deleted_event("e-11"), "data", "not an object"), wrong_type(
        "e-11", "data", "an object")),
    ("eventId a number", changed(deleted_event("e-12"), "eventId", 12), wrong_type(
        None, "eventId", "a string")),
    ("no timestamp", changed(deleted_event("e-13"), "timestamp", MISSING), missing(
        "e-13", "timestamp")),
    ("no eventType, userId a number",
        changed(changed(deleted_event("e-14"), "eventType", MISSING), "data.userId", 7),
        Quarantined(["known_event_type", "required_fields_present"], "e-14", None,
                    f"known_event_type: eventType is not a string; expected {KNOWN}; "
                    "required_fields_present: missing or null: eventType")),
    ("fileSize 2**70", changed(deleted_event("e-15"), "data.fileSize", 2**70), wrong_type(
        "e-15", "data.fileSize", "an integer of 64 bits")),
    ("userId with a trailing newline", deleted_event("e-16", userId="user-001\n"), broken(
        "user_id_format", "e-16", f"data.userId 'user-001\n' does not match {USER}")),
    ("null expiresAt", trashed_event("t-3", expiresAt=None), missing(
        "t-3", "data.expiresAt", TRASHED)),
    ("a copy of t-1 with another fileId", changed(trashed_event("t-1"), "data.fileId", "other"),
        Quarantined(["event_id_unique"], "t-1", TRASHED, copy_error("t-1", 2))),
    ("t-1 as a FileDeletedEvent: another type, not a copy", deleted_event("t-1"), DELETED),
    # The rows of tests/pipelines/file_trash/test_rules.py (now deleted) not already above.
    ("valid trashed with any userId", trashed_event("t-valid", userId="bob"), TRASHED),
    ("valid at the bounds", deleted_event(
        "e-bounds", fileSize=TIB, deletedAt=SOON, userId="user-12345"), DELETED),
    ("zero bytes", deleted_event("e-zero", fileSize=0, mimeType="application/vnd.ms-excel"),
        DELETED),
    ("offset timestamp", deleted_event("e-offset", deletedAt="2026-11-21T11:00:00+01:00"), DELETED),
    ("trailing garbage", '{"eventId":"x"} x', payload_error("payload is not valid JSON")),
    ("trailing bracket", '{"eventId":"x"}] [5', Quarantined(
        ["parseable_json"], "x", None,
        "parseable_json: payload has content after the JSON object")),
    ("duplicate keys", '{"eventId":"a","eventId":"b"}', payload_error("payload is not valid JSON")),
    ("no userId", changed(deleted_event("e-no-user"), "data.userId", MISSING), missing(
        "e-no-user", "data.userId")),
    ("null mimeType", changed(deleted_event("e-null-mime"), "data.mimeType", None), missing(
        "e-null-mime", "data.mimeType")),
    ("fractional fileSize", deleted_event("e-size-frac", fileSize=1.5), wrong_type(
        "e-size-frac", "data.fileSize", "an integer of 64 bits")),
    ("fileSize 2**64", deleted_event("e-size-huge", fileSize=1 << 64), wrong_type(
        "e-size-huge", "data.fileSize", "an integer of 64 bits")),
    ("bad trashed expiresAt", trashed_event("t-bad-expiry", expiresAt="next month"), wrong_type(
        "t-bad-expiry", "data.expiresAt", "an ISO-8601 timestamp string", TRASHED)),
    ("over 1 TiB", deleted_event("e-big", fileSize=TIB + 1), broken(
        "file_size_in_range", "e-big", f"data.fileSize {TIB + 1} is outside [0, {TIB}]")),
    ("upper-case mimeType", deleted_event("e-mime", mimeType="Application/PDF"), broken(
        "mime_type_well_formed", "e-mime",
        f"data.mimeType 'Application/PDF' does not match {MIME}")),
    ("mimeType without subtype", deleted_event("e-mime2", mimeType="application/"), broken(
        "mime_type_well_formed", "e-mime2", f"data.mimeType 'application/' does not match {MIME}")),
    ("deletedAt 1 ms beyond the skew", deleted_event("e-future", deletedAt=LATE), broken(
        "deleted_at_not_in_future", "e-future", "data.deletedAt 2026-11-21T12:05:00.001Z is "
        "later than its publish time + clock skew (2026-11-21T12:05:00.000Z)")),
    ("two-digit userId", deleted_event("e-user", userId="user-01"), broken(
        "user_id_format", "e-user", f"data.userId 'user-01' does not match {USER}")),
    ("mimeType with a trailing newline", deleted_event("e-mime-nl", mimeType="text/plain\n"),
        broken("mime_type_well_formed", "e-mime-nl",
               f"data.mimeType 'text/plain\n' does not match {MIME}")),
    ("two rules", deleted_event("e-two", fileSize=-5, userId="bob"), Quarantined(
        ["file_size_in_range", "user_id_format"], "e-two", DELETED,
        f"file_size_in_range: data.fileSize -5 is outside [0, {TIB}]; "
        f"user_id_format: data.userId 'bob' does not match {USER}")),
    ("missing and mistyped",
        changed(deleted_event("e-mixed", fileSize="1"), "data.fileName", MISSING),
        Quarantined(["required_fields_present", "field_types_valid"], "e-mixed", DELETED,
                    "required_fields_present: missing or null: data.fileName; "
                    "field_types_valid: wrong type: data.fileSize "
                    "(expected an integer of 64 bits)")),
    ("unknown type without eventId",
        changed(changed(deleted_event(), "eventType", "Other"), "eventId", MISSING),
        Quarantined(["known_event_type", "required_fields_present"], None, "Other",
                    f"known_event_type: eventType 'Other' is not {KNOWN}; "
                    "required_fields_present: missing or null: eventId")),
    ("eventType not a string", changed(deleted_event("e-type-num"), "eventType", 7),
        Quarantined(["known_event_type", "field_types_valid"], "e-type-num", None,
                    f"known_event_type: eventType is not a string; expected {KNOWN}; "
                    "field_types_valid: wrong type: eventType (expected a string)")),
    # Rules are listed in the contract's order: the hand-written silver listed these two the
    # other way round (deleted_at_not_in_future before user_id_format).
    ("userId and deletedAt both wrong", deleted_event("e-both", userId="bob", deletedAt=LATE),
        Quarantined(["user_id_format", "deleted_at_not_in_future"], "e-both", DELETED,
                    f"user_id_format: data.userId 'bob' does not match {USER}; "
                    "deleted_at_not_in_future: data.deletedAt 2026-11-21T12:05:00.001Z is later "
                    "than its publish time + clock skew (2026-11-21T12:05:00.000Z)")),
]  # fmt: skip
NAMES = [name for name, _, _ in CASES]
SEQ = {name: seq for seq, name in enumerate(NAMES, start=1)}


def collected(moment: dt.datetime) -> dt.datetime:
    """An aware datetime as PySpark collects a timestamp: naive, in the process's time zone."""
    return dt.datetime.fromtimestamp(moment.timestamp())


@pytest.fixture(scope="module")
def batch(spark):
    return route(bronze(spark, [payload for _, payload, _ in CASES]))


@pytest.fixture(scope="module")
def outcomes(batch) -> dict[int, object]:
    """seq -> the table it landed in, or Quarantined(...)."""
    found: dict[int, object] = {}
    for name, frame in batch.tables.items():
        for row in frame.select("seq").collect():
            assert row.seq not in found, row.seq
            found[row.seq] = name
    quarantine = batch.quarantine.select("seq", "failed_rules", "event_id", "event_type", "error")
    for row in quarantine.collect():
        assert row.seq not in found, row.seq
        found[row.seq] = Quarantined(row.failed_rules, row.event_id, row.event_type, row.error)
    return found


def test_the_cases_are_distinct_and_every_row_lands_once(outcomes):
    assert len(set(NAMES)) == len(NAMES)
    assert sorted(outcomes) == list(range(1, len(CASES) + 1))


@pytest.mark.parametrize("name", NAMES)
def test_each_case_lands_where_pinned(outcomes, name):
    _, _, expected = CASES[SEQ[name] - 1]

    assert outcomes[SEQ[name]] == expected


def test_quarantined_rows_keep_the_bytes_as_published(batch):
    payloads = {
        r.seq: bytes(r.payload) for r in batch.quarantine.select("seq", "payload").collect()
    }

    assert payloads == {
        seq: encoded(payload)
        for seq, (_, payload, where) in enumerate(CASES, start=1)
        if isinstance(where, Quarantined)
    }


def test_candidates_hold_every_row_of_their_type_with_the_rules_it_broke(batch):
    for event_type in (DELETED, TRASHED):
        expected = {}
        for seq, (_, _, where) in enumerate(CASES, start=1):
            if where == event_type:
                expected[seq] = []
            elif isinstance(where, Quarantined) and where.event_type == event_type:
                expected[seq] = where.rules

        candidates = batch.candidates[event_type].select("seq", "failed_rules").collect()

        assert {r.seq: r.failed_rules for r in candidates} == expected, event_type


def test_one_aggregate_counts_what_each_frame_counts_alone(batch):
    typed, quarantined = routed_counts(batch, CONTRACT)

    assert typed == {name: judged_rows(frame, CONTRACT) for name, frame in batch.candidates.items()}
    assert quarantined == judged_rows(batch.quarantine, CONTRACT, split=False)
    # The cases hold rows of each type kept and quarantined, and rows of no declared type.
    assert all(0 < t.kept < t.rows for t in typed.values())
    assert quarantined.rows > sum(t.rows - t.kept for t in typed.values())


def test_the_candidates_columns_are_known_without_asking_spark(batch):
    for event in CONTRACT.event_types:
        derived = [d.name for d in event.derived]
        assert batch.candidates[event.name].columns == candidate_columns(event) + derived
    assert any(event.derived for event in CONTRACT.event_types)


def test_kept_rows_are_typed_as_published(batch):
    columns = ("seq", "event_id", "file_name", "file_size", "mime_type", "user_id", "deleted_at")
    deleted = {r.seq: tuple(r)[1:] for r in batch.tables[DELETED].select(*columns).collect()}
    at = collected(dt.datetime(2026, 11, 21, 10, 0, tzinfo=dt.timezone.utc))
    pdf, user = "application/pdf", "user-001"

    assert deleted[SEQ["a unicode file name"]] == ("e-4", "résumé ✓.pdf", 123456, pdf, user, at)
    assert deleted[SEQ["valid at the bounds"]] == (
        "e-bounds", "report.pdf", TIB, pdf, "user-12345",
        collected(dt.datetime(2026, 11, 21, 12, 5, tzinfo=dt.timezone.utc)),
    )  # fmt: skip
    assert deleted[SEQ["zero bytes"]][2:4] == (0, "application/vnd.ms-excel")
    assert deleted[SEQ["offset timestamp"]][-1] == at
    trashed = batch.tables[TRASHED].where(f"seq = {SEQ['valid trashed with any userId']}")
    assert trashed.select("user_id").first()[0] == "bob"


def test_a_future_deleted_at_is_judged_against_the_publish_time_however_late_it_is_processed(
    spark,
):
    # Published at NOW with a deletedAt 1 hour later: in the future when it was published,
    # still quarantined when silver processes it a day later, and the same on a re-run.
    frame = bronze(spark, [deleted_event("e-late", deletedAt="2026-11-21T13:00:00.000Z")])
    for now in (NOW, NOW + dt.timedelta(days=1)):
        batch = route(frame, now=now)
        assert batch.tables[DELETED].count() == 0
        assert [r.failed_rules for r in batch.quarantine.collect()] == [
            ["deleted_at_not_in_future"]
        ]


def test_each_generated_bad_event_breaks_exactly_the_rule_of_its_kind_and_good_ones_none(spark):
    events = generate_event_mix(350, bad_share=0.3, now=NOW, seed=3)
    batch = route(bronze(spark, [event.payload for event in events]))

    kept = {r.seq for r in batch.tables[DELETED].select("seq").collect()}
    quarantined = {r.seq: r.failed_rules for r in batch.quarantine.collect()}
    assert batch.tables[TRASHED].count() == 0
    for seq, event in enumerate(events, start=1):
        if event.kind == GOOD:
            assert seq in kept, event
        else:
            assert quarantined.get(seq) == [RULE_OF_KIND[event.kind]], event
    assert len(kept) + len(quarantined) == len(events)
