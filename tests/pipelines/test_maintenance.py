"""Delta maintenance (OPTIMIZE, VACUUM) and the schedules, on real Delta tables."""

from __future__ import annotations

import datetime as dt

from dagster import build_schedule_context

from pipelines.delta_tables import table_version
from pipelines.maintenance import maintain_delta_tables
from pipelines.schedules import daily_gold_schedule, delta_maintenance_schedule
from resources.lakehouse import LakehouseResource
from resources.spark import SparkResource


def data_files(spark, path: str) -> int:
    return spark.read.format("delta").load(path).inputFiles().__len__()


def test_maintenance_compacts_small_files_and_keeps_every_row(spark, table_root):
    path = str(table_root / "silver" / "file_deleted")
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
            "lakehouse": LakehouseResource(root=str(table_root)),
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
    now = dt.datetime(2026, 11, 21, 0, 15, tzinfo=dt.UTC)
    gold = daily_gold_schedule.evaluate_tick(build_schedule_context(scheduled_execution_time=now))
    assert len(gold.run_requests) == 1
    assert daily_gold_schedule.job_name == "daily_gold"
    assert delta_maintenance_schedule.job_name == "maintain_delta_tables"
    assert (daily_gold_schedule.cron_schedule, delta_maintenance_schedule.cron_schedule) == (
        "15 0 * * *",
        "30 3 * * *",
    )
