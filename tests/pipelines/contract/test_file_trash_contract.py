"""pipelines/file_trash/contract.yaml, pinned: the event types, their tables, columns and types,
required fields, rules and severities that the file trash silver is generated from, and the
AsyncAPI document generated from the code gives the same fields."""

import datetime as dt

import pytest

from pipelines.cli.asyncapi import DOCUMENT
from pipelines.contract import (
    Envelope,
    NotInFuture,
    Pattern,
    Range,
    Severity,
    UnknownFields,
    read_asyncapi,
    read_contract,
)
from pipelines.settings import PROJECT_DIR

CONTRACT = PROJECT_DIR / "pipelines" / "file_trash" / "contract.yaml"
DELETED, TRASHED = "FileDeletedEvent", "FilePlacedInTrashEvent"
BOTH = (DELETED, TRASHED)
ENVELOPE_FIELDS = [
    ("eventId", "event_id", "string"),
    ("eventType", "event_type", "string"),
    ("timestamp", "event_timestamp", "timestamp(iso8601)"),
]
# Event type -> (table, subjects, [(JSON path, column, contract type)] after the envelope's).
EVENT_TYPES = {
    DELETED: (
        "silver/file_deleted",
        ("files.deleted",),
        [
            ("data.fileId", "file_id", "string"),
            ("data.fileName", "file_name", "string"),
            ("data.filePath", "file_path", "string"),
            ("data.fileSize", "file_size", "long"),
            ("data.mimeType", "mime_type", "string"),
            ("data.userId", "user_id", "string"),
            ("data.deletedAt", "deleted_at", "timestamp(iso8601)"),
        ],
    ),
    TRASHED: (
        "silver/file_trashed",
        ("files.trashed",),
        [
            ("data.trashId", "trash_id", "string"),
            ("data.fileId", "file_id", "string"),
            ("data.fileName", "file_name", "string"),
            ("data.userId", "user_id", "string"),
            ("data.trashedAt", "trashed_at", "timestamp(iso8601)"),
            ("data.expiresAt", "expires_at", "timestamp(iso8601)"),
            ("data.originalEventId", "original_event_id", "string"),
        ],
    ),
}
# The silver columns and their Spark types, derived columns included.
COLUMNS = {
    DELETED: (
        "event_id:string,event_type:string,event_timestamp:timestamp,file_id:string,"
        "file_name:string,file_path:string,file_size:bigint,mime_type:string,user_id:string,"
        "deleted_at:timestamp,expires_at:timestamp"
    ),
    TRASHED: (
        "event_id:string,event_type:string,event_timestamp:timestamp,trash_id:string,"
        "file_id:string,file_name:string,user_id:string,trashed_at:timestamp,"
        "expires_at:timestamp,original_event_id:string"
    ),
}
Q, BLOCK = Severity.QUARANTINE, Severity.QUARANTINE_BLOCK
# In silver's order: name -> (event types, severity, column, constraint).
RULES = {
    "parseable_json": (BOTH, Q, None, None),
    "known_event_type": (BOTH, Q, None, None),
    "required_fields_present": (BOTH, BLOCK, None, None),
    "field_types_valid": (BOTH, Q, None, None),
    "event_id_unique": (BOTH, BLOCK, None, None),
    "file_size_in_range": (
        (DELETED,),
        BLOCK,
        "file_size",
        Range(severity=BLOCK, minimum=0, maximum=1 << 40),
    ),
    "mime_type_well_formed": (
        (DELETED,),
        Q,
        "mime_type",
        Pattern(rule="mime_type_well_formed", regex=r"^[a-z]+/[a-z0-9][a-z0-9.+-]*$"),
    ),
    "user_id_format": (
        (DELETED,),
        Q,
        "user_id",
        Pattern(rule="user_id_format", regex=r"^user-[0-9]{3,}$"),
    ),
    "deleted_at_not_in_future": (
        (DELETED,),
        Q,
        "deleted_at",
        NotInFuture(skew=dt.timedelta(minutes=5)),
    ),
}


@pytest.fixture(scope="module")
def contract():
    return read_contract(CONTRACT)


def test_the_envelope_tells_types_apart_by_event_type(contract):
    assert contract.envelope == Envelope("eventType", "eventId", "timestamp")
    assert [e.name for e in contract.event_types] == list(EVENT_TYPES)


@pytest.mark.parametrize("event_type", list(EVENT_TYPES))
def test_each_event_type_has_its_table_subjects_and_fields_every_one_required(contract, event_type):
    table, subjects, fields = EVENT_TYPES[event_type]
    event = contract.event_type(event_type)

    assert (event.table, event.subjects) == (table, subjects)
    assert [(f.path, f.column, str(f.type)) for f in event.fields] == ENVELOPE_FIELDS + fields
    assert all(f.required for f in event.fields)  # required_fields_present: every field
    assert event.unknown_fields is UnknownFields.IGNORE


@pytest.mark.parametrize("event_type", list(EVENT_TYPES))
def test_each_event_type_has_its_silver_columns_and_types(contract, event_type):
    event = contract.event_type(event_type)

    columns = ",".join(f"{name}:{kind.spark_sql}" for name, kind in event.columns)
    assert columns == COLUMNS[event_type]


def test_expires_at_of_a_deleted_file_is_deleted_at_plus_30_days(contract):
    (derived,) = contract.event_type(DELETED).derived

    assert (derived.name, derived.expression, derived.type.spark_sql) == (
        "expires_at",
        "deleted_at + INTERVAL 30 DAYS",
        "timestamp",
    )
    assert contract.event_type(TRASHED).derived == ()  # the event carries its own expiresAt


def test_the_rules_their_event_types_severities_and_constraints(contract):
    found = {r.name: (r.applies_to, r.severity, r.column, r.constraint) for r in contract.rules}

    assert list(found) == list(RULES)
    assert found == RULES
    assert all(r.description.endswith(".") for r in contract.rules)


def test_every_rule_quarantines_and_exactly_three_block(contract):
    assert all(r.severity.quarantines for r in contract.rules)
    assert [r.name for r in contract.rules if r.severity.blocks] == [
        "required_fields_present",
        "event_id_unique",
        "file_size_in_range",
    ]


def test_the_generated_asyncapi_document_gives_the_same_fields_as_contract_yaml(contract):
    from_asyncapi = read_asyncapi(
        DOCUMENT,
        stream="FILE_EVENTS",
        envelope=contract.envelope,
        tables={e.name: e.table for e in contract.event_types},
    )

    def fields(c, name, headers=False):
        event = c.event_type(name)
        return sorted(
            (f.path, f.column, str(f.type), f.required)
            for f in event.fields
            if f.path.startswith("header:") is headers
        )

    assert [e.name for e in from_asyncapi.event_types] == list(EVENT_TYPES)
    for name in EVENT_TYPES:
        assert fields(from_asyncapi, name) == fields(contract, name)
        # The document's message headers say more: every message carries a Nats-Msg-Id.
        assert fields(from_asyncapi, name, headers=True) == [
            ("header:Nats-Msg-Id", "nats_msg_id", "string", True)
        ]
        assert from_asyncapi.event_type(name).subjects == contract.event_type(name).subjects
    yaml_rules = {r.name: (r.applies_to, r.constraint) for r in contract.rules}
    asyncapi_rules = {r.name: (r.applies_to, r.constraint) for r in from_asyncapi.rules}
    assert {k: v for k, v in asyncapi_rules.items() if k in yaml_rules} == yaml_rules
    # What the JSON Schemas say beyond the contract: uuid formats, the trash event's userId.
    assert sorted(set(asyncapi_rules) - set(yaml_rules)) == [
        "event_id_is_uuid",
        "file_id_is_uuid",
        "original_event_id_is_uuid",
        "trash_id_is_uuid",
        "user_id_matches_pattern",
    ]
