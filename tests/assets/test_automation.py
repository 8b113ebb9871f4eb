"""Declarative automation: a sensor-triggered bronze run flows to silver, gold and the
downstream events with no manual step, and a failed critical check stops it before gold.

The conditions are evaluated with Dagster's own evaluator on an ephemeral instance; the
events the assets would emit are reported on the instance instead of running Spark.
"""

from __future__ import annotations

from dagster import (
    AssetCheckEvaluation,
    AssetCheckSeverity,
    AssetKey,
    AssetMaterialization,
    evaluate_automation_conditions,
)

from assets.downstream import file_trashed_events
from assets.gold import GOLD_KEYS
from pipelines.definitions import defs
from pipelines.file_trash import tables

BRONZE = AssetKey(["bronze", "file_events"])
SILVER = {AssetKey(table.split("/")) for table in tables.SILVER_TABLES}
GOLD = set(GOLD_KEYS.values())


def materialized(instance, *keys: AssetKey) -> None:
    for key in keys:
        instance.report_runless_asset_event(AssetMaterialization(asset_key=key))


def checked(instance, *, failing: str | None = None) -> None:
    """Records an evaluation of every silver check; only `failing` fails (a blocking one)."""
    for key in defs.resolve_asset_graph().asset_check_keys:
        instance.report_runless_asset_event(
            AssetCheckEvaluation(
                asset_key=key.asset_key,
                check_name=key.name,
                passed=key.name != failing,
                severity=AssetCheckSeverity.ERROR,
                blocking=True,
            )
        )


def requested(result) -> set[AssetKey]:
    return {key for key in defs.resolve_all_asset_keys() if result.get_num_requested(key)}


def test_new_bronze_rows_request_silver_and_then_gold_and_the_downstream_events(
    dagster_instance,
):
    result = evaluate_automation_conditions(defs=defs, instance=dagster_instance)
    assert not requested(result) & (SILVER | GOLD)  # nothing upstream yet

    materialized(dagster_instance, BRONZE)  # what a sensor-triggered ingest run records
    result = evaluate_automation_conditions(
        defs=defs, instance=dagster_instance, cursor=result.cursor
    )
    assert requested(result) >= SILVER

    materialized(dagster_instance, *SILVER)
    checked(dagster_instance)
    result = evaluate_automation_conditions(
        defs=defs, instance=dagster_instance, cursor=result.cursor
    )
    assert GOLD | {file_trashed_events.key} <= requested(result)


def test_a_failed_critical_check_on_silver_keeps_gold_and_the_events_waiting(dagster_instance):
    materialized(dagster_instance, BRONZE)
    result = evaluate_automation_conditions(defs=defs, instance=dagster_instance)
    materialized(dagster_instance, *SILVER)
    checked(dagster_instance, failing="file_size_in_range")

    result = evaluate_automation_conditions(
        defs=defs, instance=dagster_instance, cursor=result.cursor
    )
    assert not requested(result) & (GOLD | {file_trashed_events.key})

    # Once a later silver run passes its checks, gold follows.
    materialized(dagster_instance, *SILVER)
    checked(dagster_instance)
    result = evaluate_automation_conditions(
        defs=defs, instance=dagster_instance, cursor=result.cursor
    )
    assert requested(result) >= GOLD
