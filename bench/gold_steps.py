"""Where a gold run's time goes (issue 14): `run_gold` repeated, each step of the refresh timed.

Builds `bench/pipeline.py`'s history of H rows (silver with the change data feed on, gold
computed from it), then `--runs` times: appends `--batch` copies of history rows to
`silver/file_deleted` with new seqs and a `deleted_at` on the day before `NOW` (one day
changed), runs `gold_stage.run_gold` and prints its wall time, its SQL executions and MiB
read (Spark's SQL metrics) and the seconds spent in each step of
`pipelines.lakehouse.refresh` (calls after the slash). The first runs pay for the JIT:
compare runs of the same index across commits, run one right after the other on a quiet
machine.

    .venv/bin/python bench/gold_steps.py --history 1000000 --runs 4
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import shutil
import tempfile
import time
from pathlib import Path

import pipeline as bench
from pyspark.sql import functions as F
from sampling import time_calls

import pipelines.lakehouse.refresh as refresh
from pipelines.file_trash import gold_stage
from resources.spark import SparkResource

# The steps timed, as pipelines.lakehouse.refresh names them; older commits had other steps (their
# `table_version`, `_table_id` and `_plan`), timed when present to compare across commits.
STEPS = (
    "read_source",
    "table_version",
    "_table_id",
    "last_data_write",
    "_plan",
    "_changed_buckets",
    "_write",
    "last_commits",
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--history", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=10_000, help="silver rows per run")
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--driver-memory", default="6g")
    args = parser.parse_args(argv)
    spent: dict[str, float] = collections.defaultdict(float)
    calls: collections.Counter = collections.Counter()
    steps = [name for name in STEPS if hasattr(refresh, name)]
    for name in steps:
        time_calls(spent, calls, refresh, name, gold_stage)
    spark = SparkResource(
        ui_enabled=True,
        driver_memory=args.driver_memory,
        extra_conf={"spark.sql.ui.retainedExecutions": "100000", "spark.ui.port": "0"},
    ).get_session()
    root = Path(tempfile.mkdtemp(prefix="jsl-gold-steps-"))
    try:
        silver_paths, gold_paths = bench.paths(root)
        bench.build_history(spark, root, args.history)
        now = bench.NOW + dt.timedelta(minutes=1)
        gold_stage.run_gold(spark, gold_paths, now=now)
        silver = silver_paths[bench.FILE_DELETED_EVENT]
        rows = spark.read.format("delta").load(silver).limit(args.batch).cache()
        rows.count()
        metrics = bench.ScanMetrics(spark)
        for run in range(args.runs):
            changed = rows.withColumns(
                {
                    "seq": F.col("seq") + args.history + args.batch * (run + 1),
                    "deleted_at": F.lit(now - dt.timedelta(hours=20)).cast("timestamp"),
                }
            )
            changed.write.format("delta").mode("append").save(silver)
            spent.clear()
            calls.clear()
            metrics.take()
            started = time.perf_counter()
            tables = gold_stage.run_gold(spark, gold_paths, now=now)
            wall = time.perf_counter() - started
            taken = metrics.take()
            timed = " ".join(f"{n} {spent[n]:.2f}s/{calls[n]}" for n in steps)
            modes = ", ".join(f"{n} {t.mode}" for n, t in tables.items())
            print(
                f"run {run}: {wall:.2f}s, {taken['sql_executions']} SQL executions, "
                f"{taken['bytes_read'] / 2**20:.1f} MiB read; {timed}; {modes}",
                flush=True,
            )
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
