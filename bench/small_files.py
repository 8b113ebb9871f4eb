"""Small files benchmark (issue 14): a bronze table after many small ingest commits.

An ingest run started by the stream sensor commits whatever arrived since the last one, so a
trickle of events makes many small commits, each adding a file per reader task. This
benchmark makes `--runs` such commits of `--batch` bronze rows each (the rows
`bench/pipeline.py` builds as history, one day partition, split over `--readers` files as
the ingest's reader tasks split them) through the ingest's own commit
(`pipelines.ingest.bronze.commit_idempotently`), into one table per variant:

- `plain`: the table as the ingest creates it today;
- `auto compaction`: the table property `delta.autoOptimize.autoCompact` set after its first
  commit, so Delta compacts a partition's small files after a commit once there are enough
  of them (`spark.databricks.delta.autoCompact.minNumFiles`, 50 by default);
- `plain, then OPTIMIZE`: the plain table after the maintenance job's compaction
  (`pipelines.lakehouse.delta_tables.optimize`), run once at the end.

For each it prints the files in the current version, the data files on disk (all of them
stay until VACUUM deletes those no version within its retention needs), the commits in the
log, the wall time per commit (median and p95: it
includes any compaction the commit triggered) and the time of two reads at the end, a
`count()` and a one-seq lookup, each the median of three.

    .venv/bin/python bench/small_files.py --runs 500 --batch 100
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from pipeline import REPO, build_history, git_commit
from pyspark.sql import functions as F

from pipelines.ingest.bronze import commit_idempotently
from pipelines.lakehouse.delta_tables import delta_path, optimize
from resources.spark import SparkResource

AUTO_COMPACT = "delta.autoOptimize.autoCompact"


def files_in_version(spark, path: str) -> int:
    """Data files in the table's current version."""
    return spark.sql(f"DESCRIBE DETAIL {delta_path(path)}").collect()[0]["numFiles"]


def files_on_disk(path: Path) -> int:
    """Data files under the table's directory (the log's checkpoints not counted)."""
    return sum(1 for p in path.rglob("*.parquet") if "_delta_log" not in p.parts)


def commits(path: Path) -> int:
    return sum(1 for _ in (path / "_delta_log").glob("*.json"))


def timed_read(spark, path: str, seq: int) -> dict[str, float]:
    """Median of three: a full count, and the rows of one seq."""
    counts, lookups = [], []
    for _ in range(3):
        started = time.perf_counter()
        spark.read.format("delta").load(path).count()
        counts.append(time.perf_counter() - started)
        started = time.perf_counter()
        spark.read.format("delta").load(path).where(f"seq = {seq}").collect()
        lookups.append(time.perf_counter() - started)
    return {"count_s": statistics.median(counts), "lookup_s": statistics.median(lookups)}


def table_figures(spark, path: Path, seq: int) -> dict[str, object]:
    return {
        "files_in_version": files_in_version(spark, str(path)),
        "files_on_disk": files_on_disk(path),
        "commits": commits(path),
        **timed_read(spark, str(path), seq),
    }


def run_variant(spark, source, path: Path, runs: int, batch: int, readers: int, auto: bool):
    """`runs` commits of `batch` rows each into a new table at `path`; the per-commit times."""
    took = []
    for run in range(runs):
        rows = source.where(f"seq > {run * batch} AND seq <= {(run + 1) * batch}")
        started = time.perf_counter()
        commit_idempotently(
            rows.repartition(readers), str(path), app_id="bench-small-files", txn_version=run + 1
        )
        took.append(time.perf_counter() - started)
        if run == 0 and auto:
            spark.sql(
                f"ALTER TABLE {delta_path(str(path))} SET TBLPROPERTIES ({AUTO_COMPACT!r} = 'true')"
            )
        if (run + 1) % 100 == 0:
            print(f"  {run + 1} commits, last {took[-1]:.2f}s", flush=True)
    return {
        "commit_s_p50": statistics.median(took),
        "commit_s_p95": sorted(took)[int(0.95 * (len(took) - 1))],
        "commits_total_s": sum(took),
    }


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=500, help="small commits per variant")
    parser.add_argument("--batch", type=int, default=100, help="rows per commit")
    parser.add_argument("--readers", type=int, default=2, help="files per commit")
    parser.add_argument("--out", type=Path, default=None, help="results JSON path")
    args = parser.parse_args(argv)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = args.out or REPO / "bench" / "results" / f"small-files-{stamp}.json"
    root = Path(tempfile.mkdtemp(prefix="jsl-small-files-"))
    total = args.runs * args.batch
    results: dict[str, object] = {
        "started": stamp,
        "git": git_commit(),
        "runs": args.runs,
        "batch": args.batch,
        "readers": args.readers,
        "loadavg_start": os.getloadavg(),
        "variants": {},
    }
    spark = SparkResource(extra_conf={"spark.ui.enabled": "false"}).get_session()
    try:
        build_history(spark, root / "source", total)
        # A trickle lands today's events: one day partition, as a live stream's would.
        today = F.lit(dt.date.today())
        source = spark.read.format("delta").load(str(root / "source" / "bronze"))
        source = source.withColumn("published_date", today).cache()
        source.count()
        for name, auto in (("plain", False), ("auto compaction", True)):
            print(f"{name}: {args.runs} commits of {args.batch} rows", flush=True)
            path = root / name.replace(" ", "_")
            figures = run_variant(spark, source, path, args.runs, args.batch, args.readers, auto)
            figures.update(table_figures(spark, path, total // 2))
            results["variants"][name] = figures
        plain = root / "plain"
        started = time.perf_counter()
        optimize(spark, str(plain))
        optimized = {"optimize_s": time.perf_counter() - started}
        optimized.update(table_figures(spark, plain, total // 2))
        results["variants"]["plain, then OPTIMIZE"] = optimized
        results["loadavg_end"] = os.getloadavg()
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=2))
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)
    print(f"\n{args.runs} commits of {args.batch} rows, {args.readers} files each")
    print(
        f"{'variant':<22}{'files now':>10}{'on disk':>9}{'commits':>9}{'commit p50':>11}"
        f"{'p95':>7}{'count s':>9}{'lookup s':>9}"
    )
    nan = float("nan")
    for name, v in results["variants"].items():
        print(
            f"{name:<22}{v['files_in_version']:>10}{v['files_on_disk']:>9}{v['commits']:>9}"
            f"{v.get('commit_s_p50', nan):>11.2f}{v.get('commit_s_p95', nan):>7.2f}"
            f"{v['count_s']:>9.2f}{v['lookup_s']:>9.2f}"
        )
    print(f"git {results['git']}, load {results['loadavg_start']} -> {results['loadavg_end']}")
    print(f"results: {out}")
    return results


if __name__ == "__main__":
    main()
