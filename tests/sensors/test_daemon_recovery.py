"""Runs SIGKILLed mid-ingest are seen dead by the real daemon's sensor, which recovers their
ranges: a `dagster job execute` run and a sensor-launched run, each killed once it planned its
range (no `finally`, no lease release, its JVM gone with it). The first leaves Dagster with a
STARTED run that nothing else would ever finish: the sensor marks it failed once its
`jsl/alive-until` tag and its lease have lapsed. The second's code server marks it failed.
Either way the sensor requests the recovery of its range, the recovery waits out the dead
run's lease (`wait_for_lease`), and every message lands once.

The code location is `daemon_location.py` with a 15 s lease (and liveness) TTL, so the test
waits less than the default 30 s per kill. `recovery_times` are what `bench/recovery.py`
reports at the defaults.
"""

import time
from pathlib import Path

import pytest
from dagster import DagsterEventType, DagsterInstance, DagsterRunStatus, RunsFilter

from pipelines.cli.supervise import stop_group
from tests.pipelines.ingest.harness import publish_events
from tests.sensors.test_daemon import (
    DAGSTER_YAML,
    TEST_SPARK,
    WAIT,
    daemon_env,
    execute_ingest_job,
    landed,
    start_daemon,
    tail,
)

LEASE_TTL = 15  # seconds: beats every 5 s, 10 s of margin on a busy machine's sqlite


# On S3 too: a run killed after planning, and its recovery, with the table in the S3 server.
@pytest.mark.parametrize("any_root", ["local", "s3"], indirect=True)
def test_runs_killed_mid_ingest_are_marked_failed_and_their_ranges_land_exactly_once(
    js, spark, ingest, nats_server, tmp_path, any_root
):
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(DAGSTER_YAML)
    table_root = any_root
    armed = tmp_path / "kill-armed"
    env = daemon_env(
        home,
        nats_server.url,
        ingest.stream,
        table_root,
        JSL_TEST_LEASE_TTL=str(LEASE_TTL),
        JSL_TEST_KILL_ARMED=str(armed),
        **TEST_SPARK,
    )
    log = tmp_path / "daemon.log"
    path = table_root / ingest.table
    ingest_id = f"{ingest.stream}:bronze"

    # 1. `dagster job execute`, killed once it planned its range: no daemon runs yet.
    published = publish_events(js, ingest.stream, 40, seed=9)
    armed.touch()
    executed = execute_ingest_job(ingest.stream, env)
    kills = [time.time()]
    assert executed.returncode == -9, executed.stdout[-3000:] + executed.stderr[-3000:]
    assert not armed.exists()
    with DagsterInstance.from_config(str(home)) as instance:
        [orphan] = instance.get_runs()
    assert orphan.status == DagsterRunStatus.STARTED  # and nothing else would ever change it

    daemon = start_daemon(home, env, log)
    try:
        with DagsterInstance.from_config(str(home)) as instance:
            wait_until(lambda: landed(spark, path) == published, instance, ingest_id, daemon, log)
            # 2. A run the sensor launched, killed the same way.
            armed.touch()
            published += publish_events(js, ingest.stream, 40, seed=10)
            wait_until(lambda: not armed.exists(), instance, ingest_id, daemon, log)
            kills.append(time.time())
            wait_until(lambda: landed(spark, path) == published, instance, ingest_id, daemon, log)
            # The recovery's rows are in before its run ends (its consumer move, checkpoint and
            # lease release come after the commit): wait for every run to finish.
            ingest_runs = RunsFilter(tags={"jsl/ingest": ingest_id})
            wait_until(
                lambda: all(r.is_finished for r in instance.get_runs(ingest_runs)),
                instance,
                ingest_id,
                daemon,
                log,
            )
            records = instance.get_run_records(ingest_runs)
            failures = {
                record.dagster_run.run_id: instance.all_logs(
                    record.dagster_run.run_id, of_type=DagsterEventType.RUN_FAILURE
                )
                for record in records
                if record.dagster_run.status == DagsterRunStatus.FAILURE
            }
    finally:
        stop_group(daemon)

    assert landed(spark, path) == list(range(1, 81))  # each message once
    assert js.consumers.info(ingest.stream, ingest.durable).ack_floor_stream_seq == 80
    assert len(failures) == 2, (
        f"runs: {[(r.dagster_run.run_id, r.dagster_run.status) for r in records]}"
    )
    # The orphan had no code server: the sensor saw it dead. The code server that started
    # the other saw its process die and marked it failed itself.
    [failure] = failures[orphan.run_id]
    assert "marks this run failed: it last said it was alive until" in failure.message
    recoveries = {
        record.dagster_run.tags.get("jsl/recovers-run"): record
        for record in records
        if "jsl/recovers-run" in record.dagster_run.tags
    }
    assert set(recoveries) == set(failures), "each killed run's range is recovered"
    assert all(r.dagster_run.status == DagsterRunStatus.SUCCESS for r in recoveries.values())
    unfinished = [r for r in records if not r.dagster_run.is_finished]
    assert not unfinished
    # What recovery took (printed with -s; bench/recovery.py measures it at the defaults).
    in_order = sorted(recoveries.values(), key=lambda r: r.create_timestamp)
    for kill, record in zip(kills, in_order, strict=True):
        requested = record.create_timestamp.timestamp() - kill
        done = (record.end_time or 0) - kill
        print(f"killed -> recovery requested {requested:.1f} s, landed {done:.1f} s")


def wait_until(condition, instance, ingest_id: str, daemon, log: Path) -> None:
    """Returns once `condition()` holds; fails after `WAIT` seconds or if the daemon exits."""
    deadline = time.monotonic() + WAIT
    while not condition():
        assert daemon.poll() is None, f"the daemon exited; its log:\n{tail(log)}"
        if time.monotonic() > deadline:
            runs = instance.get_runs(RunsFilter(tags={"jsl/ingest": ingest_id}))
            raise AssertionError(
                f"not within {WAIT}s; runs: {[(r.run_id, r.status.value) for r in runs]}; "
                f"daemon log:\n{tail(log)}"
            )
        time.sleep(1)
