"""Runs ingest steps in this process, on the Spark the environment names, and prints what
happened as JSON (the last line of stdout).

The cluster tests run the engine here rather than in pytest's own process: that one already
holds a classic local SparkSession, and a process can have one SparkContext (one master), and
cannot mix classic and Spark Connect sessions (creating a Connect session switches PySpark's
functions to Connect for the whole process).

    python -m tests.cluster.ingest_child PLAN_JSON

The session is `SparkResource(driver_memory="1g", shuffle_partitions=2)`; `SPARK_REMOTE`
makes it a Spark Connect session, `JSL_SPARK_MASTER` (with `JSL_SPARK_SHARED_FS`,
`JSL_SPARK_SHIP_CODE`, `JSL_SPARK_CONF`) a standalone one. PLAN_JSON holds `nats_url`,
`table_path`, `spec` (`IngestSpec` fields), `published` (the stream sequences the stream
holds) and `steps`, each one of:

- `{"do": "probe"}`: where Python tasks run (pid, the command line of the JVM they work
  for, where `pipelines` was imported from), one row per task of a 2-task job;
- `{"do": "ingest", "run_id": ..., "crash_at": STEP?}`: one `run_ingest`; with `crash_at`,
  the process SIGKILLs itself when the run reaches STEP (no `finally` runs);
- `{"do": "replay", "run_id": ..., "start": A, "end": B}`: `replay_range` of [A, B];
- `{"do": "verify"}`: `assert_landed_exactly_once` for `published`;
- `{"do": "executors"}`: tasks per executor id so far (classic sessions only).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from pipelines.ingest.engine import run_ingest
from pipelines.ingest.options import IngestRunOptions
from pipelines.ingest.replay import replay_range
from pipelines.ingest.spec import IngestSpec
from resources.jetstream import JetStreamResource
from resources.spark import SparkResource
from tests.pipelines.ingest.crash_child import kill_at
from tests.pipelines.ingest.harness import Ingest, assert_landed_exactly_once

PROBE_SCHEMA = "pid long, jvm string, module string"


def jvm_ancestor() -> str:
    """The command line (classpath left out) of the nearest Java process above this one."""
    pid = os.getppid()
    while pid > 1:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            args = cmdline.read().decode(errors="replace").split("\0")
        if args and args[0].endswith("java"):
            kept = [
                a for i, a in enumerate(args) if i == 0 or args[i - 1] not in ("-cp", "-classpath")
            ]
            return " ".join(kept)
        with open(f"/proc/{pid}/stat") as stat:
            pid = int(stat.read().rsplit(")", 1)[1].split()[1])
    return ""


def probe_tasks(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """In a Python worker: its pid, the JVM it works for, where the project's code was
    imported from."""
    import pipelines.ingest.reader as reader

    jvm = jvm_ancestor()
    for batch in batches:
        yield pa.RecordBatch.from_pydict(
            {
                "pid": [os.getpid()] * batch.num_rows,
                "jvm": [jvm] * batch.num_rows,
                "module": [reader.__file__] * batch.num_rows,
            }
        )


def executor_tasks(spark) -> dict[str, int]:
    """Tasks each executor ran so far ("driver" included), from Spark's status store."""
    executors = spark.sparkContext._jsc.sc().statusStore().executorList(True)
    found = {}
    for index in range(executors.size()):
        summary = executors.apply(index)
        found[summary.id()] = summary.totalTasks()
    return found


def main(argv: list[str]) -> int:
    plan = json.loads(argv[0])
    spec = IngestSpec(**plan["spec"])
    path = plan["table_path"]
    spark = SparkResource(driver_memory="1g", shuffle_partitions=2, ui_enabled=False).get_session()
    report: dict[str, Any] = {"driver_pid": os.getpid(), "session": type(spark).__module__}
    steps: list[Any] = []
    with JetStreamResource(
        servers=plan["nats_url"], connect_timeout=5, request_timeout=5
    ).client() as js:
        ingest = Ingest(spec, path, js.create_key_value(spec.checkpoint_bucket_spec()))
        for step in plan["steps"]:
            if step["do"] == "probe":
                frame = spark.range(0, 2, 1, numPartitions=2).mapInArrow(probe_tasks, PROBE_SCHEMA)
                steps.append([row.asDict() for row in frame.collect()])
            elif step["do"] == "ingest":
                crash = step.get("crash_at")
                result = run_ingest(
                    js,
                    spark,
                    spec,
                    path,
                    checkpoints=ingest.checkpoints,
                    run_id=step["run_id"],
                    options=IngestRunOptions(hook=kill_at(crash) if crash else None),
                )
                steps.append(dataclasses.asdict(result))
            elif step["do"] == "replay":
                replayed = replay_range(
                    js,
                    spark,
                    spec,
                    path,
                    start=step["start"],
                    end=step["end"],
                    run_id=step["run_id"],
                )
                steps.append(dataclasses.asdict(replayed))
            elif step["do"] == "verify":
                assert_landed_exactly_once(js, spark, ingest, plan["published"])
                steps.append("exactly once")
            elif step["do"] == "executors":
                steps.append(executor_tasks(spark))
            else:
                raise SystemExit(f"unknown step {step!r}")
    report["steps"] = steps
    print(json.dumps(report, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
