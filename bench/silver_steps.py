"""Where a silver run's time goes (issue 14): `run_contract_silver` repeated, each step timed.

In a fresh table root: `bench/pipeline.py`'s history of H rows (bronze and silver consistent,
the watermark at H), then `--runs` times: `--batch` new bronze rows are appended
(`bench/pipeline.py`'s `append_batch`: `generate_event_mix` with a seed of its own per run,
`--bad-share` of them bad) and the silver stage runs as the silver asset runs it (the file
trash contract, `check_mostly` 0.95, the Great Expectations suites of `DataQualityResource`).
Each run prints its wall time and the seconds spent in each step of `pipelines.silver.stage`
(calls after the slash):

- `table_version`: bronze's latest version;
- `prepare_tables`: each silver and quarantine table made to fit the contract (created if
  missing, evolved if the contract changed), with its version;
- `_count`: each check's failing rows and each table's incoming rows, one aggregate over
  the judged batch's checkpoint;
- `_validate`: the Great Expectations suites;
- `merge_new_rows`: the insert-only MERGEs into each table and the quarantine;
- the rest (`other`): the batch's bounds (the first job, which reads bronze's `seq`), the
  local checkpoints of the parsed batch, of the prior keys (which reads the silver tables'
  keys) and of the judged batch (de-duplication, the rules, routing), and the watermark.

`--remote` runs it over a Spark Connect server started as `make dev` starts one (what the
runs of `make dev` use); without it, a local session in this process. The first runs pay for
the JIT and the server's warm-up: compare runs of the same index across commits, run one
right after the other on a quiet machine.

With `--remote`, `--calls N` also prints, after each run, the N lines of the project whose
Spark Connect requests took longest (`bench/connect_calls.py`): each step's Spark jobs,
schema lookups and commands, by the line that made them.

    .venv/bin/python bench/silver_steps.py --remote --batch 3000 --runs 5
    .venv/bin/python bench/silver_steps.py --remote --batch 3000 --runs 4 --calls 12
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import datetime as dt
import shutil
import signal
import tempfile
import time
from pathlib import Path

import pipeline as bench
from connect_calls import ConnectCalls
from pyspark.sql import SparkSession
from sampling import stop_on_signal, time_calls

import pipelines.silver.stage as stage
from pipelines.lakehouse.watermarks import Watermark, WatermarkStore
from resources.jetstream import EmbeddedNatsServer, JetStreamResource, KeyValueSpec
from resources.quality import DataQualityResource
from resources.spark import SparkResource, SparkSettings
from resources.spark_connect import ConnectServer

STEPS = ("table_version", "prepare_tables", "_count", "_validate", "merge_new_rows")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--history", type=int, default=0)
    parser.add_argument("--batch", type=int, default=3_000, help="new bronze rows per run")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--bad-share", type=float, default=0.05)
    parser.add_argument("--remote", action="store_true", help="over a Spark Connect server")
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument(
        "--calls", type=int, default=0, help="with --remote: the N costliest request lines"
    )
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, stop_on_signal)  # the Connect server is stopped on a kill
    if args.calls and not args.remote:
        parser.error("--calls counts Spark Connect requests: it needs --remote")
    spent: dict[str, float] = collections.defaultdict(float)
    calls: collections.Counter = collections.Counter()
    for name in STEPS:
        time_calls(spent, calls, stage, name)
    root = Path(tempfile.mkdtemp(prefix="jsl-silver-steps-"))
    server = spark = None
    requests = ConnectCalls()
    try:
        if args.remote:
            settings = SparkSettings.resolve(driver_memory=args.driver_memory)
            server = ConnectServer(settings, root / "spark-connect.log").start()
            spark = SparkSession.builder.remote(server.url).getOrCreate()
        else:
            spark = SparkResource(driver_memory=args.driver_memory).get_session()
        with (
            EmbeddedNatsServer(store_dir=root / "jetstream") as nats,
            JetStreamResource(servers=nats.url).client() as js,
        ):
            silver_paths, _ = bench.paths(root)
            bench.build_history(spark, root, args.history)
            watermarks = WatermarkStore(js.create_key_value(KeyValueSpec("silver_steps")))
            if args.history:
                mark = watermarks.load(bench.SILVER_STAGE)
                watermarks.save(
                    Watermark(
                        mark.stage,
                        args.history,
                        "history",
                        bench.NOW.isoformat(),
                        {},
                        mark.revision,
                    )
                )
            quality = DataQualityResource()
            now = bench.NOW + dt.timedelta(minutes=1)
            total = args.history
            for run in range(args.runs):
                # a seed per run: new events each time, not copies of the last batch's
                bench.append_batch(spark, root, total, args.batch, args.bad_share, seed=14 + run)
                total += args.batch
                spent.clear()
                calls.clear()
                requests.clear()
                started = time.perf_counter()
                with requests if args.calls else contextlib.nullcontext():
                    result = stage.run_contract_silver(
                        spark,
                        watermarks,
                        bench.CONTRACT,
                        stream=bench.STREAM,
                        bronze_path=str(root / "bronze"),
                        table_paths={n: silver_paths[n] for n in bench.CONTRACT_TYPES},
                        quarantine_path=silver_paths["quarantine"],
                        stage=bench.SILVER_STAGE,
                        run_id=f"run-{run}",
                        now=now,
                        source_table="bronze/file_events",
                        validate=lambda frame, suite: quality.validate_dataframe(
                            frame,
                            suite,
                            evaluated_at=now,
                            meta={"run_id": "bench"},
                            cache=False,  # the stage's frames are projections of a checkpoint
                        ),
                        mostly=0.95,
                    )
                wall = time.perf_counter() - started
                other = wall - sum(spent.values())
                timed = " ".join(f"{n} {spent[n]:.2f}s/{calls[n]}" for n in STEPS)
                print(
                    f"run {run}: {wall:.2f}s for {result.rows_in} rows; {timed} other {other:.2f}s",
                    flush=True,
                )
                if args.calls:
                    requests.print_top(args.calls)
    finally:
        # The session first: a Spark Connect session left open retries, at exit, to release
        # itself on the stopped server, and the process sleeps between tries for minutes.
        if spark is not None:
            spark.stop()
        if server is not None:
            server.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
