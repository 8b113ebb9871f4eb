"""A real `dagster-daemon run` picks up newly published messages and its runs land them.

The daemon runs on a temporary DAGSTER_HOME (sqlite storage, the QueuedRunCoordinator with
the `jsl/ingest` tag limit, the default run launcher) with the code location
`tests/sensors/daemon_location.py` pointed at the session's nats-server.
"""

import itertools
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from dagster import DagsterInstance, DagsterRunStatus, RunsFilter

from pipelines.cli.supervise import stop_group
from pipelines.lakehouse.delta_log import read_table_version
from tests.pipelines.ingest.harness import publish_events

PROJECT = Path(__file__).resolve().parents[2]
WAIT = 300  # seconds: the code server, a sensor tick, a queued run, its Spark JVM (2 cores)

DAGSTER_YAML = """\
run_queue:
  max_concurrent_runs: 2
  dequeue_interval_seconds: 1
  tag_concurrency_limits:
    - key: jsl/ingest
      value: {applyLimitPerUniqueValue: true}
      limit: 1
run_monitoring:
  enabled: true
  start_timeout_seconds: 180
  max_resume_run_attempts: 0
  poll_interval_seconds: 5
run_launcher:
  module: dagster.core.launcher
  class: DefaultRunLauncher
telemetry:
  enabled: false
"""


def start_daemon(home: Path, env: dict[str, str], log: Path) -> subprocess.Popen:
    (home / "dagster.yaml").write_text(DAGSTER_YAML)
    workspace = home / "workspace.yaml"
    workspace.write_text(
        textwrap.dedent(f"""\
            load_from:
              - python_module:
                  module_name: tests.sensors.daemon_location
                  working_directory: {PROJECT}
                  location_name: daemon_test
            """)
    )
    daemon = Path(sys.executable).parent / "dagster-daemon"
    with log.open("wb") as out:
        return subprocess.Popen(
            [str(daemon), "run", "-w", str(workspace)],
            cwd=PROJECT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def daemon_env(home: Path, nats_url: str, stream: str, table_root: Path, **more: str) -> dict:
    """The environment of the daemon and the runs on `daemon_location.py`: DAGSTER_HOME, the
    location's variables, this Python's bin first on PATH, and `more` (the tests' Spark
    tuning, a lease TTL, a kill armed; see the location's docstring)."""
    return {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "JSL_TEST_NATS_URL": nats_url,
        "JSL_TEST_STREAM": stream,
        "JSL_TEST_TABLE_ROOT": str(table_root),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        **more,
    }


# The tests' Spark for each run: a small heap and two shuffle partitions.
TEST_SPARK = {"JSL_SPARK_DRIVER_MEMORY": "1g", "JSL_SPARK_SHUFFLE_PARTITIONS": "2"}


def execute_ingest_job(stream: str, env: dict) -> subprocess.CompletedProcess:
    """`dagster job execute` of the location's ingest job for `stream`: a run with no daemon
    and no code server."""
    return subprocess.run(
        [
            str(Path(sys.executable).parent / "dagster"),
            *("job", "execute", "-m", "tests.sensors.daemon_location"),
            *("-j", f"ingest_{stream.lower()}"),
        ],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
        timeout=WAIT,
    )


def test_daemon_sensor_launches_runs_that_land_newly_published_messages(
    js, spark, ingest, nats_server, tmp_path
):
    home = tmp_path / "dagster_home"
    home.mkdir()
    table_root = tmp_path / "lakehouse"
    env = daemon_env(home, nats_server.url, ingest.stream, table_root, **TEST_SPARK)
    log = tmp_path / "daemon.log"
    daemon = start_daemon(home, env, log)
    try:
        published = publish_events(js, ingest.stream, 40, seed=9)
        with DagsterInstance.from_config(str(home)) as instance:
            runs = wait_for_runs(instance, daemon, log, spark, ingest, table_root, published)
    finally:
        stop_group(daemon)

    # The sensor may have ticked while the batch was being published: then two runs took it.
    ranges = sorted(tuple(map(int, r.tags["jsl/range"].split("-"))) for r in runs)
    assert ranges[0][0] == 1 and ranges[-1][1] == 40
    assert all(a[1] + 1 == b[0] for a, b in itertools.pairwise(ranges))
    assert {r.tags["dagster/run_key"] for r in runs} == {
        f"{ingest.stream}:bronze:{start}-{end}" for start, end in ranges
    }
    assert js.consumers.info(ingest.stream, ingest.durable).ack_floor_stream_seq == 40


def wait_for_runs(instance, daemon, log, spark, ingest, table_root, published):
    """The ingest's runs, once they all succeeded and the table holds `published`.

    Fails at once if a run fails or the daemon exits, and after `WAIT` seconds otherwise,
    with the daemon's log.
    """
    path = table_root / ingest.table
    deadline = time.monotonic() + WAIT
    while True:
        runs = instance.get_runs(RunsFilter(tags={"jsl/ingest": f"{ingest.stream}:bronze"}))
        failed = [r.run_id for r in runs if r.status == DagsterRunStatus.FAILURE]
        assert not failed, f"run(s) {failed} failed; daemon log:\n{tail(log)}"
        done = runs and all(r.status == DagsterRunStatus.SUCCESS for r in runs)
        if done and landed(spark, path) == published:
            return runs
        assert daemon.poll() is None, f"the daemon exited; its log:\n{tail(log)}"
        assert time.monotonic() < deadline, (
            f"no successful runs landing {len(published)} messages within {WAIT}s; runs: "
            f"{[(r.run_id, r.status.value) for r in runs]}; daemon log:\n{tail(log)}"
        )
        time.sleep(2)


def landed(spark, path: Path | str) -> list[int]:
    """The sequences in the bronze table at `path` (a folder or an `s3a://` URI), sorted ([]
    before its first commit: a killed run may leave an empty `_delta_log`)."""
    if read_table_version(str(path)) is None:
        return []
    rows = spark.read.format("delta").load(str(path)).select("seq").collect()
    return sorted(row.seq for row in rows)


def tail(log: Path, lines: int = 80) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
