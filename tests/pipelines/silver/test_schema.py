"""Silver Delta schemas from a contract: columns, types, comments."""

import datetime as dt

from pipelines.contract import read_contract
from pipelines.ingest.bronze import BRONZE_SCHEMA
from pipelines.settings import PROJECT_DIR
from pipelines.silver import QUARANTINE_SCHEMA, parse_events, route, silver_schema

ORDERS = read_contract(PROJECT_DIR / "tests/pipelines/contract/fixtures/orders.yaml")
FILE_TRASH = read_contract(PROJECT_DIR / "pipelines/file_trash/contract.yaml")
NOW = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.timezone.utc)


def test_orders_tables_have_fields_derived_source_and_run_columns(spark):
    placed = silver_schema(ORDERS.event_type("OrderPlaced"), spark)
    shipped = silver_schema(ORDERS.event_type("OrderShipped"), spark)

    assert placed.simpleString() == (
        "struct<event_id:string,event_type:string,occurred_at:timestamp,order_id:string,"
        "customer_id:string,amount:decimal(12,2),currency:string,amount_cents:bigint,"
        "stream:string,seq:bigint,subject:string,published:timestamp,run_id:string,"
        "processed_at:timestamp,contract_version:string>"
    )
    assert shipped.fieldNames()[:4] == ["event_id", "event_type", "occurred_at", "order_id"]
    assert placed["amount"].metadata == {"comment": "Order total, in currency."}
    assert placed["order_id"].metadata == {}
    assert placed["seq"].metadata["comment"].startswith("Its stream sequence")


def test_file_trash_tables_have_the_silver_schemas_with_comments():
    deleted = silver_schema(FILE_TRASH.event_type("FileDeletedEvent"))  # derived typed: no Spark
    trashed = silver_schema(FILE_TRASH.event_type("FilePlacedInTrashEvent"))

    assert deleted.simpleString() == (
        "struct<event_id:string,event_type:string,event_timestamp:timestamp,file_id:string,"
        "file_name:string,file_path:string,file_size:bigint,mime_type:string,user_id:string,"
        "deleted_at:timestamp,expires_at:timestamp,stream:string,seq:bigint,subject:string,"
        "published:timestamp,run_id:string,processed_at:timestamp,contract_version:string>"
    )
    assert trashed.simpleString() == (
        "struct<event_id:string,event_type:string,event_timestamp:timestamp,trash_id:string,"
        "file_id:string,file_name:string,user_id:string,trashed_at:timestamp,"
        "expires_at:timestamp,original_event_id:string,stream:string,seq:bigint,subject:string,"
        "published:timestamp,run_id:string,processed_at:timestamp,contract_version:string>"
    )
    assert QUARANTINE_SCHEMA.simpleString() == (
        "struct<stream:string,seq:bigint,subject:string,published:timestamp,payload:binary,"
        "event_id:string,event_type:string,failed_rules:array<string>,error:string,"
        "source_table:string,run_id:string,quarantined_at:timestamp,contract_version:string>"
    )
    assert all(f.nullable for f in [*deleted, *trashed, *QUARANTINE_SCHEMA])
    assert deleted["expires_at"].metadata == {
        "comment": "When the file leaves the trash for good (deleted_at + 30 days)."
    }
    assert deleted["file_size"].metadata == {"comment": "Size in bytes (at most 1 TiB)."}


def test_comments_reach_the_delta_table(spark, tmp_path):
    bronze = spark.createDataFrame([], BRONZE_SCHEMA)
    batch = route(parse_events(bronze, ORDERS), ORDERS, run_id="run-1", now=NOW)
    path = str(tmp_path / "orders_placed")

    batch.tables["OrderPlaced"].write.format("delta").save(path)

    described = {
        row.col_name: row.comment for row in spark.sql(f"DESCRIBE TABLE delta.`{path}`").collect()
    }
    assert described["amount"] == "Order total, in currency."
    assert described["published"] == "When the stream stored it (UTC)."
