"""A run says it is alive while its process works; a run that stopped saying so is dead."""

import datetime as dt
import time

import pytest
from dagster import AssetKey, DagsterInstance, DagsterRun, DagsterRunStatus, RunRecord

from assets import liveness
from assets.liveness import ALIVE_TAG, alive_until, dead_runs, keep_run_alive
from pipelines.ingest.lease import LeaseValue
from tests.sensors.conftest import record_run

NOW = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.UTC)
BRONZE = AssetKey(["bronze", "events"])


def record(status=DagsterRunStatus.STARTED, *, tags=None, started_ago=None, selection=None):
    run = DagsterRun(
        job_name="ingest_events",
        run_id=f"run-{status.value.lower()}-{started_ago}",
        status=status,
        tags=tags or {},
        asset_selection=selection,
    )
    start = None if started_ago is None else NOW.timestamp() - started_ago
    return RunRecord(1, run, NOW, NOW, start, None)


def dead(records, lease=None):
    found = dead_runs(records, now=NOW, lease=lease, grace=60, bronze=BRONZE)
    return [run.run_id for run in found]


def test_a_run_whose_tag_has_passed_is_dead_unless_it_still_holds_the_ingest_lease():
    silent = record(tags={ALIVE_TAG: (NOW - dt.timedelta(seconds=1)).isoformat()})
    leased = LeaseValue(silent.dagster_run.run_id, NOW + dt.timedelta(seconds=5))
    lapsed = LeaseValue(silent.dagster_run.run_id, NOW - dt.timedelta(seconds=5))
    alive = record(tags={ALIVE_TAG: (NOW + dt.timedelta(seconds=1)).isoformat()})

    assert dead([silent, alive]) == [silent.dagster_run.run_id]
    assert dead([silent], lease=leased) == []
    assert dead([silent], lease=lapsed) == [silent.dagster_run.run_id]
    assert dead_runs([silent], now=NOW, lease=None, grace=60, bronze=BRONZE)[0].why == (
        "it last said it was alive until 11:59:59"
    )


def test_a_run_that_never_said_it_is_alive_is_dead_only_after_the_grace_with_bronze_selected():
    young = record(started_ago=30)
    old = record(started_ago=90)
    old_with_bronze = record(started_ago=91, selection={BRONZE, AssetKey("silver")})
    old_without_bronze = record(started_ago=92, selection={AssetKey("silver")})

    assert dead([young, old, old_with_bronze, old_without_bronze]) == [
        old.dagster_run.run_id,
        old_with_bronze.dagster_run.run_id,
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
    with DagsterInstance.ephemeral() as instance:
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
