"""pipelines/file_trash/contract.yaml declares exactly today's silver, and the AsyncAPI document
generated from the code has the same fields."""

import datetime as dt

import pytest
from pyspark.sql.types import StructType

from pipelines.asyncapi import DOCUMENT
from pipelines.contract import RESERVED_COLUMNS, Envelope, NotInFuture, read_asyncapi, read_contract
from pipelines.file_trash import expectations, rules, silver
from pipelines.settings import PROJECT_DIR

CONTRACT = PROJECT_DIR / "pipelines" / "file_trash" / "contract.yaml"
NOW = dt.datetime(2026, 11, 24, tzinfo=dt.UTC)  # the suites' check names do not depend on it
SILVER = {
    "FileDeletedEvent": ("silver/file_deleted", silver.SILVER_FILE_DELETED_SCHEMA),
    "FilePlacedInTrashEvent": ("silver/file_trashed", silver.SILVER_FILE_TRASHED_SCHEMA),
}


@pytest.fixture(scope="module")
def contract():
    return read_contract(CONTRACT)


def json_columns(schema: StructType, prefix: str = "") -> dict[str, str]:
    """JSON path -> silver column, from silver.py's event schemas (metadata["column"])."""
    columns = {}
    for f in schema.fields:
        if isinstance(f.dataType, StructType):
            columns.update(json_columns(f.dataType, f"{prefix}{f.name}."))
        else:
            columns[prefix + f.name] = f.metadata["column"]
    return columns


@pytest.mark.parametrize("event_type", list(SILVER))
def test_each_event_type_has_the_silver_columns_and_types_of_silver_py(contract, event_type):
    table, schema = SILVER[event_type]
    event = contract.event_type(event_type)
    expected = [
        (f.name, f.dataType.simpleString()) for f in schema if f.name not in RESERVED_COLUMNS
    ]

    assert event.table == table
    assert [(name, kind.spark_sql) for name, kind in event.columns] == expected


@pytest.mark.parametrize("event_type", list(SILVER))
def test_each_field_reads_the_json_path_silver_py_reads(contract, event_type):
    event = contract.event_type(event_type)

    assert {f.path: f.column for f in event.fields} == json_columns(
        silver.EVENT_SCHEMAS[event_type]
    )
    assert all(f.required for f in event.fields)  # required_fields_present: every field


def test_the_rules_are_rules_py_rules_with_the_same_event_types(contract):
    assert {r.name: set(r.applies_to) for r in contract.rules} == {
        r.name: set(r.applies_to) for r in rules.RULES
    }
    assert {r.severity for r in contract.rules} <= {"quarantine", "quarantine+block"}


def test_the_blocking_rules_are_the_critical_checks_of_expectations_py(contract):
    suites = (expectations.file_deleted_suite(now=NOW), expectations.file_trashed_suite())
    critical = {check.rule for suite in suites for check in suite.checks if check.critical}
    checked = {check.rule for suite in suites for check in suite.checks}

    blocking = {r.name for r in contract.rules if r.severity.blocks}
    assert blocking & checked == critical


def test_the_constraints_carry_rules_py_bounds_patterns_skew_and_retention(contract):
    by_name = {r.name: r.constraint for r in contract.rules}
    deleted = contract.event_type(rules.FILE_DELETED_EVENT)

    assert (by_name["file_size_in_range"].minimum, by_name["file_size_in_range"].maximum) == (
        0,
        rules.MAX_FILE_SIZE,
    )
    assert by_name["mime_type_well_formed"].regex == rules.MIME_TYPE_PATTERN
    assert by_name["user_id_format"].regex == rules.USER_ID_PATTERN
    assert by_name["deleted_at_not_in_future"] == NotInFuture(skew=rules.CLOCK_SKEW)
    assert dt.timedelta(days=30) == rules.TRASH_RETENTION
    assert [(d.name, d.expression) for d in deleted.derived] == [
        ("expires_at", "deleted_at + INTERVAL 30 DAYS")
    ]
    assert contract.envelope == Envelope("eventType", "eventId", "timestamp")
    assert [e.subjects for e in contract.event_types] == [("files.deleted",), ("files.trashed",)]


def test_the_generated_asyncapi_document_gives_the_same_fields_as_contract_yaml(contract):
    from_asyncapi = read_asyncapi(
        DOCUMENT,
        stream="FILE_EVENTS",
        envelope=contract.envelope,
        tables={e.name: e.table for e in contract.event_types},
    )

    def fields(c, name):
        event = c.event_type(name)
        return sorted((f.path, f.column, str(f.type), f.required) for f in event.fields)

    assert [e.name for e in from_asyncapi.event_types] == list(SILVER)
    for name in SILVER:
        assert fields(from_asyncapi, name) == fields(contract, name)
        assert from_asyncapi.event_type(name).subjects == contract.event_type(name).subjects
    yaml_rules = {r.name: (r.applies_to, r.constraint) for r in contract.rules}
    asyncapi_rules = {r.name: (r.applies_to, r.constraint) for r in from_asyncapi.rules}
    assert {k: v for k, v in asyncapi_rules.items() if k in yaml_rules} == yaml_rules
    # What the JSON Schemas say beyond today's silver: uuid formats, the trash event's userId.
    assert sorted(set(asyncapi_rules) - set(yaml_rules)) == [
        "event_id_is_uuid",
        "file_id_is_uuid",
        "original_event_id_is_uuid",
        "trash_id_is_uuid",
        "user_id_matches_pattern",
    ]
