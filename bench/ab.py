"""Fresh-JVM A/B of the ingest (path (c) of `ingest.py`) under different settings.

One stream of N FileDeletedEvents is published once; then, for each round, every variant
runs one `run_ingest` of the whole stream in its own process (a fresh SparkSession, warmed
up as in `ingest.py`), with that variant's environment variables on top of this one's. The
variants alternate, so a drift of the machine's speed hits all of them alike. Each line
printed is one run: its wall time, rate, and CPU seconds of the driver, the JVM and the
Python workers, with the Python speed figure of `sampling.py`.

    .venv/bin/python bench/ab.py --events 1000000 --rounds 2 --variants '{"now": {},
      "nats-py messages": {"JSL_NATS_RAW_FRAMES": "off"},
      "sorted": {"JSL_SPARK_CONF": "{\\"spark.sql.maxConcurrentOutputFileWriters\\": \\"0\\"}"}}'
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import ingest
from pyspark import cloudpickle
from sampling import PhaseMonitor, python_speed_ms

from pipelines.ingest.engine import run_ingest
from pipelines.ingest.spec import IngestSpec
from resources.jetstream import ConnectionSettings, EmbeddedNatsServer, JetStreamClient, StreamSpec

STREAM = "AB"


def one_run(url: str, count: int) -> dict[str, object]:
    """One ingest of the whole stream in this (fresh) process."""
    cloudpickle.register_pickle_by_value(ingest)  # the warm-up function runs in the workers
    tables = Path(tempfile.mkdtemp(prefix="jsl-ab-"))
    spark, _, _ = ingest.start_spark(tables)
    name = f"ab{uuid.uuid4().hex[:6]}"
    spec = IngestSpec(
        name=name,
        stream=STREAM,
        durable=name,
        filter_subjects=(f"{STREAM}.files.>",),
        table="bronze/ab",
        max_messages=count,
        max_bytes=1 << 40,
    )
    with JetStreamClient(ConnectionSettings(servers=(url,))) as client:
        client.consumers.add(spec.consumer_spec())
        checkpoints = client.create_key_value(spec.checkpoint_bucket_spec())
        speed = python_speed_ms()
        with PhaseMonitor("c_ingest") as phase:
            result = run_ingest(
                client, spark, spec, str(tables / "t"), checkpoints=checkpoints, run_id=name
            )
        client.consumers.delete(STREAM, name)
    if result.messages != count:
        raise RuntimeError(f"the run landed {result.messages} of {count}")
    spark.stop()
    report = phase.report
    return {
        "wall_s": round(report.wall, 2),
        "msgs_per_s": round(count / report.wall),
        # nats-server is the parent's child, not this process's: not counted here.
        **{
            f"{group}_cpu_s": round(report.cpu[group], 2)
            for group in ("driver", "jvm", "python_workers")
        },
        "python_speed_ms": speed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--variants", default='{"now": {}}', help="JSON: name -> env vars")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # the server URL, in a child run
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one_run(args.child, args.events)), flush=True)
        return
    variants = json.loads(args.variants)
    with EmbeddedNatsServer(store_dir=tempfile.mkdtemp(prefix="jsl-ab-")) as server:
        with JetStreamClient(ConnectionSettings(servers=(server.url,))) as client:
            client.streams.add(StreamSpec(STREAM, (f"{STREAM}.files.>",)))
            ingest.publish(client, STREAM, args.events)
        for round_ in range(1, args.rounds + 1):
            for name, env in variants.items():
                child = subprocess.run(
                    [sys.executable, __file__, "--events", str(args.events), "--child", server.url],
                    env={**os.environ, **env},
                    capture_output=True,
                    text=True,
                )
                lines = [line for line in child.stdout.splitlines() if line.startswith("{")]
                if child.returncode or not lines:
                    raise RuntimeError(f"variant {name!r} failed:\n{child.stderr[-3000:]}")
                print(json.dumps({"round": round_, "variant": name, **json.loads(lines[-1])}))


if __name__ == "__main__":
    main()
