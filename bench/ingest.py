"""Ingest benchmark (issue 4): how fast N stored JetStream messages land in Delta, three ways.

One run starts an embedded nats-server on a temporary store directory (file storage),
publishes N FileDeletedEvents (~300-byte JSON, each with a `Nats-Msg-Id`) with
`publish_batch`, then reads the same stored messages three times:

  (a) raw drain: bare nats-py, no processing, counting messages and bytes. Several readers
      are tried (`RAW_DRAINS`); the fastest is the ceiling.
  (b) naive: a durable pull consumer with explicit acks, `fetch(1000)` in a loop, one Python
      dict per message, `spark.createDataFrame(dicts)`, a Delta append, then the acks.
  (c) this project's `run_ingest` end to end: plan, read in parallel Spark tasks, one
      idempotent Delta commit, consumer reset, checkpoint.

The SparkSession starts (and a small mapInArrow + Delta write warms it up) before any timing;
both are reported separately. Every phase records wall time, peak RSS per process, CPU
seconds per process and the machine's load (other jobs may share it). `--profile` takes (c)
apart (see `reader_profile.py`): one reader in-process, timed and under cProfile; Spark's
write path alone; and a prototype reader through the same Spark write.

    .venv/bin/python bench/ingest.py --events 100000 --profile

See docs/performance.md for the latest results and how to read them, bench/HISTORY.md for
every run.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import itertools
import json
import os
import platform
import shutil
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import psutil
from baselines import NAIVE_FETCH, RAW_DRAINS, naive
from reader_profile import profile_reader, profile_spark_write, prototype_end_to_end
from report import print_summary, summarize
from sampling import PhaseMonitor, find_jvm, python_speed_ms

from pipelines.file_trash.events import (
    FILE_DELETED_SUBJECT,
    generate_file_deleted_events,
)
from pipelines.ingest.engine import STEPS, run_ingest
from pipelines.ingest.options import IngestRunOptions
from pipelines.ingest.spec import IngestSpec
from resources.jetstream import (
    ConsumerSpec,
    EmbeddedNatsServer,
    JetStreamResource,
    StreamSpec,
)
from resources.jetstream.server.embedded import find_nats_server_binary
from resources.spark import SparkResource

NOW = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.timezone.utc)
PUBLISH_CHUNK = 20_000  # events generated and published per publish_batch call
REPO = Path(__file__).resolve().parent.parent


class BenchError(RuntimeError):
    """A path did not land what it should have; the figures would be meaningless."""


# -- setup -------------------------------------------------------------------------------


def publish(client, stream: str, count: int) -> dict[str, object]:
    """Publishes `count` FileDeletedEvents; returns the publish figures."""
    subject = f"{stream}.{FILE_DELETED_SUBJECT}"
    events = generate_file_deleted_events(count, now=NOW, seed=4)
    generating = publishing = 0.0
    payload_bytes = 0
    while True:
        started = time.monotonic()
        chunk = [
            (subject, e.to_json(), {"Nats-Msg-Id": e.eventId})
            for e in itertools.islice(events, PUBLISH_CHUNK)
        ]
        generating += time.monotonic() - started
        if not chunk:
            break
        payload_bytes += sum(len(m[1]) for m in chunk)
        started = time.monotonic()
        acks = client.publish_batch(chunk)
        publishing += time.monotonic() - started
        if any(a.duplicate for a in acks):
            raise BenchError("the stream dropped a publish as a duplicate")
    state = client.streams.info(stream)
    if (state.messages, state.last_seq) != (count, count):
        raise BenchError(f"stream holds {state.messages} messages, last {state.last_seq}")
    return {
        "messages": count,
        "payload_bytes": payload_bytes,
        "avg_payload_bytes": round(payload_bytes / count, 1),
        "stored_bytes": state.bytes,
        "generate_s": round(generating, 3),
        "publish_s": round(publishing, 3),
        "msgs_per_s": round(count / publishing),
        "messages_timed": count,
    }


def _warm_worker(batches):
    import pipelines.ingest.reader  # noqa: F401  (what the ingest's tasks import)

    yield from batches


def start_spark(tables: Path):
    """Starts the SparkSession (SparkResource defaults), then warms it up.

    The warm-up is a tiny Delta write through `mapInArrow`, so Delta's classes are loaded
    and the Python workers are running with the ingest's modules imported before any path
    is timed. Returns the session, the start-up seconds and the warm-up seconds.
    """
    started = time.monotonic()
    spark = SparkResource().get_session()
    startup = time.monotonic() - started
    started = time.monotonic()
    warm = spark.range(0, 2, 1, numPartitions=2).mapInArrow(_warm_worker, "id long")
    warm.write.format("delta").save(str(tables / "warmup"))
    spark.read.format("delta").load(str(tables / "warmup")).count()
    return spark, startup, time.monotonic() - started


# -- verification and profile ------------------------------------------------------------


def verify_table(spark, path: str, count: int, what: str) -> dict[str, int]:
    """Fails loudly unless the table holds exactly seqs 1..count, once each."""
    from pyspark.sql import functions as F

    row = (
        spark.read.format("delta")
        .load(path)
        .agg(
            F.count("*").alias("rows"),
            F.countDistinct("seq").alias("distinct"),
            F.min("seq").alias("min"),
            F.max("seq").alias("max"),
        )
        .collect()[0]
    )
    figures = row.asDict()
    if figures != {"rows": count, "distinct": count, "min": 1, "max": count}:
        raise BenchError(f"{what}: table {path} holds {figures}, expected seqs 1..{count} once")
    return figures


# -- the run -----------------------------------------------------------------------------


def environment(spark, args, readers: int) -> dict[str, object]:
    def version(dist: str) -> str | None:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return None

    server = subprocess.run(
        [str(find_nats_server_binary()), "--version"], capture_output=True, text=True
    ).stdout.strip()

    def git(*command: str) -> str:
        return subprocess.run(
            ["git", "-C", str(REPO), *command], capture_output=True, text=True
        ).stdout.strip()

    commit = git("describe", "--always", "--dirty")
    changed = git("status", "--porcelain", "--untracked-files=no").splitlines()
    return {
        "events": args.events,
        "readers": readers,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "memory_gib": round(psutil.virtual_memory().total / (1 << 30), 1),
        "nats_server": server,
        "git": commit,
        "git_modified_files": [line[3:] for line in changed],  # the tree measured is the worktree
        **{
            dist: version(dist)
            for dist in ("pyspark", "delta-spark", "nats-py", "pyarrow", "psutil")
        },
        "spark_master": spark.sparkContext.master,
        "spark_driver_memory": spark.conf.get("spark.driver.memory"),
        "spark_python_worker_reuse": spark.conf.get("spark.python.worker.reuse", "true"),
    }


def rate(count: int, report) -> dict[str, int]:
    """Messages per second of wall time, and per CPU second of this benchmark's processes."""
    own = sum(report.cpu.values())
    return {
        "messages_timed": count,
        "msgs_per_s": round(count / report.wall),
        "msgs_per_own_cpu_s": round(count / own) if own else 0,
    }


@dataclass
class Bench:
    """One benchmark run: the stored stream, the session, and where figures go."""

    url: str
    client: object  # the JetStreamClient the setup used
    spark: object
    stream: str
    count: int
    readers: int
    tables: Path
    run_id: str

    @property
    def subject(self) -> str:
        return f"{self.stream}.files.>"


def run_raw(bench: Bench) -> dict[str, object]:
    """(a): every raw drain in turn; the fastest is the ceiling."""
    raw = {}
    for label, drain in RAW_DRAINS.items():
        with PhaseMonitor(f"raw_{label}") as phase:
            got, size = asyncio.run(drain(bench.url, bench.stream, bench.subject, bench.count))
        if got != bench.count:
            raise BenchError(f"raw drain {label} read {got} of {bench.count}")
        raw[label] = {**phase.report.to_dict(), "bytes": size, **rate(bench.count, phase.report)}
        print(f"(a) raw {label}: {raw[label]['msgs_per_s']:,} msg/s", flush=True)
    best = max(raw, key=lambda k: raw[k]["msgs_per_s"])
    return {"best": best, **raw[best], "approaches": raw}


def run_engine(bench: Bench) -> dict[str, object]:
    """(c): one `run_ingest` taking the whole stream, timed per step, then verified."""
    count, client = bench.count, bench.client
    spec = IngestSpec(
        name=bench.stream.lower(),
        stream=bench.stream,
        durable="bronze",
        filter_subjects=(bench.subject,),
        table="bronze/ingest",
        max_messages=max(count, IngestSpec.max_messages),
        max_bytes=1 << 40,
        readers=bench.readers,
    )
    client.consumers.add(spec.consumer_spec())
    checkpoints = client.create_key_value(spec.checkpoint_bucket_spec())
    path = str(bench.tables / "ingest")
    marks: dict[str, float] = {}

    def hook(step: str) -> None:
        marks[step] = time.monotonic()

    with PhaseMonitor("c_ingest") as phase:
        marks["start"] = time.monotonic()
        result = run_ingest(
            client,
            bench.spark,
            spec,
            path,
            checkpoints=checkpoints,
            run_id=bench.run_id,
            options=IngestRunOptions(hook=hook),
        )
        marks["end"] = time.monotonic()
    if (result.start, result.end, result.messages) != (1, count, count):
        raise BenchError(f"(c) landed {result}")
    if result.lag != 0 or result.ack_floor != count:
        raise BenchError(f"(c) consumer not advanced: {result}")
    names = ("start", *STEPS, "end")
    labels = ("lease_and_planning", "read_and_commit", "consumer_reset", "checkpoint_mark")
    labels += ("result_and_lease_release",)
    return {
        **phase.report.to_dict(),
        **rate(count, phase.report),
        "table": verify_table(bench.spark, path, count, "(c) ingest"),
        "delta_version": result.delta_version,
        "pull_batch": spec.pull_batch,
        "rows_per_batch": spec.rows_per_batch,
        "steps_s": {
            label: round(marks[b] - marks[a], 3)
            for label, a, b in zip(labels, names[:-1], names[1:], strict=True)
        },
    }


def run_naive(bench: Bench) -> dict[str, object]:
    """(b): the hand-written loop over its own durable consumer, then verified."""
    count = bench.count
    bench.client.consumers.add(
        ConsumerSpec(stream=bench.stream, durable="naive", filter_subjects=(bench.subject,))
    )
    path = str(bench.tables / "naive")
    with PhaseMonitor("b_naive") as phase:
        landed = asyncio.run(naive(bench.url, bench.spark, bench.stream, "naive", path, count))
    consumer = bench.client.consumers.info(bench.stream, "naive")
    if landed != count or consumer.ack_floor_stream_seq != count:
        raise BenchError(f"(b) landed {landed}, ack floor {consumer.ack_floor_stream_seq}")
    return {
        **phase.report.to_dict(),
        **rate(count, phase.report),
        "table": verify_table(bench.spark, path, count, "(b) naive"),
        "fetch_batch": NAIVE_FETCH,
        "delta_commits": -(-count // NAIVE_FETCH),
    }


def run_profile(bench: Bench) -> dict[str, dict[str, object]]:
    """(c) taken apart: one reader in-process, Spark's write alone, a prototype reader."""
    out = {}
    with PhaseMonitor("profile_reader") as phase:
        reader = profile_reader(
            bench.client.settings, bench.url, bench.stream, bench.subject, bench.count
        )
    out["profile_reader"] = {**phase.report.to_dict(), **reader}
    path = str(bench.tables / "synthetic")
    with PhaseMonitor("profile_spark_write") as phase:
        write = profile_spark_write(bench.spark, path, bench.count, bench.readers)
    out["profile_spark_write"] = {
        **phase.report.to_dict(),
        **write,
        **rate(bench.count, phase.report),
    }
    path = str(bench.tables / "prototype")
    with PhaseMonitor("profile_prototype") as phase:
        proto = prototype_end_to_end(
            bench.spark, bench.url, bench.stream, bench.subject, path, bench.count, bench.readers
        )
    out["profile_prototype"] = {
        **phase.report.to_dict(),
        **proto,
        **rate(bench.count, phase.report),
        "table": verify_table(bench.spark, path, bench.count, "prototype"),
    }
    return out


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="messages to publish")
    parser.add_argument(
        "--readers", type=int, default=None, help="parallel readers of (c) (IngestSpec default)"
    )
    parser.add_argument("--out", type=Path, default=None, help="results JSON path")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (store, tables)")
    parser.add_argument(
        "--paths", default="a,b,c", help="which paths to run, e.g. 'a,c' (default a,b,c)"
    )
    parser.add_argument("--profile", action="store_true", help="also take (c) apart")
    args = parser.parse_args(argv)
    paths = set(args.paths.split(","))
    if args.events < 1 or not paths <= {"a", "b", "c"}:
        parser.error("--events must be >= 1 and --paths a subset of a,b,c")
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = args.out or REPO / "bench" / "results" / f"ingest-{stamp}.json"
    readers = args.readers or IngestSpec.readers
    root = Path(tempfile.mkdtemp(prefix="jsl-bench-"))
    stream = f"BENCH_{uuid.uuid4().hex[:8]}"
    phases: dict[str, dict[str, object]] = {}
    results: dict[str, object] = {"started": stamp, "complete": False, "phases": phases}

    def save() -> None:  # after every phase, so an interrupted run keeps what it measured
        results["summary"] = summarize(phases)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=2, default=str))

    results["python_speed_ms"] = {"start": python_speed_ms()}
    print(
        f"events={args.events} readers={readers} temp={root} load={os.getloadavg()} "
        f"python speed={results['python_speed_ms']['start']} ms",
        flush=True,
    )
    try:
        with EmbeddedNatsServer(store_dir=root / "jetstream") as server:
            resource = JetStreamResource(servers=server.url, request_timeout=30)
            with resource.client() as client:
                client.streams.add(StreamSpec(stream, (f"{stream}.files.>",)))
                with PhaseMonitor("publish") as phase:
                    published = publish(client, stream, args.events)
                phases["publish"] = {**phase.report.to_dict(), **published}
                print(f"publish: {published['msgs_per_s']:,} msg/s", flush=True)

                with PhaseMonitor("spark_start") as phase:
                    spark, startup, warmup = start_spark(root / "tables")
                phases["spark_start"] = {
                    **phase.report.to_dict(),
                    "startup_s": round(startup, 3),
                    "warmup_s": round(warmup, 3),
                }
                print(f"spark: start-up {startup:.1f}s, warm-up {warmup:.1f}s", flush=True)
                if find_jvm() is None:
                    print("warning: no JVM child found; its RSS will read 0", flush=True)
                results["environment"] = environment(spark, args, readers)
                save()
                bench = Bench(
                    server.url,
                    client,
                    spark,
                    stream,
                    args.events,
                    readers,
                    root / "tables",
                    run_id=f"bench-{stamp}",
                )
                # (b) last: it is by far the slowest, and every phase is saved as it ends.
                if "a" in paths:
                    phases["a_raw"] = run_raw(bench)
                    save()
                if "c" in paths:
                    phases["c_ingest"] = run_engine(bench)
                    print(f"(c) ingest: {phases['c_ingest']['msgs_per_s']:,} msg/s", flush=True)
                    save()
                if args.profile:
                    phases.update(run_profile(bench))
                    save()
                if "b" in paths:
                    phases["b_naive"] = run_naive(bench)
                    print(f"(b) naive: {phases['b_naive']['msgs_per_s']:,} msg/s", flush=True)
                results["python_speed_ms"]["end"] = python_speed_ms()
                results["complete"] = True
                save()
            spark.stop()
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print_summary(results, out)
    return results


if __name__ == "__main__":
    main()
