"""Declarative automation: a sensor-triggered bronze run flows to silver, gold and the
downstream events with no manual step, and a failed critical check stops it before gold.

The conditions are evaluated with Dagster's own evaluator on an ephemeral instance; the
events the assets would emit are reported on the instance instead of running Spark.
"""

from __future__ import annotations

import datetime as dt

from dagster import (
    AssetCheckEvaluation,
    AssetCheckSeverity,
    AssetKey,
    AssetMaterialization,
    evaluate_automation_conditions,
)
from dagster._core.events import DagsterEvent, DagsterEventType, StepMaterializationData
from dagster._core.execution.api import create_execution_plan
from dagster._core.storage.dagster_run import DagsterRunStatus

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
    tick = Ticks(dagster_instance)
    assert not tick() & (SILVER | GOLD)  # nothing upstream yet

    materialized(dagster_instance, BRONZE)  # what a sensor-triggered ingest run records
    assert tick() >= SILVER

    materialized(dagster_instance, *SILVER)
    checked(dagster_instance)
    # Gold went with silver's first request (in the same run, after it); after silver's
    # commit it goes again, in the next minute (at most once a minute).
    assert GOLD | {file_trashed_events.key} <= tick.next_minute()


def test_a_failed_critical_check_on_silver_keeps_gold_and_the_events_waiting(dagster_instance):
    tick = Ticks(dagster_instance)
    materialized(dagster_instance, BRONZE)
    tick()
    materialized(dagster_instance, *SILVER)
    checked(dagster_instance, failing="file_size_in_range")

    # Not the minute's limit: a minute on, gold still waits.
    assert not tick.next_minute() & (GOLD | {file_trashed_events.key})

    # Once a later silver run passes its checks, gold follows.
    materialized(dagster_instance, *SILVER)
    checked(dagster_instance)
    assert tick.next_minute() >= GOLD


def in_progress(instance, *keys: AssetKey):
    """A run of `keys` that has started and not finished (what the daemon's runs look like to
    the automation sensor meanwhile)."""
    job = defs.resolve_implicit_global_asset_job_def().get_subset(asset_selection=set(keys))
    return instance.create_run_for_job(
        job_def=job,
        execution_plan=create_execution_plan(job),
        asset_selection=frozenset(keys),
        status=DagsterRunStatus.STARTED,
    )


def finished(instance, run, *keys: AssetKey) -> None:
    """`run` materialised `keys` and succeeded."""
    materialized(instance, *keys)
    instance.report_dagster_event(
        DagsterEvent(DagsterEventType.RUN_SUCCESS.value, job_name=run.job_name), run.run_id
    )


class Ticks:
    """The automation sensor's evaluations, one after another, on one instance: each a second
    after the last, from the start of this UTC minute, unless `next_minute()` moved on."""

    def __init__(self, instance):
        self.instance, self.cursor = instance, None
        self.now = dt.datetime.now(dt.timezone.utc).replace(second=0, microsecond=0)

    def __call__(self) -> set[AssetKey]:
        self.now += dt.timedelta(seconds=1)
        result = evaluate_automation_conditions(
            defs=defs, instance=self.instance, cursor=self.cursor, evaluation_time=self.now
        )
        self.cursor = result.cursor
        return requested(result)

    def next_minute(self) -> set[AssetKey]:
        """The first evaluation after the next UTC minute started."""
        self.now = self.now.replace(second=0) + dt.timedelta(minutes=1)
        return self()


def materialized_in(instance, run, *keys: AssetKey) -> None:
    """`run` materialised `keys` (as its steps record them, unlike `materialized`)."""
    for key in keys:
        instance.report_dagster_event(
            DagsterEvent(
                DagsterEventType.ASSET_MATERIALIZATION.value,
                job_name=run.job_name,
                event_specific_data=StepMaterializationData(AssetMaterialization(asset_key=key)),
            ),
            run.run_id,
        )


def checked_in(instance, run) -> None:
    """`run` evaluated every check it planned, all passing (as the silver step records them)."""
    for key in defs.resolve_asset_graph().asset_check_keys:
        evaluation = AssetCheckEvaluation(
            asset_key=key.asset_key,
            check_name=key.name,
            passed=True,
            severity=AssetCheckSeverity.ERROR,
            blocking=True,
        )
        instance.report_dagster_event(
            DagsterEvent(
                DagsterEventType.ASSET_CHECK_EVALUATION.value,
                job_name=run.job_name,
                event_specific_data=evaluation,
            ),
            run.run_id,
        )


def test_silver_made_in_the_ingest_run_is_not_requested_again_but_follows_a_replay(
    dagster_instance,
):
    # The stream sensor's runs of ingest_file_events land bronze, then silver, in one run
    # (silver_in_ingest_run): automation must not run silver again for that bronze commit.
    tick = Ticks(dagster_instance)
    tick()
    ingest = in_progress(dagster_instance, BRONZE, *SILVER)
    materialized_in(dagster_instance, ingest, BRONZE)
    assert not tick() & SILVER  # the run that committed bronze goes on to silver
    materialized_in(dagster_instance, ingest, *SILVER)
    checked_in(dagster_instance, ingest)
    finished(dagster_instance, ingest)
    after = tick()
    assert not after & SILVER
    assert after >= GOLD  # gold follows silver as after any silver commit
    # A bronze commit made without silver (a replay, a bronze run launched by hand) is
    # followed by silver as before.
    replay = in_progress(dagster_instance, BRONZE)
    materialized_in(dagster_instance, replay, BRONZE)
    finished(dagster_instance, replay)
    assert tick() >= SILVER


def test_silver_starts_while_the_next_ingest_run_is_in_progress(dagster_instance):
    # A steady stream keeps an ingest run going almost all the time; silver reads only
    # bronze's committed versions, so it need not wait for bronze to be idle.
    tick = Ticks(dagster_instance)
    tick()
    materialized(dagster_instance, BRONZE)
    in_progress(dagster_instance, BRONZE)
    assert tick() >= SILVER


def test_a_bronze_commit_during_a_silver_run_is_not_left_waiting_for_the_next_one(
    dagster_instance,
):
    tick = Ticks(dagster_instance)
    tick()
    materialized(dagster_instance, BRONZE)
    assert tick() >= SILVER
    silver = in_progress(dagster_instance, *SILVER)
    materialized(dagster_instance, BRONZE)  # committed after silver's run read bronze
    assert not tick() & SILVER  # one silver run at a time
    finished(dagster_instance, silver, *SILVER)
    checked(dagster_instance)
    # Silver goes again for the commit its run may not have read, with no new bronze commit.
    assert tick() >= SILVER
    assert not tick() & SILVER  # and only once


def test_a_bronze_commit_between_silver_requested_and_started_is_not_lost(dagster_instance):
    tick = Ticks(dagster_instance)
    tick()
    materialized(dagster_instance, BRONZE)
    assert tick() >= SILVER
    silver = in_progress(dagster_instance, *SILVER)
    materialized(dagster_instance, BRONZE)  # seen on the same tick as silver's request
    tick()
    finished(dagster_instance, silver, *SILVER)
    checked(dagster_instance)
    assert tick() >= SILVER


def test_a_silver_commit_during_a_gold_run_brings_gold_back_once_checked(dagster_instance):
    tick = Ticks(dagster_instance)
    tick()
    materialized(dagster_instance, *SILVER)
    checked(dagster_instance)
    assert tick() >= GOLD
    gold = in_progress(dagster_instance, *GOLD)
    materialized(dagster_instance, *SILVER)  # committed after gold's run read silver
    assert not tick() & GOLD  # its checks have not run, and gold is in progress
    checked(dagster_instance)
    finished(dagster_instance, gold, *GOLD)
    assert not tick() & GOLD  # gold was requested this minute already
    assert tick.next_minute() >= GOLD


def test_gold_and_the_events_are_requested_at_most_once_a_minute_and_miss_no_commit(
    dagster_instance,
):
    # A run that follows its stream commits silver every 10-30 s; gold and the events it
    # publishes take every commit since their last run, at most once a UTC minute.
    downstream = GOLD | {file_trashed_events.key}
    tick = Ticks(dagster_instance)
    tick()
    materialized(dagster_instance, *SILVER)
    checked(dagster_instance)
    assert tick() >= downstream  # the first request of the minute goes at once
    gold = in_progress(dagster_instance, *downstream)
    finished(dagster_instance, gold, *downstream)
    for _ in range(3):  # three more silver batches in the same minute
        materialized(dagster_instance, *SILVER)
        checked(dagster_instance)
        assert not tick() & downstream
    assert tick.next_minute() >= downstream  # all three, in one request
    gold = in_progress(dagster_instance, *downstream)
    finished(dagster_instance, gold, *downstream)
    assert not tick.next_minute() & downstream  # nothing new since: no request


def test_a_request_in_the_last_second_of_a_minute_does_not_hold_back_the_next_minute(
    dagster_instance,
):
    # The request is seen on the evaluation after it, which here also sees the minute's tick:
    # the tick wins, since the request was made before it.
    downstream = GOLD | {file_trashed_events.key}
    tick = Ticks(dagster_instance)
    tick()
    materialized(dagster_instance, *SILVER)
    checked(dagster_instance)
    tick.now = tick.now.replace(second=58)
    assert tick() >= downstream  # at :59
    gold = in_progress(dagster_instance, *downstream)
    finished(dagster_instance, gold, *downstream)
    materialized(dagster_instance, *SILVER)
    checked(dagster_instance)
    assert tick.next_minute() >= downstream  # at :01 of the next minute
