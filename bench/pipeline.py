"""Pipeline benchmark (issue 14), part 1: what a batch costs as the tables' history grows.

For each history size H (`--history 0,1000000,10000000`), in a fresh table root:

1. the history is built directly as Delta tables with Spark (no publish): H bronze rows of
   stream `FILE_EVENTS` (seq 1..H, odd seqs FileDeletedEvents, even seqs the
   FilePlacedInTrashEvent of the event before, one in twenty deleted events with a negative
   fileSize), the silver rows the stage makes of them (the good ones in `silver/file_deleted`
   and `silver/file_trashed`, the bad ones in `silver/quarantine`, every seq in exactly one),
   the silver watermark at H, as if the stage had processed them, and gold computed from
   that silver (silver with the change data feed on, as the stage creates it). With H = 0
   the tables exist and are empty, as a pipeline that has run before leaves them, so every
   H takes the same path through the stages (a first run ever, which creates the tables
   and writes gold in full, is a one-time cost: `--history` does not measure it);
2. a batch of `--batch` new bronze rows is appended (seq H+1..): `generate_event_mix`'s
   FileDeletedEvents, `--bad-share` of them bad (malformed, missing field, wrong type,
   negative size, unknown type, future deletedAt, duplicates), half of the duplicates
   being byte copies of history events of both types (when H > 0); only the append is
   timed, made as an ingest run commits (`commit_idempotently`): generating the batch and
   reading the history rows its duplicates copy are the benchmark's own work;
3. the silver stage runs as the silver asset runs it (`run_contract_silver` with the file
   trash contract, `check_mostly` 0.95 and the Great Expectations suites of
   `DataQualityResource`), then gold (`gold_stage.run_gold`: the daily tables recompute
   the days the batch touched, `expiring_files` its horizon).

Each stage is timed with `PhaseMonitor` (wall time, CPU seconds of the driver, the JVM and
its Python workers) and Spark's SQL metrics (files and bytes its scans read, Delta log reads
included), then the ratio cost(H max) / cost(H 0) of each stage is printed (goal: <= 1.3).
A warm-up round (H = 0, not reported) runs first, so that H = 0 does not pay for the JIT.

Then, once this benchmark's Spark session has stopped, part 2 runs in the same process:
`bench/freshness.py` at `--freshness RATE:SECONDS` (default 100 events/s for 300 s; `off`
skips it), the real daemon landing a steady trickle in silver. The last lines printed are
the goals side by side: each stage's cost ratio (<= 1.3) and publish -> silver p50 (<= 20 s)
and p95 (<= 45 s).

    .venv/bin/python bench/pipeline.py
    .venv/bin/python bench/pipeline.py --history 0,1000000 --freshness off
    .venv/bin/python bench/pipeline.py --history 0,100000 --batch 20000 --out /tmp/p.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from sampling import PhaseMonitor, python_speed_ms

from pipelines.contract.fingerprint import contract_version, event_type_version
from pipelines.file_trash import gold_stage
from pipelines.file_trash.events import FILE_DELETED_EVENT, FILE_TRASHED_EVENT
from pipelines.file_trash.generator import generate_event_mix
from pipelines.file_trash.gold_stage import GoldPaths
from pipelines.file_trash.topology import file_trash_contract
from pipelines.ingest.bronze import (
    BRONZE_ARROW_SCHEMA,
    BRONZE_SCHEMA,
    PARTITION_COLUMNS,
    commit_idempotently,
)
from pipelines.lakehouse.delta_tables import CHANGE_DATA_FEED
from pipelines.lakehouse.watermarks import Watermark, WatermarkStore
from pipelines.silver.schema import QUARANTINE_SCHEMA, silver_schema
from pipelines.silver.stage import run_contract_silver, stage_name
from resources.jetstream import EmbeddedNatsServer, JetStreamResource, KeyValueSpec
from resources.quality import DataQualityResource
from resources.spark import SparkResource

NOW = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.timezone.utc)
STREAM = "FILE_EVENTS"
HISTORY_SPAN = dt.timedelta(days=100)  # history is published over the 100 days before NOW
ROWS_PER_FILE = 250_000  # history files (a compacted table; small runs leave smaller files)
STAGES = ("bronze_append", "silver", "gold")
CONTRACT = file_trash_contract()
SILVER_STAGE = stage_name(STREAM)
CONTRACT_TYPES = (FILE_DELETED_EVENT, FILE_TRASHED_EVENT)
REPO = Path(__file__).resolve().parent.parent
FILES = [  # name, mime type, folder (as the generator's)
    ("report.pdf", "application/pdf", "documents"),
    ("screenshot.png", "image/png", "pictures"),
    ("backup.zip", "application/zip", "backups"),
    ("notes.txt", "text/plain", "documents"),
    ("holiday.jpg", "image/jpeg", "pictures"),
    ("data.csv", "text/csv", "work"),
]


class BenchError(RuntimeError):
    """The tables do not hold what they should; the figures would be meaningless."""


# -- history -----------------------------------------------------------------------------


def _uuid(seq: Column, salt: str) -> Column:
    """A uuid-shaped id derived from `seq` (md5 hex, version 4 layout)."""
    h = F.md5(F.concat(F.lit(salt), seq.cast("string")))
    parts = [
        F.substring(h, 1, 8),
        F.substring(h, 9, 4),
        F.concat(F.lit("4"), F.substring(h, 14, 3)),
    ]
    parts += [F.concat(F.lit("8"), F.substring(h, 18, 3)), F.substring(h, 21, 12)]
    return F.concat_ws("-", *parts)


def _iso(ts: Column) -> Column:
    return F.date_format(ts, "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'")


def history_rows(spark: SparkSession, count: int) -> DataFrame:
    """`count` history rows: every column bronze and silver need, derived from seq alone."""
    start = NOW - HISTORY_SPAN
    step_us = HISTORY_SPAN // dt.timedelta(microseconds=1) // max(count, 1)
    parts = max(1, -(-count // ROWS_PER_FILE))
    seq = F.col("seq")
    deleted_seq = F.when(seq % 2 == 1, seq).otherwise(seq - 1)  # the FileDeletedEvent's seq
    pick = F.pmod(F.xxhash64(deleted_seq), F.lit(len(FILES))).cast("int")
    name = F.element_at(F.array(*(F.lit(f[0]) for f in FILES)), pick + 1)
    mime = F.element_at(F.array(*(F.lit(f[1]) for f in FILES)), pick + 1)
    folder = F.element_at(F.array(*(F.lit(f[2]) for f in FILES)), pick + 1)
    user = F.concat(F.lit("user-"), F.lpad((deleted_seq % 50).cast("string"), 3, "0"))
    start_us = int(start.timestamp() * 1e6)
    published = F.timestamp_micros(F.lit(start_us) + seq * step_us).alias("published")
    deleted_at = F.timestamp_micros(F.lit(start_us) + deleted_seq * step_us - 1_000_000)
    size = 1 + F.pmod(F.xxhash64(deleted_seq, F.lit(1)), F.lit(9_999_999))
    rows = spark.range(1, count + 1, numPartitions=parts).withColumnRenamed("id", "seq")
    return rows.select(
        seq,
        (seq % 2 == 1).alias("is_deleted"),
        (seq % 20 == 3).alias("is_bad"),  # odd: a FileDeletedEvent with a negative fileSize
        published,
        F.to_date(published).alias("published_date"),
        _uuid(deleted_seq, "event-").alias("deleted_event_id"),
        _uuid(seq, "trashed-").alias("trashed_event_id"),
        _uuid(deleted_seq, "file-").alias("file_id"),
        _uuid(seq, "trash-").alias("trash_id"),
        name.alias("file_name"),
        F.concat_ws("/", F.lit("/users"), user, folder, name).alias("file_path"),
        F.when(seq % 20 == 3, -size).otherwise(size).alias("file_size"),
        mime.alias("mime_type"),
        user.alias("user_id"),
        deleted_at.alias("deleted_at"),
        (deleted_at + F.expr("INTERVAL 500 MILLISECONDS")).alias("trashed_at"),
        (deleted_at + F.expr("INTERVAL 30 DAYS")).alias("expires_at"),
    )


def _payload(h: DataFrame) -> Column:
    deleted = F.struct(
        F.col("deleted_event_id").alias("eventId"),
        F.lit("FileDeletedEvent").alias("eventType"),
        _iso(F.col("deleted_at")).alias("timestamp"),
        F.struct(
            F.col("file_id").alias("fileId"),
            F.col("file_name").alias("fileName"),
            F.col("file_path").alias("filePath"),
            F.col("file_size").alias("fileSize"),
            F.col("mime_type").alias("mimeType"),
            F.col("user_id").alias("userId"),
            _iso(F.col("deleted_at")).alias("deletedAt"),
        ).alias("data"),
    )
    trashed = F.struct(
        F.col("trashed_event_id").alias("eventId"),
        F.lit("FilePlacedInTrashEvent").alias("eventType"),
        _iso(F.col("trashed_at")).alias("timestamp"),
        F.struct(
            F.col("trash_id").alias("trashId"),
            F.col("file_id").alias("fileId"),
            F.col("file_name").alias("fileName"),
            F.col("user_id").alias("userId"),
            _iso(F.col("trashed_at")).alias("trashedAt"),
            _iso(F.col("expires_at")).alias("expiresAt"),
            F.col("deleted_event_id").alias("originalEventId"),
        ).alias("data"),
    )
    text = F.when(F.col("is_deleted"), F.to_json(deleted)).otherwise(F.to_json(trashed))
    return F.encode(text, "UTF-8")


def build_history(spark: SparkSession, root: Path, count: int) -> None:
    """Bronze, silver and quarantine tables holding `count` processed history rows (with
    none, the tables exist and are empty: a pipeline that has run before)."""
    h = history_rows(spark, count)
    h = h.withColumn("payload", _payload(h))
    subject = F.when(F.col("is_deleted"), "files.deleted").otherwise("files.trashed")
    msg_id = F.when(F.col("is_deleted"), F.col("deleted_event_id")).otherwise(
        F.col("trashed_event_id")
    )
    bronze = h.select(
        F.lit(STREAM).alias("stream"),
        "seq",
        subject.alias("subject"),
        "published",
        "published_date",
        F.create_map(F.lit("Nats-Msg-Id"), msg_id).alias("headers"),
        "payload",
        msg_id.alias("msg_id"),
        F.lit("history").alias("ingest_run_id"),
        F.col("published").alias("ingested_at"),
    )  # the same columns and types as BRONZE_SCHEMA (nullable: Delta takes it either way)
    bronze.write.format("delta").partitionBy(*PARTITION_COLUMNS).save(str(root / "bronze"))
    source = {
        "stream": F.lit(STREAM),
        "subject": subject,
        "run_id": F.lit("history"),
        "processed_at": F.col("published"),
        "event_timestamp": F.col("deleted_at"),
    }
    good = h.where(~F.col("is_bad")).withColumns(source)
    deleted = good.where("is_deleted").withColumns(
        {"event_id": F.col("deleted_event_id"), "event_type": F.lit("FileDeletedEvent")}
    )
    trashed = good.where(~F.col("is_deleted")).withColumns(
        {
            "event_id": F.col("trashed_event_id"),
            "event_type": F.lit("FilePlacedInTrashEvent"),
            "event_timestamp": F.col("trashed_at"),
            "original_event_id": F.col("deleted_event_id"),
        }
    )
    bad = h.where("is_bad").select(
        F.lit(STREAM).alias("stream"),
        "seq",
        F.lit("files.deleted").alias("subject"),
        "published",
        "payload",
        F.col("deleted_event_id").alias("event_id"),
        F.lit("FileDeletedEvent").alias("event_type"),
        F.array(F.lit("file_size_in_range")).alias("failed_rules"),
        F.concat(F.lit("file_size_in_range: fileSize "), F.col("file_size").cast("string")).alias(
            "error"
        ),
        F.lit("bronze/file_events").alias("source_table"),
        F.lit("history").alias("run_id"),
        F.col("published").alias("quarantined_at"),
    )
    deleted_type = CONTRACT.event_type(FILE_DELETED_EVENT)
    trashed_type = CONTRACT.event_type(FILE_TRASHED_EVENT)
    for frame, name, schema, version in (
        (
            deleted,
            "file_deleted",
            silver_schema(deleted_type),
            event_type_version(CONTRACT, deleted_type),
        ),
        (
            trashed,
            "file_trashed",
            silver_schema(trashed_type),
            event_type_version(CONTRACT, trashed_type),
        ),
        (bad, "quarantine", QUARANTINE_SCHEMA, contract_version(CONTRACT)),
    ):
        # The contract that judged each row, as the stage records it (`contract_version`).
        frame = frame.withColumn("contract_version", F.lit(version))
        rows = frame.select(*schema.fieldNames()).to(schema)
        writer = rows.write.format("delta").options(**CHANGE_DATA_FEED)  # as the stage's
        writer.save(str(root / "silver" / name))


# -- the batch ---------------------------------------------------------------------------


def make_batch(
    spark: SparkSession, root: Path, history: int, size: int, bad_share: float, seed: int = 14
) -> tuple[pa.Table, dict[str, int]]:
    """`size` new bronze rows after the history, as Arrow, and the kinds they hold.

    The benchmark's own work, not the pipeline's: it generates the events and, when there is
    history, reads the history rows whose payloads half the duplicates copy (a scan of
    bronze that grows with it). Batches of the same `seed` hold the same events: a second one
    is all duplicates."""
    events = generate_event_mix(size, bad_share=bad_share, now=NOW, seed=seed)
    payloads = [e.payload for e in events]
    kinds = [e.kind for e in events]
    duplicates = [i for i, k in enumerate(kinds) if k == "duplicate_event_id"]
    copies = duplicates[::2] if history else []
    if copies:  # half the duplicates copy history events (both types) byte for byte
        seqs = [1 + (i * 7_919 * 2 + i % 2) % history for i in range(len(copies))]
        found = {
            r.seq: bytes(r.payload)
            for r in spark.read.format("delta")
            .load(str(root / "bronze"))
            .where(F.col("seq").isin(seqs))
            .select("seq", "payload")
            .collect()
        }
        for i, seq in zip(copies, seqs, strict=True):
            payloads[i] = found[seq]
            kinds[i] = "duplicate_of_history"
    first = history + 1
    published = [NOW + dt.timedelta(microseconds=i) for i in range(size)]
    trashed = b'"eventType":"FilePlacedInTrashEvent"'
    subjects = ["files.trashed" if trashed in p else "files.deleted" for p in payloads]
    table = pa.table(
        {
            "stream": [STREAM] * size,
            "seq": list(range(first, first + size)),
            "subject": subjects,
            "published": published,
            "published_date": [p.date() for p in published],
            "headers": [[("Nats-Msg-Id", e.msg_id)] for e in events],
            "payload": payloads,
            "msg_id": [e.msg_id for e in events],
            "ingest_run_id": ["batch"] * size,
            "ingested_at": published,
        },
        schema=BRONZE_ARROW_SCHEMA,
    )
    return table, {k: kinds.count(k) for k in sorted(set(kinds))}


def commit_batch(spark: SparkSession, root: Path, table: pa.Table) -> None:
    """Appends a batch to bronze as an ingest run commits it: one Delta commit tagged with
    the ingest's idempotent-write pair (`commit_idempotently`), the batch's first seq as its
    version."""
    _commit(spark.createDataFrame(table, BRONZE_SCHEMA), root, table.column("seq")[0].as_py())


def _commit(frame: DataFrame, root: Path, first: int) -> None:
    commit_idempotently(frame, str(root / "bronze"), app_id="bench-ingest", txn_version=first)


def append_batch(
    spark: SparkSession, root: Path, history: int, size: int, bad_share: float, seed: int = 14
) -> dict[str, int]:
    """`make_batch`, then its rows committed as `commit_batch` commits them, read from a
    Parquet file written first: over Spark Connect a local table travels as one task, and a
    batch of 1,000,000 rows (161 MiB) ran the server's 4 GiB heap out; returns the kinds
    appended."""
    table, kinds = make_batch(spark, root, history, size, bad_share, seed)
    first = table.column("seq")[0].as_py()
    staged = root / "staged" / f"{first}.parquet"
    staged.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, staged)
    _commit(spark.read.schema(BRONZE_SCHEMA).parquet(str(staged)), root, first)
    return kinds


# -- Spark's SQL metrics -----------------------------------------------------------------


class ScanMetrics:
    """Files and bytes read by the scans of the SQL executions since the last `take`."""

    def __init__(self, spark: SparkSession) -> None:
        sc = spark.sparkContext
        self.base = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/sql"
        self.seen = self._last_id()

    def _get(self, query: str) -> list[dict]:
        with urllib.request.urlopen(f"{self.base}?{query}", timeout=60) as response:
            return json.load(response)

    def _last_id(self) -> int:
        executions = self._get("details=false&offset=0&length=1000000")
        return max((e["id"] for e in executions), default=-1)

    def take(self) -> dict[str, int]:
        """Sums `number of files read` and `size of files read` over new executions."""
        executions = self._get("details=true&planDescription=false&offset=0&length=1000000")
        totals = {"sql_executions": 0, "files_read": 0, "bytes_read": 0, "scan_rows": 0}
        for execution in executions:
            if execution["id"] <= self.seen:
                continue
            totals["sql_executions"] += 1
            for node in execution.get("nodes", []):
                if not node["nodeName"].startswith("Scan"):
                    continue
                for metric in node.get("metrics", []):
                    value = _metric_total(metric["value"])
                    key = {
                        "number of files read": "files_read",
                        "size of files read": "bytes_read",
                        "number of output rows": "scan_rows",
                    }.get(metric["name"])
                    if key:
                        totals[key] += value
        self.seen = max([self.seen, *(e["id"] for e in executions)])
        return totals


_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def _metric_total(text: str) -> int:
    """A SQL metric's total from its UI text: "12", "1,234", "total (...)\\n3.4 MiB (...)"."""
    line = text.splitlines()[-1] if text.startswith("total") else text
    words = line.replace(",", "").split()
    if not words:
        return 0
    try:
        number = float(words[0])
    except ValueError:
        return 0
    unit = words[1] if len(words) > 1 and words[1] in _UNITS else "B"
    return int(number * _UNITS[unit])


# -- one history size ----------------------------------------------------------------------


def paths(root: Path) -> tuple[dict[str, str], GoldPaths]:
    """Silver's tables (event type, or "quarantine", -> path) and gold's."""
    silver_paths = {
        FILE_DELETED_EVENT: str(root / "silver" / "file_deleted"),
        FILE_TRASHED_EVENT: str(root / "silver" / "file_trashed"),
        "quarantine": str(root / "silver" / "quarantine"),
    }
    gold_paths = GoldPaths(
        file_deleted=silver_paths[FILE_DELETED_EVENT],
        daily_by_user=str(root / "gold" / "daily_by_user"),
        daily_by_mime_type=str(root / "gold" / "daily_by_mime_type"),
        expiring_files=str(root / "gold" / "expiring_files"),
    )
    return silver_paths, gold_paths


def one_history(spark, js, root: Path, history: int, args, batch: int) -> dict[str, object]:
    """Builds the history, then appends and processes one batch; returns each stage's cost."""
    root.mkdir(parents=True)
    silver_paths, gold_paths = paths(root)
    now = NOW + dt.timedelta(minutes=1)
    started = time.monotonic()
    build_history(spark, root, history)
    gold_stage.run_gold(spark, gold_paths, now=now)  # gold as the pipeline left it
    built = round(time.monotonic() - started, 1)
    watermarks = WatermarkStore(js.create_key_value(KeyValueSpec(f"bench_{root.name}")))
    if history:
        mark = watermarks.load(SILVER_STAGE)
        watermarks.save(
            Watermark(mark.stage, history, "history", NOW.isoformat(), {}, mark.revision)
        )
    quality = DataQualityResource()
    metrics = ScanMetrics(spark)
    stages: dict[str, dict[str, object]] = {}

    table, kinds = make_batch(spark, root, history, batch, args.bad_share)
    metrics.take()  # the scans made so far are the benchmark's own
    with PhaseMonitor("bronze_append") as phase:
        commit_batch(spark, root, table)
    stages["bronze_append"] = {**phase.report.to_dict(), **metrics.take(), "kinds": kinds}
    with PhaseMonitor("silver") as phase:
        result = run_contract_silver(
            spark,
            watermarks,
            CONTRACT,
            stream=STREAM,
            bronze_path=str(root / "bronze"),
            table_paths={name: silver_paths[name] for name in CONTRACT_TYPES},
            quarantine_path=silver_paths["quarantine"],
            stage=SILVER_STAGE,
            run_id="bench",
            now=now,
            source_table="bronze/file_events",
            validate=lambda frame, suite: quality.validate_dataframe(
                frame,
                suite,
                evaluated_at=now,
                meta={"run_id": "bench"},
                cache=False,  # the stage's frames are projections of a checkpoint
            ),
            mostly=0.95,  # the file trash declaration's check_mostly
        )
    stages["silver"] = {
        **phase.report.to_dict(),
        **metrics.take(),
        "rows_in": result.rows_in,
        "inserted": {
            "file_deleted": result.tables[FILE_DELETED_EVENT].inserted,
            "file_trashed": result.tables[FILE_TRASHED_EVENT].inserted,
            "quarantine": result.quarantine.inserted,
        },
        "quarantined_by_rule": result.quarantined_by_rule,
    }
    with PhaseMonitor("gold") as phase:
        gold = gold_stage.run_gold(spark, gold_paths, now=now)
    stages["gold"] = {
        **phase.report.to_dict(),
        **metrics.take(),
        "rows": {name: table.rows for name, table in gold.items()},
        "refresh": {name: [table.mode, table.buckets] for name, table in gold.items()},
    }
    verify(spark, silver_paths, history, batch, {**stages["silver"], "kinds": kinds})
    return {"history": history, "build_s": built, "stages": stages}


def verify(spark, silver_paths: dict[str, str], history: int, batch: int, figures) -> None:
    """Every bronze row is in exactly one silver table, and the batch's duplicates are caught."""
    total = sum(spark.read.format("delta").load(p).count() for p in silver_paths.values())
    if figures["rows_in"] != batch or total != history + batch:
        raise BenchError(f"silver holds {total} rows for {history} + {batch} bronze rows")
    kinds = figures.get("kinds", {})
    duplicates = figures["quarantined_by_rule"].get("event_id_unique", 0)
    if duplicates < kinds.get("duplicate_event_id", 0) + kinds.get("duplicate_of_history", 0):
        raise BenchError(f"only {duplicates} duplicates quarantined of {kinds}")


# -- the run -----------------------------------------------------------------------------


def cost(stage: dict) -> dict[str, float]:
    cpu = stage["cpu_s"]
    return {
        "wall_s": stage["wall_s"],
        "driver_cpu_s": cpu["driver"],
        "jvm_cpu_s": cpu["jvm"],
        "workers_cpu_s": cpu["python_workers"],
        "own_cpu_s": stage["own_cpu_s"],
        "files_read": stage["files_read"],
        "bytes_read": stage["bytes_read"],
    }


def ratios(runs: list[dict]) -> dict[str, dict[str, float | None]]:
    """cost(H max) / cost(H 0) per stage, for wall time and own CPU seconds."""
    low, high = runs[0]["stages"], runs[-1]["stages"]
    out = {}
    for name in STAGES:
        out[name] = {
            key: round(high[name][key] / low[name][key], 2) if low[name][key] else None
            for key in ("wall_s", "own_cpu_s", "bytes_read")
        }
    return out


def print_table(results: dict) -> None:
    print()
    print(
        f"batch={results['batch']:,}  bad share={results['bad_share']}  git={results['git']}  "
        f"python speed ms (start/end, lower is faster)={results['python_speed_ms']}"
    )
    print(
        f"{'H':>11} {'stage':<14}{'wall s':>8}{'driver':>8}{'jvm':>8}{'workers':>8}"
        f"{'files':>8}{'MiB read':>10}{'other cpu':>10}  load 1m"
    )
    for run in results["runs"]:
        for name in STAGES:
            s = run["stages"][name]
            c = s["cpu_s"]
            print(
                f"{run['history']:>11,} {name:<14}{s['wall_s']:>8.1f}{c['driver']:>8.1f}"
                f"{c['jvm']:>8.1f}{c['python_workers']:>8.1f}{s['files_read']:>8,}"
                f"{s['bytes_read'] / (1 << 20):>10.1f}{s['other_processes_cpu_s']:>10.1f}"
                f"  {s['loadavg_start'][0]:.2f}/{s['loadavg_end'][0]:.2f}"
            )
    print("(CPU seconds per process group; files/MiB read by Spark scans, Delta log included;")
    print(" other cpu = CPU seconds of every other process on the machine during the stage)")
    if len(results["runs"]) > 1:
        low, high = results["runs"][0]["history"], results["runs"][-1]["history"]
        print(f"cost(H={high:,}) / cost(H={low:,}), goal <= 1.3:")
        for name, r in results["ratios"].items():
            print(
                f"  {name:<14} wall {r['wall_s']}  own cpu {r['own_cpu_s']}  "
                f"bytes read {r['bytes_read']}"
            )


def freshness_arguments(value: str) -> list[str] | None:
    """`--freshness RATE:SECONDS` as `bench/freshness.py` arguments; None for `off`."""
    if value == "off":
        return None
    rate, _, seconds = value.partition(":")
    try:
        if float(rate) <= 0 or int(seconds) <= 0:
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--freshness {value!r}: expected RATE:SECONDS (events/s and seconds, e.g. 100:300)"
            " or off"
        ) from None
    return ["--rate", rate, "--seconds", seconds]


def print_goals(results: dict) -> None:
    """Issue 14's goals beside the figures of this run."""
    print()
    print("goals (issue 14):")
    for name, r in results.get("ratios", {}).items():
        verdict = "met" if r["wall_s"] is not None and r["wall_s"] <= 1.3 else "missed"
        print(f"  cost ratio {name:<14} wall {r['wall_s']} (goal <= 1.3): {verdict}")
    fresh = results.get("freshness")
    if fresh:
        silver = fresh["segments_s"]["publish_to_silver"]
        for key, goal in (("p50", 20), ("p95", 45)):
            value = silver[key]
            verdict = "met" if value is not None and value <= goal else "missed"
            print(f"  publish -> silver {key} {value} s (goal <= {goal} s): {verdict}")


def git_commit() -> str:
    return subprocess.run(
        ["git", "-C", str(REPO), "describe", "--always", "--dirty"], capture_output=True, text=True
    ).stdout.strip()


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--history", default="0,1000000,10000000", help="history sizes H")
    parser.add_argument("--batch", type=int, default=100_000, help="new bronze rows per run")
    parser.add_argument("--bad-share", type=float, default=0.05)
    parser.add_argument("--driver-memory", default="6g")
    parser.add_argument("--no-warmup", action="store_true", help="skip the H = 0 warm-up round")
    parser.add_argument("--warmup-batch", type=int, default=0, help="warm-up batch (--batch)")
    parser.add_argument("--out", type=Path, default=None, help="results JSON path")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (tables)")
    parser.add_argument(
        "--freshness",
        type=freshness_arguments,
        default="100:300",
        help="part 2, bench/freshness.py: RATE:SECONDS of the steady publish, or off",
    )
    args = parser.parse_args(argv)
    histories = sorted(int(h) for h in args.history.split(","))
    if any(h < 0 for h in histories) or args.batch < 1000:
        parser.error("--history sizes must be >= 0 and --batch >= 1000")
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = args.out or REPO / "bench" / "results" / f"pipeline-{stamp}.json"
    root = Path(tempfile.mkdtemp(prefix="jsl-pipeline-"))
    results: dict[str, object] = {
        "started": stamp,
        "batch": args.batch,
        "bad_share": args.bad_share,
        "git": git_commit(),
        "cpu_count": os.cpu_count(),
        "python_speed_ms": [python_speed_ms()],
        "runs": [],
    }
    print(f"history={histories} batch={args.batch} temp={root} load={os.getloadavg()}", flush=True)
    spark = SparkResource(
        ui_enabled=True,
        driver_memory=args.driver_memory,
        extra_conf={"spark.sql.ui.retainedExecutions": "100000", "spark.ui.port": "0"},
    ).get_session()
    try:
        with (
            EmbeddedNatsServer(store_dir=root / "jetstream") as server,
            JetStreamResource(servers=server.url).client() as js,
        ):
            if not args.no_warmup:
                one_history(spark, js, root / "warmup", 0, args, args.warmup_batch or args.batch)
                print("warm-up done", flush=True)
            for history in histories:
                run = one_history(spark, js, root / f"h{history}", history, args, args.batch)
                results["runs"].append(run)
                line = ", ".join(f"{n} {run['stages'][n]['wall_s']:.1f}s" for n in STAGES)
                print(f"H={history:,}: built in {run['build_s']}s; {line}", flush=True)
                if len(results["runs"]) > 1:
                    results["ratios"] = ratios(results["runs"])
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_text(json.dumps(results, indent=2, default=str))
        results["python_speed_ms"].append(python_speed_ms())
        out.write_text(json.dumps(results, indent=2, default=str))
    finally:
        spark.stop()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print_table(results)
    if args.freshness:
        import freshness  # the daemon's benchmark: Dagster imported only when it runs

        print(f"\nfreshness: bench/freshness.py {' '.join(args.freshness)}", flush=True)
        results["freshness"] = freshness.main(args.freshness)
        out.write_text(json.dumps(results, indent=2, default=str))
    print_goals(results)
    print(f"results: {out}")
    return results


if __name__ == "__main__":
    main()
