"""Crashes between the engine's steps, and inside its Spark job: the next run loses and
duplicates nothing.

Injected crashes (a hook raising at a step) run in-process on the session's SparkSession;
real kills (SIGKILL of a child process running the engine with its own JVM) run through
`crash_child.py`. The kill after the commit and the crash before the consumer moves run with
the table in a local folder and in a real S3 server (SeaweedFS).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from delta.tables import DeltaTable
from pyspark.sql import functions as F

import pipelines.ingest.engine as engine
from pipelines.ingest.bronze import commit_idempotently
from pipelines.ingest.engine import STEPS
from pipelines.ingest.errors import RangeWriteError
from pipelines.lakehouse.delta_tables import table_version
from tests.pipelines.ingest.harness import (
    InjectedCrash,
    assert_landed_exactly_once,
    crash_at,
    make_ingest,
    publish_events,
)

REPO = Path(__file__).resolve().parents[3]

# A run of 120 messages crashed at each step leaves (Delta version, ack floor, planned?).
LEFT_BY_CRASH_AT = {
    "planned": (None, 0, True),
    "committed": (0, 0, True),
    "consumer_advanced": (0, 120, True),
    "checkpoint_marked": (0, 120, False),
}


def test_steps_are_the_four_points_between_plan_commit_advance_and_mark():
    assert STEPS == ("planned", "committed", "consumer_advanced", "checkpoint_marked")


@pytest.mark.parametrize("step", STEPS)
def test_crash_at_each_step_then_rerun_loses_and_duplicates_nothing(
    js, spark, unique_name, table_root, step
):
    ingest = make_ingest(js, unique_name, table_root)
    published = publish_events(js, unique_name, 120, seed=11)

    with pytest.raises(InjectedCrash):
        ingest.run(js, spark, "crashed-run", hook=crash_at(step))

    # What the crash left: (Delta version, consumer ack floor, range still planned).
    checkpoint = ingest.checkpoint()
    left = (
        table_version(spark, ingest.path),
        js.consumers.info(unique_name, "bronze").ack_floor_stream_seq,
        checkpoint.planned is not None,
    )
    assert left == LEFT_BY_CRASH_AT[step]

    result = ingest.run(js, spark, "recovering-run")

    assert_landed_exactly_once(js, spark, ingest, published)
    if step == "checkpoint_marked":
        # The crashed run had finished every step but returning: nothing is left to recover.
        assert (result.start, result.recovered_from, result.written) == (None, None, False)
    else:
        assert result.recovered_from == "crashed-run"
        assert (result.start, result.end, result.delta_version) == (1, 120, 0)
        # Before the commit nothing was written; after it, Delta skips the repeat.
        assert result.written is (step == "planned")
    assert DeltaTable.forPath(spark, ingest.path).history().count() == 1  # one commit, ever


def test_crash_after_commit_before_consumer_moves_loses_and_duplicates_nothing(
    js, spark, unique_name, any_root
):
    ingest = make_ingest(js, unique_name, any_root)
    first = publish_events(js, unique_name, 60, seed=12)
    ingest.run(js, spark, "run-1")
    second = publish_events(js, unique_name, 40, seed=13)

    with pytest.raises(InjectedCrash):
        ingest.run(js, spark, "run-2", hook=crash_at("committed"))
    consumer = js.consumers.info(ingest.spec.stream, ingest.spec.durable)
    assert (consumer.ack_floor_stream_seq, consumer.num_pending) == (60, 40)
    result = ingest.run(js, spark, "run-3")

    assert (result.start, result.end, result.recovered_from) == (61, 100, "run-2")
    assert result.written is False
    assert result.delta_version == 1
    assert_landed_exactly_once(js, spark, ingest, first + second)


def test_spark_job_failing_mid_write_commits_nothing_and_the_next_run_lands_everything(
    js, spark, unique_name, table_root, monkeypatch
):
    ingest = make_ingest(js, unique_name, table_root)
    published = publish_events(js, unique_name, 100, seed=14)

    def failing_commit(frame, table_path, *, app_id, txn_version):
        # One row of one task raises inside the Spark job writing the range.
        seq = F.col("seq")
        poisoned = frame.withColumn(
            "seq", F.when(seq == 77, F.raise_error(F.lit("injected task failure"))).otherwise(seq)
        )
        return commit_idempotently(poisoned, table_path, app_id=app_id, txn_version=txn_version)

    with monkeypatch.context() as patch:
        patch.setattr(engine, "commit_idempotently", failing_commit)
        with pytest.raises(RangeWriteError, match="injected task failure") as failed:
            ingest.run(js, spark, "failed-run")
    assert f"messages 1-100 of stream {unique_name!r}" in str(failed.value)
    assert ingest.path in str(failed.value) and "next run retries the range" in str(failed.value)

    assert table_version(spark, ingest.path) is None  # no Delta commit, whatever files a task wrote
    checkpoint = ingest.checkpoint()
    assert checkpoint is not None
    assert (checkpoint.committed_end, checkpoint.planned.start, checkpoint.planned.end) == (
        0,
        1,
        100,
    )
    assert js.consumers.info(ingest.spec.stream, ingest.spec.durable).ack_floor_stream_seq == 0

    result = ingest.run(js, spark, "next-run")

    assert (result.recovered_from, result.written, result.messages) == ("failed-run", True, 100)
    assert_landed_exactly_once(js, spark, ingest, published)


@pytest.mark.parametrize("step", ["committed", "consumer_advanced"])
def test_process_killed_at_step_leaves_a_range_the_next_run_finishes_exactly_once(
    js, spark, nats_server, unique_name, any_root, step
):
    # The killed process cannot release its lease: a short TTL lets the next run wait it out.
    ingest = make_ingest(js, unique_name, any_root, lease_ttl=2, lease_wait=60)
    published = publish_events(js, unique_name, 150, seed=15)
    spec = {
        "name": ingest.spec.name,
        "stream": ingest.spec.stream,
        "durable": ingest.spec.durable,
        "table": ingest.spec.table,
        "readers": ingest.spec.readers,
        "pull_batch": ingest.spec.pull_batch,
        "lease_ttl": ingest.spec.lease_ttl,
    }

    child = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.pipelines.ingest.crash_child",
            nats_server.url,
            ingest.path,
            json.dumps(spec),
            step,
            "killed-run",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )

    assert child.returncode == -signal.SIGKILL, child.stderr[-3000:]
    checkpoint = ingest.checkpoint()
    assert checkpoint is not None and checkpoint.planned is not None
    assert checkpoint.planned.run_id == "killed-run"
    assert table_version(spark, ingest.path) == 0  # the child committed before it died
    consumer = js.consumers.info(ingest.spec.stream, ingest.spec.durable)
    assert consumer.ack_floor_stream_seq == (150 if step == "consumer_advanced" else 0)

    result = ingest.run(js, spark, "recovering-run")

    assert (result.recovered_from, result.start, result.end) == ("killed-run", 1, 150)
    assert result.written is False  # Delta skipped the repeat of the child's commit
    assert_landed_exactly_once(js, spark, ingest, published)
