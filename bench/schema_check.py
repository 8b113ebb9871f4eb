"""What a silver run's schema check costs: `prepare_tables` on tables that already fit the
contract (the common case), against the `ensure_table` it replaced, in one warm session.

    .venv/bin/python bench/schema_check.py [--runs 7]

Prints the median and range of each over `--runs` calls, on the ORDERS contract's three
tables (two event types and the quarantine), and the ratio. Local Spark; over Spark Connect
each request costs more (docs/performance.md).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from pipelines.contract import read_contract
from pipelines.lakehouse.delta_tables import CHANGE_DATA_FEED, ensure_table
from pipelines.settings import PROJECT_DIR
from pipelines.silver.evolution import prepare_tables
from pipelines.silver.stage import table_plans
from resources.spark import SparkResource

CONTRACT = PROJECT_DIR / "tests/pipelines/contract/fixtures/orders.yaml"


def _timed(call, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    contract = read_contract(CONTRACT)
    spark = SparkResource(ui_enabled=False, shuffle_partitions=2).get_session()
    root = Path(tempfile.mkdtemp(prefix="schema_check_"))
    plans = table_plans(
        contract,
        spark,
        table_paths={e.name: str(root / e.table) for e in contract.event_types},
        quarantine_path=str(root / "quarantine/orders"),
        quarantine_name="quarantine/orders",
    )
    prepare_tables(spark, list(plans.values()))  # creates them; then every call finds them fit
    checked = _timed(lambda: prepare_tables(spark, list(plans.values())), args.runs)
    ensured = _timed(
        lambda: [
            ensure_table(spark, p.path, p.schema, properties=CHANGE_DATA_FEED)
            for p in plans.values()
        ],
        args.runs,
    )
    for name, times in (("prepare_tables (now)", checked), ("ensure_table (before)", ensured)):
        print(
            f"{name:22} median {statistics.median(times):.3f} s "
            f"(min {min(times):.3f}, max {max(times):.3f}) over {args.runs} calls, 3 tables"
        )
    print(f"ratio now/before: {statistics.median(checked) / statistics.median(ensured):.2f}")


if __name__ == "__main__":
    main()
