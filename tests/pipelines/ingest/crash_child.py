"""Runs one ingest in this process and SIGKILLs itself when the run reaches a step.

Used by `test_crash_recovery.py` to crash the engine for real: no `finally`, no lease
release, no flush; the JVM this process started exits with it.

    python -m tests.pipelines.ingest.crash_child NATS_URL TABLE_PATH SPEC_JSON STEP RUN_ID

SPEC_JSON holds `IngestSpec` fields. Exits 0 if the run finished without reaching STEP.
"""

from __future__ import annotations

import json
import os
import signal
import sys

from pipelines.ingest.engine import STEPS, run_ingest
from pipelines.ingest.options import IngestRunOptions
from pipelines.ingest.spec import IngestSpec
from resources.jetstream import JetStreamResource
from resources.spark import SparkResource


def kill_at(step: str):
    """A hook that SIGKILLs this process when the run reaches `step`."""

    def hook(reached: str) -> None:
        if reached == step:
            os.kill(os.getpid(), signal.SIGKILL)

    return hook


def main(argv: list[str]) -> int:
    url, table_path, spec_json, step, run_id = argv
    if step not in STEPS:
        raise SystemExit(f"unknown step {step!r}; expected one of {STEPS}")
    spec = IngestSpec(**json.loads(spec_json))
    spark = SparkResource(ui_enabled=False, shuffle_partitions=2, driver_memory="1g").get_session()
    with JetStreamResource(servers=url, connect_timeout=5, request_timeout=5).client() as js:
        run_ingest(
            js,
            spark,
            spec,
            table_path,
            checkpoints=js.create_key_value(spec.checkpoint_bucket_spec()),
            run_id=run_id,
            options=IngestRunOptions(hook=kill_at(step)),
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
