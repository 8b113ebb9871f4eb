"""Delta maintenance (OPTIMIZE, VACUUM) and the schedules, on real Delta tables (in a local
folder, and in a real S3 server)."""

from __future__ import annotations

import datetime as dt

from dagster import build_schedule_context
from dagster.components.core.component_tree import ComponentTree

from pipelines.components import JetStreamStream
from pipelines.definitions import defs, maintain_delta_tables
from pipelines.lakehouse.delta_tables import table_version
from pipelines.settings import PROJECT_DIR
from pipelines.wiring.maintenance import build_maintenance_job
from pipelines.wiring.schedules import daily_gold_schedule, delta_maintenance_schedule
from resources.lakehouse import LakehouseResource, declared_tables
from resources.spark import SparkResource


def data_files(spark, path: str) -> int:
    return spark.read.format("delta").load(path).inputFiles().__len__()


def test_maintenance_compacts_small_files_and_keeps_every_row(spark, any_root):
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


def test_maintenance_takes_every_table_an_asset_declares_by_default(spark, table_root):
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

    result = build_maintenance_job(tables).execute_in_process(
        resources={"spark": SparkResource(), "lakehouse": LakehouseResource(root=str(table_root))}
    )

    assert result.success
    assert data_files(spark, path) == 1
