"""A run says it is alive while its process works; a run that stopped saying so is dead."""

import datetime as dt
import time

import pytest
from dagster import AssetKey, DagsterInstance, DagsterRun, DagsterRunStatus, RunRecord

from assets import liveness
from assets.liveness import ALIVE_TAG, alive_until, dead_runs, keep_run_alive
from pipelines.ingest.lease import LeaseValue
from tests.sensors.conftest import record_run

NOW = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.timezone.utc)
BRONZE = AssetKey(["bronze", "events"])


def record(
    status=DagsterRunStatus.STARTED, *, tags=None, started_ago=None, selection=None, steps=None
):
    run = DagsterRun(
        job_name="ingest_events",
        run_id=f"run-{status.value.lower()}-{started_ago}",
        status=status,
        tags=tags or {},
        asset_selection=selection,
        step_keys_to_execute=steps,
    )
    start = None if started_ago is None else NOW.timestamp() - started_ago
    return RunRecord(1, run, NOW, NOW, start, None)


def dead(records, lease=None):
    found = dead_runs(records, now=NOW, lease=lease, ttl=30, bronze=BRONZE)
    return [run.run_id for run in found]


def test_a_run_whose_tag_has_passed_is_dead_unless_it_still_holds_the_ingest_lease():
    silent = record(tags={ALIVE_TAG: (NOW - dt.timedelta(seconds=1)).isoformat()})
    leased = LeaseValue(silent.dagster_run.run_id, NOW + dt.timedelta(seconds=5))
    lapsed = LeaseValue(silent.dagster_run.run_id, NOW - dt.timedelta(seconds=5))
    alive = record(tags={ALIVE_TAG: (NOW + dt.timedelta(seconds=1)).isoformat()})

    assert dead([silent, alive]) == [silent.dagster_run.run_id]
    assert dead([silent], lease=leased) == []
    assert dead([silent], lease=lapsed) == [silent.dagster_run.run_id]
    assert dead_runs([silent], now=NOW, lease=None, ttl=30, bronze=BRONZE)[0].why == (
        "it last said it was alive until 11:59:59"
    )


def test_a_run_that_never_said_it_is_alive_is_dead_only_after_the_grace_with_bronze_selected():
    young = record(started_ago=30)
    old = record(started_ago=90)
    old_with_bronze = record(started_ago=91, selection={BRONZE, AssetKey("silver")})
    old_without_bronze = record(started_ago=92, selection={AssetKey("silver")})
    # A re-execution from failure keeps the selection and runs only the failed steps.
    bronze_step = record(started_ago=93, steps=["bronze__events", "silver_events"])
    only_silver_step = record(started_ago=94, steps=["silver_events"])

    assert dead(
        [young, old, old_with_bronze, old_without_bronze, bronze_step, only_silver_step]
    ) == [
        old.dagster_run.run_id,
        old_with_bronze.dagster_run.run_id,
        bronze_step.dagster_run.run_id,
    ]


def test_a_tag_copied_from_the_parent_of_a_re_execution_is_not_the_run_s_own():
    """Dagster copies a run's tags to its re-execution: the parent's last beat, written
    before the child began, says nothing of the child."""
    stale = (NOW - dt.timedelta(seconds=40)).isoformat()  # beaten 70 s ago, TTL 30 s
    young_child = record(tags={ALIVE_TAG: stale}, started_ago=20)
    old_child = record(tags={ALIVE_TAG: stale}, started_ago=61)
    own = record(tags={ALIVE_TAG: stale}, started_ago=80)  # beaten 10 s after it began

    assert alive_until(young_child, ttl=30) is None
    assert alive_until(young_child) is not None  # without the TTL, the tag as it is
    assert dead([young_child, old_child, own]) == [
        old_child.dagster_run.run_id,
        own.dagster_run.run_id,
    ]


@pytest.mark.parametrize(
    "status",
    [DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING, DagsterRunStatus.SUCCESS],
)
def test_runs_not_yet_working_are_never_judged(status):
    """A run not started yet is Dagster's run monitoring's to time out; a finished one is over."""
    assert dead([record(status, started_ago=3600)]) == []


def eventually(condition, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "not within 10 s"
        time.sleep(0.05)


def test_keep_run_alive_moves_the_tag_until_the_run_is_finished():
    with DagsterInstance.local_temp() as instance:
        run = record_run(instance, {}, DagsterRunStatus.STARTED)

        def tag():
            return alive_until(instance.get_run_records()[0])

        keep_run_alive(instance, run.run_id, ttl=0.3)  # beats every 0.1 s
        first = tag()
        assert first is not None
        eventually(lambda: tag() > first)

        instance.report_run_failed(run)
        eventually(lambda: run.run_id not in liveness._beating)  # the thread stopped
        last = tag()
        time.sleep(0.3)
        assert tag() == last


def test_an_ephemeral_instance_is_left_alone():
    """No sensor reads it, and its in-memory storage is not for a second thread."""
    with DagsterInstance.ephemeral() as instance:
        run = record_run(instance, {}, DagsterRunStatus.STARTED)
        keep_run_alive(instance, run.run_id, ttl=0.3)
        assert ALIVE_TAG not in instance.get_run_by_id(run.run_id).tags
        assert run.run_id not in liveness._beating
