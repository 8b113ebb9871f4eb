"""The whole pipeline over Spark Connect: a Connect server started from the pyspark wheel with
Delta's SQL extension (no Delta Connect plugin: Delta goes through SQL), and clients with no
SparkContext.

The ingest and replay run in child processes (`ingest_child.py`) with `SPARK_REMOTE` set,
including one SIGKILLed right after its Delta commit; silver, gold, the downstream events and
maintenance run as their own tests do, in a child pytest with `SPARK_REMOTE` set, maintenance
also on the S3 server the Connect server was started pointing at (S3A's settings are the
server's: a Connect client cannot set them).
"""

from __future__ import annotations

import os
import subprocess
import sys

from tests.cluster.conftest import CHILD_TIMEOUT, REPO, run_child, spec_fields
from tests.conftest import PARENT_S3_ENDPOINT
from tests.pipelines.ingest.harness import make_ingest, publish_events

# The existing tests of silver, gold, the downstream events and maintenance, run again over
# Spark Connect: the end-to-end test materialises every asset of the code location (GX checks
# included) with exact counts, runs again and sees nothing change.
PIPELINE_TESTS = (
    "tests/test_file_trash_end_to_end.py::"
    "test_a_known_mix_lands_with_exact_counts_checks_artifacts_and_no_change_on_rerun",
    # Both roots: a local folder, and the worker's S3 server, which the Connect server was
    # started pointing at (`connect_url`) and the child's tests use (PARENT_S3_ENDPOINT).
    "tests/pipelines/wiring/test_maintenance.py::"
    "test_maintenance_compacts_small_files_and_keeps_every_row[local]",
    "tests/pipelines/wiring/test_maintenance.py::"
    "test_maintenance_compacts_small_files_and_keeps_every_row[s3]",
)


def test_ingest_and_replay_over_connect_land_each_message_once(
    js, nats_server, connect_url, unique_name, table_root
):
    ingest = make_ingest(js, unique_name, table_root, readers=2)
    published = publish_events(js, unique_name, 200, seed=41)

    report = run_child(
        {"SPARK_REMOTE": connect_url, "JSL_SPARK_SHIP_CODE": "1"},
        nats_url=nats_server.url,
        table_path=ingest.path,
        spec=spec_fields(ingest.spec),
        published=published,
        steps=[
            {"do": "probe"},
            {"do": "ingest", "run_id": "connect-1"},
            {"do": "verify"},
            {"do": "replay", "run_id": "connect-replay", "start": 20, "end": 50},
            {"do": "verify"},
            {"do": "ingest", "run_id": "connect-2"},
        ],
    )
    probe, landed, verdict, replayed, verdict_after_replay, again = report["steps"]

    assert report["session"].startswith("pyspark.sql.connect")
    # The readers' Python runs under the Connect server's JVM, not in the client, and
    # imports the project from the zip the client shipped (addArtifacts).
    for task in probe:
        assert task["pid"] != report["driver_pid"]
        assert "SparkConnectServer" in task["jvm"]
        assert "jetstream_lakehouse-" in task["module"] and ".zip" in task["module"]
    assert (landed["start"], landed["end"], landed["messages"], landed["written"]) == (
        1,
        200,
        200,
        True,
    )
    assert landed["bytes"] > 0
    assert (replayed["start"], replayed["end"], replayed["messages"]) == (20, 50, 31)
    assert verdict == verdict_after_replay == "exactly once"
    assert (again["start"], again["messages"]) == (None, 0)


def test_client_killed_right_after_the_delta_commit_over_connect_is_finished_exactly_once(
    js, nats_server, connect_url, unique_name, table_root
):
    # The killed client cannot release its lease: a short TTL lets the next run wait it out.
    ingest = make_ingest(js, unique_name, table_root, lease_ttl=2, lease_wait=60)
    published = publish_events(js, unique_name, 150, seed=42)
    child = dict(
        nats_url=nats_server.url,
        table_path=ingest.path,
        spec=spec_fields(ingest.spec),
        published=published,
    )

    run_child(
        {"SPARK_REMOTE": connect_url},
        steps=[{"do": "ingest", "run_id": "killed-run", "crash_at": "committed"}],
        killed=True,
        **child,
    )
    checkpoint = ingest.checkpoint()
    assert checkpoint is not None and checkpoint.planned is not None
    assert checkpoint.planned.run_id == "killed-run"
    assert js.consumers.info(ingest.spec.stream, ingest.spec.durable).ack_floor_stream_seq == 0

    report = run_child(
        {"SPARK_REMOTE": connect_url},
        steps=[{"do": "ingest", "run_id": "recovering-run"}, {"do": "verify"}],
        **child,
    )
    recovered, verdict = report["steps"]

    assert (recovered["recovered_from"], recovered["start"], recovered["end"]) == (
        "killed-run",
        1,
        150,
    )
    # The killed client's commit landed (version 0); Delta skipped the repeat.
    assert (recovered["written"], recovered["delta_version"], recovered["messages"]) == (
        False,
        0,
        0,
    )
    assert verdict == "exactly once"


def test_silver_gold_downstream_and_maintenance_pass_their_own_tests_over_connect(
    connect_url, connect_s3
):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JSL_SPARK", "SPARK_"))}
    if connect_s3 is not None:  # the S3 server the Connect server writes to (its keys: env's)
        env[PARENT_S3_ENDPOINT] = connect_s3.endpoint.url
    child = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *PIPELINE_TESTS],
        cwd=REPO,
        env={**env, "SPARK_REMOTE": connect_url},
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT,
    )

    assert child.returncode == 0, (child.stdout + child.stderr)[-6000:]
    # Without SeaweedFS, the maintenance test on S3 skips in the child, as it does here.
    count = len(PIPELINE_TESTS)
    expected = f"{count} passed" if connect_s3 is not None else f"{count - 1} passed, 1 skipped"
    assert expected in child.stdout, child.stdout[-3000:]


def test_the_warm_up_writes_merges_and_checkpoints_on_the_server_and_leaves_no_table(
    connect_url, tmp_path
):
    # What `jsl dev` does once its server listens (resources.spark_connect.warm_up), in a
    # child: a Connect client of its own, as a run's process is.
    script = (
        "import sys; from pathlib import Path; from resources.spark_connect import warm_up; "
        "print(warm_up(sys.argv[1], Path(sys.argv[2])))"
    )
    child = subprocess.run(
        [sys.executable, "-c", script, connect_url, str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT,
    )

    assert child.returncode == 0, (child.stdout + child.stderr)[-3000:]
    assert float(child.stdout.strip().splitlines()[-1]) > 0
    assert not list(tmp_path.iterdir())  # its scratch table is gone
