"""Silver of the file trash contract: bronze rows parsed, routed by eventType, de-duplicated
and split, on a real Spark.

The silver is the generic one (`pipelines.silver`) driven by `pipelines/file_trash/contract.yaml`;
the helpers here (`deleted_event`, `trashed_event`, `changed`, `bronze`, `route`, ...) are
shared by the other file trash silver tests.
"""

import copy
import datetime as dt
import json

import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F

from pipelines.contract import read_contract
from pipelines.contract.fingerprint import contract_version, event_type_version
from pipelines.ingest.bronze import BRONZE_SCHEMA
from pipelines.settings import PROJECT_DIR
from pipelines.silver import QUARANTINE_SCHEMA, QUARANTINED, parse_events, silver_schema
from pipelines.silver import route as route_checked

CONTRACT = read_contract(PROJECT_DIR / "pipelines" / "file_trash" / "contract.yaml")
DELETED = "FileDeletedEvent"
TRASHED = "FilePlacedInTrashEvent"
SILVER_FILE_DELETED_SCHEMA = silver_schema(CONTRACT.event_type(DELETED))
SILVER_FILE_TRASHED_SCHEMA = silver_schema(CONTRACT.event_type(TRASHED))

NOW = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.timezone.utc)
DELETED_AT = dt.datetime(2026, 11, 21, 10, 0, tzinfo=dt.timezone.utc)
PUBLISHED = NOW  # the stream stored each event at the time of processing
STREAM = "FILE_EVENTS"
# The contract_version each table's rows record.
VERSIONS = {e.name: event_type_version(CONTRACT, e) for e in CONTRACT.event_types}
SOURCE = "bronze/file_events"
MISSING = object()


def deleted_event(event_id: str = "e-1", **data: object) -> dict:
    """A valid FileDeletedEvent as a dict; `data` overrides its data fields."""
    fields = {
        "fileId": f"file-{event_id}",
        "fileName": "report.pdf",
        "filePath": "/users/user-001/documents/report.pdf",
        "fileSize": 123456,
        "mimeType": "application/pdf",
        "userId": "user-001",
        "deletedAt": "2026-11-21T10:00:00.000Z",
    }
    return {
        "eventId": event_id,
        "eventType": "FileDeletedEvent",
        "timestamp": "2026-11-21T10:00:00.000Z",
        "data": {**fields, **data},
    }


def trashed_event(event_id: str = "t-1", **data: object) -> dict:
    """A valid FilePlacedInTrashEvent as a dict; `data` overrides its data fields."""
    fields = {
        "trashId": f"trash-{event_id}",
        "fileId": "file-e-1",
        "fileName": "report.pdf",
        "userId": "user-001",
        "trashedAt": "2026-11-21T10:00:05.000Z",
        "expiresAt": "2026-12-21T10:00:00.000Z",
        "originalEventId": "e-1",
    }
    return {
        "eventId": event_id,
        "eventType": "FilePlacedInTrashEvent",
        "timestamp": "2026-11-21T10:00:05.000Z",
        "data": {**fields, **data},
    }


def changed(event: dict, path: str, value: object) -> dict:
    """`event` with the field at `path` ("data.fileSize") set to `value`, or removed (MISSING)."""
    event = copy.deepcopy(event)
    *parents, name = path.split(".")
    target = event
    for parent in parents:
        target = target[parent]
    if value is MISSING:
        del target[name]
    else:
        target[name] = value
    return event


def encoded(payload: dict | bytes | str) -> bytes:
    """The bytes published: dicts as compact JSON, text as UTF-8, bytes as they are."""
    if isinstance(payload, dict):
        return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
    return payload.encode() if isinstance(payload, str) else payload


def bronze(spark, payloads, *, seqs=None, stream=STREAM, subject="files.deleted"):
    """Bronze rows (BRONZE_SCHEMA) of `payloads`, at `seqs` (1, 2, ... by default)."""
    seqs = list(seqs) if seqs is not None else list(range(1, len(payloads) + 1))
    rows = [
        (stream, seq, subject, PUBLISHED, PUBLISHED.date(), None, encoded(p), None, "ingest", NOW)
        for seq, p in zip(seqs, payloads, strict=True)
    ]
    return spark.createDataFrame(rows, BRONZE_SCHEMA)


def route(frame, *, existing=None, now=NOW, run_id="run-1"):
    """The generated silver of the file trash contract over bronze rows (a `SilverBatch`)."""
    checked = parse_events(frame, CONTRACT)
    return route_checked(checked, CONTRACT, existing, run_id=run_id, now=now, source_table=SOURCE)


def shape(schema) -> list[tuple[str, str]]:
    """Names and types in order (a frame may be stricter than its schema about nulls)."""
    return [(f.name, f.dataType.simpleString()) for f in schema.fields]


def keys(frame) -> list[int]:
    return sorted(row.seq for row in frame.select("seq").collect())


def quarantined(batch) -> dict[int, list[str]]:
    return {r.seq: r.failed_rules for r in batch.quarantine.select("seq", "failed_rules").collect()}


def existing_keys(batch):
    """(event_type, event_id, stream, seq) of a batch's outputs, as the lead reads them back."""
    columns = ("event_type", "event_id", "stream", "seq")
    return (
        batch.tables[DELETED]
        .select(*columns)
        .unionByName(batch.tables[TRASHED].select(*columns))
        .unionByName(batch.quarantine.where(F.col("event_id").isNotNull()).select(*columns))
    )


def outputs(batch) -> dict:
    """The three outputs of a batch, by name."""
    return {
        DELETED: batch.tables[DELETED],
        TRASHED: batch.tables[TRASHED],
        "quarantine": batch.quarantine,
    }


def test_a_valid_file_deleted_event_becomes_one_typed_silver_row(spark):
    batch = route(bronze(spark, [deleted_event("e-1")]))

    expected = spark.createDataFrame(
        [
            (
                "e-1", "FileDeletedEvent", DELETED_AT, "file-e-1", "report.pdf",
                "/users/user-001/documents/report.pdf", 123456, "application/pdf", "user-001",
                DELETED_AT, DELETED_AT + dt.timedelta(days=30),
                STREAM, 1, "files.deleted", PUBLISHED, "run-1", NOW, VERSIONS[DELETED],
            )
        ],
        SILVER_FILE_DELETED_SCHEMA,
    )  # fmt: skip
    assert_df_equality(batch.tables[DELETED], expected, ignore_nullable=True)
    assert batch.tables[TRASHED].count() == 0
    assert batch.quarantine.count() == 0


def test_a_valid_trashed_event_keeps_its_own_expires_at(spark):
    batch = route(bronze(spark, [trashed_event("t-1")], subject="files.trashed"))

    expected = spark.createDataFrame(
        [
            (
                "t-1", "FilePlacedInTrashEvent", DELETED_AT + dt.timedelta(seconds=5),
                "trash-t-1", "file-e-1", "report.pdf", "user-001",
                DELETED_AT + dt.timedelta(seconds=5),
                dt.datetime(2026, 12, 21, 10, tzinfo=dt.timezone.utc),
                "e-1", STREAM, 1, "files.trashed", PUBLISHED, "run-1", NOW, VERSIONS[TRASHED],
            )
        ],
        SILVER_FILE_TRASHED_SCHEMA,
    )  # fmt: skip
    assert_df_equality(batch.tables[TRASHED], expected, ignore_nullable=True)
    assert batch.tables[DELETED].count() == 0


def test_expires_at_is_deleted_at_plus_30_days_to_the_microsecond(spark):
    # 2026-10-25 is a daylight-saving change in Europe: 30 days are 720 hours all the same.
    frame = bronze(
        spark,
        [
            deleted_event("e-1", deletedAt="2026-11-21T10:00:00.123456Z"),
            deleted_event("e-2", deletedAt="2026-10-10T23:30:00.000001+02:00"),
        ],
    )

    rows = route(frame).tables[DELETED].orderBy("seq").collect()

    assert [r.expires_at - r.deleted_at for r in rows] == [dt.timedelta(days=30)] * 2
    assert [r.deleted_at.microsecond for r in rows] == [123456, 1]


def test_routing_follows_event_type_not_subject(spark):
    frame = bronze(spark, [deleted_event("e-1"), trashed_event("t-1")], subject="files.other")

    batch = route(frame)

    assert keys(batch.tables[DELETED]) == [1]
    assert keys(batch.tables[TRASHED]) == [2]


# Valid rows of both types, a duplicate, broken rules and unparseable payloads, mixed.
MIXED_PAYLOADS = [
    deleted_event("e-1"),
    trashed_event("t-1"),
    deleted_event("e-1"),  # a duplicate
    changed(deleted_event("e-2"), "data.fileSize", -1),
    changed(deleted_event("e-3"), "eventType", "FileRenamedEvent"),
    b"{",
    b"[]",
    "null",
    changed(trashed_event("t-2"), "data.trashId", MISSING),
    deleted_event("e-4", fileName="résumé ✓.pdf"),
]


def test_every_bronze_row_lands_in_exactly_one_output(spark):
    batch = route(bronze(spark, MIXED_PAYLOADS))

    outputs = [keys(batch.tables[DELETED]), keys(batch.tables[TRASHED]), keys(batch.quarantine)]
    assert sorted(seq for seqs in outputs for seq in seqs) == list(range(1, 11))
    assert outputs == [[1, 10], [2], [3, 4, 5, 6, 7, 8, 9]]


def test_non_object_payloads_are_quarantined_with_their_bytes_kept(spark):
    payloads = [b"[]", b"42", b"null", b"{", b"", b'"text"', b"\xff\xfe{}", b'{"eventId":"x"}x']

    rows = route(bronze(spark, payloads)).quarantine.orderBy("seq").collect()

    assert [bytes(r.payload) for r in rows] == payloads
    assert {tuple(r.failed_rules) for r in rows} == {("parseable_json",)}
    assert [(r.event_id, r.event_type) for r in rows] == [(None, None)] * len(payloads)
    assert [r.error for r in rows] == [
        "parseable_json: payload is a JSON array, not an object",
        "parseable_json: payload is a JSON number, not an object",
        "parseable_json: payload is JSON null, not an object",
        "parseable_json: payload is not valid JSON",
        "parseable_json: payload is empty",
        "parseable_json: payload is a JSON string, not an object",
        "parseable_json: payload is not valid UTF-8",
        "parseable_json: payload is not valid JSON",
    ]


def test_quarantine_rows_carry_the_source_row_run_and_time(spark):
    event = changed(deleted_event("e-9"), "data.userId", "bob")
    frame = bronze(spark, [event], seqs=[42])

    batch = route(frame)

    expected = spark.createDataFrame(
        [
            (
                STREAM, 42, "files.deleted", PUBLISHED, encoded(event),
                "e-9", "FileDeletedEvent", ["user_id_format"],
                "user_id_format: data.userId 'bob' does not match ^user-[0-9]{3,}$",
                SOURCE, "run-1", NOW, contract_version(CONTRACT),
            )
        ],
        QUARANTINE_SCHEMA,
    )  # fmt: skip
    assert_df_equality(batch.quarantine, expected, ignore_nullable=True)


def test_unicode_text_survives_parsing_unchanged(spark):
    name = "Ünïcödé 日本語 ✓ 🗑️.pdf"
    escaped = json.dumps(deleted_event("e-2", fileName=name)).encode()  # \\uXXXX escapes
    frame = bronze(spark, [deleted_event("e-1", fileName=name), escaped])

    names = [r.file_name for r in route(frame).tables[DELETED].orderBy("seq").collect()]

    assert names == [name, name]


def test_a_duplicate_within_the_batch_is_quarantined_and_the_lowest_seq_kept(spark):
    frame = bronze(
        spark, [deleted_event("e-1"), deleted_event("e-1"), deleted_event("e-1")], seqs=[7, 3, 5]
    )

    batch = route(frame)

    assert keys(batch.tables[DELETED]) == [3]
    assert quarantined(batch) == {5: ["event_id_unique"], 7: ["event_id_unique"]}
    errors = [r.error for r in batch.quarantine.orderBy("seq").collect()]
    assert errors[0] == (
        "event_id_unique: eventId 'e-1' was first seen in stream 'FILE_EVENTS' at seq 3; "
        "this later copy is not kept"
    )


def test_a_duplicate_of_a_row_already_in_silver_is_quarantined(spark):
    existing = spark.createDataFrame(
        [("FileDeletedEvent", "e-1", STREAM, 2)],
        "event_type string, event_id string, stream string, seq long",
    )
    frame = bronze(spark, [deleted_event("e-1"), deleted_event("e-2")], seqs=[10, 11])

    batch = route(frame, existing=existing)

    assert keys(batch.tables[DELETED]) == [11]
    assert quarantined(batch) == {10: ["event_id_unique"]}


def test_reprocessing_rows_already_in_existing_gives_the_same_rows(spark):
    frame = bronze(spark, [deleted_event("e-1"), deleted_event("e-1"), b"[]", trashed_event("t-1")])
    first = route(frame)

    again = route(frame, existing=existing_keys(first))

    for name, rows in outputs(again).items():
        assert_df_equality(rows, outputs(first)[name], ignore_row_order=True, ignore_nullable=True)


def test_an_invalid_first_occurrence_still_makes_later_copies_duplicates(spark):
    frame = bronze(spark, [deleted_event("e-1", userId="bob"), deleted_event("e-1")])

    batch = route(frame)

    assert batch.tables[DELETED].count() == 0
    assert quarantined(batch) == {1: ["user_id_format"], 2: ["event_id_unique"]}


def test_a_range_processed_in_two_batches_gives_the_same_rows_as_in_one(spark):
    payloads = [deleted_event("e-1", fileSize=-5), deleted_event("e-2"), deleted_event("e-1")]
    payloads += [deleted_event("e-2"), trashed_event("t-1"), b"{"]
    whole = route(bronze(spark, payloads))

    first = route(bronze(spark, payloads[:3]))
    second = route(bronze(spark, payloads[3:], seqs=[4, 5, 6]), existing=existing_keys(first))

    for name, rows in outputs(whole).items():
        split = outputs(first)[name].unionByName(outputs(second)[name])
        assert_df_equality(split, rows, ignore_row_order=True, ignore_nullable=True)
    assert quarantined(whole) == {
        1: ["file_size_in_range"],
        3: ["event_id_unique"],
        4: ["event_id_unique"],
        6: ["parseable_json"],
    }


def test_the_same_event_id_in_two_event_types_is_not_a_duplicate(spark):
    frame = bronze(spark, [deleted_event("same"), trashed_event("same")])

    batch = route(frame)

    assert (keys(batch.tables[DELETED]), keys(batch.tables[TRASHED])) == ([1], [2])


def test_duplicates_are_judged_by_seq_then_stream_across_streams(spark):
    frame = bronze(spark, [deleted_event("e-1")], seqs=[5], stream="B").unionByName(
        bronze(spark, [deleted_event("e-1"), deleted_event("e-1")], seqs=[5, 9], stream="A")
    )

    batch = route(frame)

    assert [(r.stream, r.seq) for r in batch.tables[DELETED].collect()] == [("A", 5)]
    assert batch.quarantine.count() == 2


def test_candidates_hold_every_row_of_their_type_before_the_split(spark):
    payloads = [deleted_event("e-1"), deleted_event("e-2", mimeType="PDF"), trashed_event("t-1")]
    payloads += [changed(deleted_event("e-3"), "data.fileSize", "12"), b"[]"]
    batch = route(bronze(spark, payloads))

    deleted = batch.candidates[DELETED]
    rows = {r.seq: (r.file_size, r.failed_rules, r[QUARANTINED]) for r in deleted.collect()}
    assert rows == {
        1: (123456, [], False),
        2: (123456, ["mime_type_well_formed"], True),
        4: (None, ["field_types_valid"], True),
    }
    extra = ["failed_rules", QUARANTINED]
    assert sorted(deleted.columns) == sorted([*SILVER_FILE_DELETED_SCHEMA.fieldNames(), *extra])
    trashed = batch.candidates[TRASHED]
    assert sorted(trashed.columns) == sorted([*SILVER_FILE_TRASHED_SCHEMA.fieldNames(), *extra])
    assert keys(trashed) == [3]


def test_outputs_have_the_contract_schemas_even_when_empty(spark):
    batch = route(spark.createDataFrame([], BRONZE_SCHEMA))

    assert shape(batch.tables[DELETED].schema) == shape(SILVER_FILE_DELETED_SCHEMA)
    assert shape(batch.tables[TRASHED].schema) == shape(SILVER_FILE_TRASHED_SCHEMA)
    assert shape(batch.quarantine.schema) == shape(QUARANTINE_SCHEMA)
    assert batch.tables[DELETED].count() + batch.quarantine.count() == 0


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"now": dt.datetime(2026, 11, 21, 12)}, "now must be timezone-aware"),
        ({"run_id": ""}, "run_id must be a non-empty string"),
    ],
)
def test_bad_arguments_are_refused_before_any_work(spark, arguments, message):
    with pytest.raises(ValueError, match=message):
        route(spark.createDataFrame([], BRONZE_SCHEMA), **arguments)
