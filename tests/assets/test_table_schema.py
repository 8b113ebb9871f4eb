"""The `dagster/column_schema` of a silver table: its columns with the contract's descriptions."""

from dagster import TableColumn, TableSchema

from assets.table_schema import table_schema
from pipelines.contract import read_contract
from pipelines.settings import PROJECT_DIR
from pipelines.silver import silver_schema

FILE_TRASH = read_contract(PROJECT_DIR / "pipelines/file_trash/contract.yaml")


def test_table_schema_gives_dagster_columns_with_descriptions():
    schema = table_schema(silver_schema(FILE_TRASH.event_type("FilePlacedInTrashEvent")))

    assert isinstance(schema, TableSchema)
    assert schema.columns[0] == TableColumn(
        "event_id", "string", description="Unique per event; also the message's Nats-Msg-Id."
    )
    assert schema.columns[1] == TableColumn("event_type", "string", description=None)
    assert [c.name for c in schema.columns][-3:] == ["run_id", "processed_at", "contract_version"]
