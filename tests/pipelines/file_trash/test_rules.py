"""The row-level rules: each broken alone, two at once, and what is not a rule's business.

Every case is a bronze row; all of them are routed in one batch (one Spark job), and each test
looks at its own row's `failed_rules` and `error`.
"""

import datetime as dt

import pytest

from pipelines.file_trash import rules
from pipelines.file_trash.rules import (
    CLOCK_SKEW,
    MAX_FILE_SIZE,
    MIME_TYPE_PATTERN,
    RULES,
    TRASH_RETENTION,
    USER_ID_PATTERN,
)
from tests.pipelines.file_trash.test_silver import (
    MISSING,
    NOW,
    bronze,
    changed,
    deleted_event,
    route,
    trashed_event,
)

SOON = "2026-11-21T12:05:00.000Z"  # NOW + CLOCK_SKEW: the latest deletedAt allowed
LATE = "2026-11-21T12:05:00.001Z"

# name -> (payload, the rules it breaks, a part of its error)
CASES = {
    "valid": (deleted_event("e-valid"), [], ""),
    "valid trashed with any userId": (trashed_event("t-valid", userId="bob"), [], ""),
    "valid at the bounds": (
        deleted_event("e-bounds", fileSize=MAX_FILE_SIZE, deletedAt=SOON, userId="user-12345"),
        [],
        "",
    ),
    "zero bytes": (
        deleted_event("e-zero", fileSize=0, mimeType="application/vnd.ms-excel"),
        [],
        "",
    ),
    "offset timestamp": (deleted_event("e-offset", deletedAt="2026-11-21T11:00:00+01:00"), [], ""),
    "array": ("[]", ["parseable_json"], "payload is a JSON array, not an object"),
    "number": ("42", ["parseable_json"], "payload is a JSON number"),
    "null": ("null", ["parseable_json"], "payload is JSON null"),
    "truncated": ("{", ["parseable_json"], "payload is not valid JSON"),
    "trailing garbage": ('{"eventId":"x"} x', ["parseable_json"], "not valid JSON"),
    "trailing bracket": ('{"eventId":"x"}] [5', ["parseable_json"], "content after the JSON"),
    "duplicate keys": ('{"eventId":"a","eventId":"b"}', ["parseable_json"], "not valid JSON"),
    "unknown type": (
        changed(deleted_event("e-unknown"), "eventType", "FileRenamedEvent"),
        ["known_event_type"],
        "known_event_type: eventType 'FileRenamedEvent' is not FileDeletedEvent, "
        "FilePlacedInTrashEvent",
    ),
    "no userId": (
        changed(deleted_event("e-no-user"), "data.userId", MISSING),
        ["required_fields_present"],
        "required_fields_present: missing or null: data.userId",
    ),
    "null mimeType": (
        changed(deleted_event("e-null-mime"), "data.mimeType", None),
        ["required_fields_present"],
        "missing or null: data.mimeType",
    ),
    "no data": (
        changed(deleted_event("e-no-data"), "data", MISSING),
        ["required_fields_present"],
        "missing or null: data",
    ),
    "no trashId": (
        changed(trashed_event("t-no-trash"), "data.trashId", MISSING),
        ["required_fields_present"],
        "missing or null: data.trashId",
    ),
    "fileSize as text": (
        deleted_event("e-size-text", fileSize="123"),
        ["field_types_valid"],
        "field_types_valid: wrong type: data.fileSize (expected an integer)",
    ),
    "fractional fileSize": (deleted_event("e-size-frac", fileSize=1.5), ["field_types_valid"], ""),
    "fileSize beyond 64 bits": (
        deleted_event("e-size-huge", fileSize=1 << 64),
        ["field_types_valid"],
        "data.fileSize (expected an integer)",
    ),
    "eventId as number": (
        changed(deleted_event("e-x"), "eventId", 42),
        ["field_types_valid"],
        "wrong type: eventId (expected a string)",
    ),
    "date-only deletedAt": (
        deleted_event("e-date", deletedAt="2026-11-21"),
        ["field_types_valid"],
        "data.deletedAt (expected an ISO-8601 timestamp string)",
    ),
    "data not an object": (
        changed(deleted_event("e-data-text"), "data", "oops"),
        ["field_types_valid"],
        "wrong type: data (expected an object)",
    ),
    "bad trashed expiresAt": (
        trashed_event("t-bad-expiry", expiresAt="next month"),
        ["field_types_valid"],
        "data.expiresAt (expected an ISO-8601 timestamp string)",
    ),
    "negative fileSize": (
        deleted_event("e-negative", fileSize=-1),
        ["file_size_in_range"],
        f"file_size_in_range: fileSize -1 is outside [0, {MAX_FILE_SIZE}]",
    ),
    "over 1 TiB": (deleted_event("e-big", fileSize=MAX_FILE_SIZE + 1), ["file_size_in_range"], ""),
    "upper-case mimeType": (
        deleted_event("e-mime", mimeType="Application/PDF"),
        ["mime_type_well_formed"],
        "mime_type_well_formed: mimeType 'Application/PDF' does not match",
    ),
    "mimeType without subtype": (
        deleted_event("e-mime2", mimeType="application/"),
        ["mime_type_well_formed"],
        "",
    ),
    "deletedAt in the future": (
        deleted_event("e-future", deletedAt=LATE),
        ["deleted_at_not_in_future"],
        "deleted_at_not_in_future: deletedAt 2026-11-21T12:05:00.001Z is later than its publish "
        "time + clock skew (2026-11-21T12:05:00.000Z)",
    ),
    "two-digit userId": (
        deleted_event("e-user", userId="user-01"),
        ["user_id_format"],
        "user_id_format: userId 'user-01' does not match ^user-[0-9]{3,}$",
    ),
    "userId with a trailing newline": (
        deleted_event("e-user-nl", userId="user-001\n"),
        ["user_id_format"],
        "userId 'user-001\n' does not match",
    ),
    "mimeType with a trailing newline": (
        deleted_event("e-mime-nl", mimeType="text/plain\n"),
        ["mime_type_well_formed"],
        "",
    ),
    "two rules": (
        deleted_event("e-two", fileSize=-5, userId="bob"),
        ["file_size_in_range", "user_id_format"],
        "file_size_in_range: fileSize -5 is outside [0, 1099511627776]; "
        "user_id_format: userId 'bob' does not match",
    ),
    "missing and mistyped": (
        changed(deleted_event("e-mixed", fileSize="1"), "data.fileName", MISSING),
        ["required_fields_present", "field_types_valid"],
        "required_fields_present: missing or null: data.fileName; "
        "field_types_valid: wrong type: data.fileSize (expected an integer)",
    ),
    "unknown type without eventId": (
        changed(changed(deleted_event(), "eventType", "Other"), "eventId", MISSING),
        ["known_event_type", "required_fields_present"],
        "missing or null: eventId",
    ),
    "eventType not a string": (
        changed(deleted_event("e-type-num"), "eventType", 7),
        ["known_event_type", "field_types_valid"],
        "known_event_type: eventType is not a string",
    ),
    "first copy": (deleted_event("e-dup"), [], ""),
    "second copy": (
        deleted_event("e-dup"),
        ["event_id_unique"],
        "event_id_unique: eventId 'e-dup' was first seen in stream 'FILE_EVENTS' at seq",
    ),
}
NAMES = list(CASES)


@pytest.fixture(scope="module")
def outcomes(spark) -> dict[str, tuple[list[str], str]]:
    """Per case: (failed_rules, error), from one batch of every case (empty error if valid)."""
    frame = bronze(spark, [payload for payload, _, _ in CASES.values()])
    batch = route(frame)
    candidates = [frame.select("seq", "failed_rules") for frame in batch.candidates.values()]
    candidates = candidates[0].unionByName(candidates[1])
    found = {r.seq: (r.failed_rules, r.error) for r in batch.quarantine.collect()}
    valid = {r.seq for r in candidates.where("size(failed_rules) = 0").select("seq").collect()}
    found.update({seq: ([], "") for seq in valid})
    return {name: found.get(seq, (None, None)) for seq, name in enumerate(NAMES, start=1)}


@pytest.mark.parametrize("name", NAMES)
def test_each_case_breaks_exactly_its_rules_and_says_why(outcomes, name):
    _, broken, error = CASES[name]

    failed, message = outcomes[name]

    assert failed == broken
    assert error in message


def test_rules_are_the_contract_rules_in_order():
    assert [rule.name for rule in RULES] == [
        "parseable_json",
        "known_event_type",
        "required_fields_present",
        "field_types_valid",
        "event_id_unique",
        "file_size_in_range",
        "mime_type_well_formed",
        "deleted_at_not_in_future",
        "user_id_format",
    ]
    trashed = [r.name for r in RULES if "FilePlacedInTrashEvent" in r.applies_to]
    assert trashed == [r.name for r in RULES[:5]]
    assert all(r.applies_to and r.description.endswith(".") for r in RULES)


def test_constants_are_the_contract_values():
    assert MAX_FILE_SIZE == 1 << 40
    assert CLOCK_SKEW.total_seconds() == 5 * 60
    assert TRASH_RETENTION.days == 30
    assert MIME_TYPE_PATTERN == r"^[a-z]+/[a-z0-9][a-z0-9.+-]*$"
    assert USER_ID_PATTERN == r"^user-[0-9]{3,}$"


def test_violations_are_keyed_like_the_rules_and_need_an_aware_clock(spark):
    assert list(rules.violations(now=NOW)) == [rule.name for rule in RULES]
    with pytest.raises(ValueError, match="now must be timezone-aware"):
        rules.failed_rules(now=dt.datetime(2026, 11, 21, 12))


def test_a_future_deleted_at_is_judged_against_the_publish_time_however_late_it_is_processed(
    spark,
):
    # Published at NOW with a deletedAt 1 hour later: in the future when it was published,
    # still quarantined when silver processes it a day later, and the same on a re-run.
    frame = bronze(spark, [deleted_event("e-late", deletedAt="2026-11-21T13:00:00.000Z")])
    for now in (NOW, NOW + dt.timedelta(days=1)):
        batch = route(frame, now=now)
        assert batch.file_deleted.count() == 0
        assert [r.failed_rules for r in batch.quarantine.collect()] == [
            ["deleted_at_not_in_future"]
        ]
