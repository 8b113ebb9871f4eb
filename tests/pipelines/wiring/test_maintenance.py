"""Delta maintenance (OPTIMIZE, VACUUM) and the schedules, on real Delta tables (in a local
folder, and in a real S3 server)."""

from __future__ import annotations

import datetime as dt
import threading

from dagster import build_schedule_context
from dagster.components.core.component_tree import ComponentTree

from pipelines.components import JetStreamStream
from pipelines.definitions import defs, maintain_delta_tables
from pipelines.ingest.lease import acquire_lease, lease_key
from pipelines.lakehouse.delta_tables import table_version
from pipelines.settings import PROJECT_DIR
from pipelines.silver.writer import acquire as acquire_writer
from pipelines.silver.writer import writer_key
from pipelines.wiring.maintenance import build_maintenance_job
from pipelines.wiring.schedules import daily_gold_schedule, delta_maintenance_schedule
from resources.jetstream import KeyValueSpec
from resources.lakehouse import LakehouseResource, declared_tables, declared_writer_leases
from resources.spark import SparkResource


def data_files(spark, path: str) -> int:
    return spark.read.format("delta").load(path).inputFiles().__len__()


def test_maintenance_compacts_small_files_and_keeps_every_row(spark, any_root, jetstream_resource):
    path = f"{any_root}/silver/file_deleted"
    for start in range(0, 50, 10):  # five appends: five small files
        spark.range(start, start + 10).write.format("delta").mode("append").save(path)
    assert data_files(spark, path) >= 5

    result = maintain_delta_tables.execute_in_process(
        run_config={
            "ops": {
                "maintain_tables": {
                    "config": {"tables": ["silver/file_deleted", "gold/not_there_yet"]}
                }
            }
        },
        resources={
            "spark": SparkResource(),
            "lakehouse": LakehouseResource(root=str(any_root)),
            "jetstream": jetstream_resource,  # no table here has a lease: never connected
        },
    )

    assert result.success
    assert data_files(spark, path) == 1
    assert sorted(r.id for r in spark.read.format("delta").load(path).collect()) == list(range(50))
    # The op reports Delta's numbers per table as output metadata.
    reported = {
        key: value.value
        for event in result.all_node_events
        if event.event_type_value == "STEP_OUTPUT"
        for key, value in event.event_specific_data.metadata.items()
    }
    assert reported["silver/file_deleted/files_removed"] >= 5
    assert reported["silver/file_deleted/files_added"] == 1
    assert reported["silver/file_deleted/delta_version"] == table_version(spark, path)
    assert not any(key.startswith("gold/not_there_yet") for key in reported)


def test_the_schedules_request_gold_daily_and_maintenance_nightly():
    now = dt.datetime(2026, 11, 21, 0, 15, tzinfo=dt.timezone.utc)
    gold = daily_gold_schedule.evaluate_tick(build_schedule_context(scheduled_execution_time=now))
    assert len(gold.run_requests) == 1
    assert daily_gold_schedule.job_name == "daily_gold"
    assert delta_maintenance_schedule.job_name == "maintain_delta_tables"
    assert (daily_gold_schedule.cron_schedule, delta_maintenance_schedule.cron_schedule) == (
        "15 0 * * *",
        "30 3 * * *",
    )


def test_maintenance_takes_every_table_an_asset_declares_by_default(
    spark, table_root, jetstream_resource
):
    """A declared stream's tables are maintained with no list to edit: the job's default
    config is every table of the code location's assets (`lakehouse/table` metadata)."""
    declared = JetStreamStream.model_validate(
        {
            "stream": {"name": "ORDERS", "subjects": ["orders.>"]},
            "ingests": [{"name": "orders", "durable": "orders-bronze", "table": "bronze/orders"}],
            "contract_file": str(PROJECT_DIR / "tests/pipelines/contract/fixtures/orders.yaml"),
        }
    )
    orders = declared.build_defs(ComponentTree.for_test().load_context)
    tables = declared_tables([*defs.assets, *orders.assets])
    assert set(tables) == {
        "bronze/file_events",
        "audit/audit_log",
        "bronze/trash_notifications",
        "silver/file_deleted",
        "silver/file_trashed",
        "silver/quarantine",
        "gold/daily_trash_by_user",
        "gold/daily_trash_by_mime_type",
        "gold/expiring_files",
        "bronze/orders",
        "silver/orders_placed",
        "silver/orders_shipped",
        "quarantine/orders",
    }
    assert declared_tables(defs.assets) == sorted(
        maintain_delta_tables.run_config["ops"]["maintain_tables"]["config"]["tables"]
    )
    path = str(table_root / "silver" / "orders_placed")
    for start in range(0, 30, 10):
        spark.range(start, start + 10).write.format("delta").mode("append").save(path)

    leases = declared_writer_leases([*defs.assets, *orders.assets])
    assert leases["bronze/orders"] == {
        "bucket": "lakehouse-checkpoints",
        "stream": "ORDERS",
        "consumer": "orders-bronze",
    }
    orders_stage = {"bucket": "lakehouse-checkpoints", "stage": "silver.orders"}
    assert leases["silver/orders_placed"] == leases["quarantine/orders"] == orders_stage
    assert not any(table.startswith("gold/") for table in leases)  # gold's runs hold none
    config = maintain_delta_tables.run_config["ops"]["maintain_tables"]["config"]
    assert config["leases"] == declared_writer_leases(defs.assets)

    result = build_maintenance_job(tables).execute_in_process(
        resources={
            "spark": SparkResource(),
            "lakehouse": LakehouseResource(root=str(table_root)),
            "jetstream": jetstream_resource,
        }
    )

    assert result.success
    assert data_files(spark, path) == 1


def test_maintenance_compacts_a_table_under_its_writers_lease_waiting_for_the_holder(
    spark, table_root, js, jetstream_resource, unique_name
):
    """Maintenance is one more writer of a table: it holds the lease the table's other
    writers hold (a silver stage's writer lease, an ingest's lease), so that one Spark driver
    at a time commits to it, which Delta's default LogStore on S3 needs."""
    bucket = js.create_key_value(KeyValueSpec(unique_name))
    silver, bronze = str(table_root / "silver/orders_placed"), str(table_root / "bronze/orders")
    for path in (silver, bronze):
        for start in range(0, 30, 10):
            spark.range(start, start + 10).write.format("delta").mode("append").save(path)
    leases = {
        "silver/orders_placed": {"bucket": unique_name, "stage": "silver.orders"},
        "bronze/orders": {"bucket": unique_name, "stream": "ORDERS", "consumer": "orders-bronze"},
    }
    resources = {
        "spark": SparkResource(),
        "lakehouse": LakehouseResource(root=str(table_root)),
        "jetstream": jetstream_resource,
    }

    def maintain(table: str, lease_wait: float):
        config = {"tables": [table], "leases": leases, "lease_wait": lease_wait}
        return maintain_delta_tables.execute_in_process(
            run_config={"ops": {"maintain_tables": {"config": config}}},
            resources=resources,
            raise_on_error=False,
        )

    stage_run = acquire_writer(bucket, "silver.orders", holder="stage-run", what="silver stage run")
    refused = maintain("silver/orders_placed", lease_wait=0)
    assert not refused.success and data_files(spark, silver) == 3  # nothing written
    error = refused.failure_data_for_node("maintain_tables").error
    assert "run 'stage-run' (silver stage run) writes its tables" in str(error.cause or error)
    threading.Timer(1.0, stage_run.release).start()
    assert maintain("silver/orders_placed", lease_wait=60).success  # waited for it
    assert data_files(spark, silver) == 1
    assert bucket.try_get(writer_key("silver.orders")) is None  # released

    ingest_run = acquire_lease(
        bucket, stream="ORDERS", consumer="orders-bronze", holder="ingest-run", ttl=60
    )
    refused = maintain("bronze/orders", lease_wait=0)
    assert not refused.success and data_files(spark, bronze) == 3
    error = refused.failure_data_for_node("maintain_tables").error
    assert "another run ('ingest-run') is ingesting ORDERS/orders-bronze" in str(
        error.cause or error
    )
    ingest_run.release()
    assert maintain("bronze/orders", lease_wait=0).success
    assert data_files(spark, bronze) == 1
    assert bucket.try_get(lease_key("ORDERS", "orders-bronze")) is None
