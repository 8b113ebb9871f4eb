"""Great Expectations on a silver-sized frame: in memory (pandas) against Spark, per batch size.

    .venv/bin/python bench/gx_engines.py [--rows 1000,10000,100000] [--runs 3] [--remote]

For each size, one frame shaped as a silver suite sees it (an orders event type's checks:
not-null, a unique id, UUID and pattern formats, an allowed set, a decimal range and a
not-in-future pair; 5% of the rows break one rule each) is checked three ways in the same
session, alternating run by run:

- **spark**: `validate_dataframe(..., pandas_max_rows=0)`, every check on Spark (the baseline,
  what ran before the in-memory engine);
- **in memory**: `validate_dataframe(...)` with its default limit (`PANDAS_MAX_ROWS`);
- **collect**: only collecting the checked columns as Arrow (the ceiling: what the in-memory
  engine cannot do without).

Prints the median and range of each, the ratios spark / in memory and in memory / collect,
and checks that both engines gave the same outcomes. Run 0 of each size is the first (cold
plans); the medians are of all runs. `--remote` runs over a Spark Connect server started as
`make dev` starts one.
"""

from __future__ import annotations

import argparse
import datetime as dt
import signal
import statistics
import tempfile
import time
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from sampling import stop_on_signal

from resources.quality import QualityCheck, QualitySuite, validate_dataframe
from resources.quality.in_memory import PANDAS_MAX_ROWS
from resources.spark import SparkResource, SparkSettings
from resources.spark_connect import ConnectServer

NOW = dt.datetime(2026, 11, 26, 12, 0, tzinfo=dt.timezone.utc)
UUID = r"^[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\z"


def _check(name: str, expectation: str, **kwargs) -> QualityCheck:
    return QualityCheck(
        name=name,
        rule=name,
        description=name,
        critical=True,
        expectation=expectation,
        kwargs=kwargs,
    )


SUITE = QualitySuite(
    name="silver/orders_placed",
    checks=(
        *(
            _check(f"{c}_not_null", "ExpectColumnValuesToNotBeNull", column=c, mostly=1.0)
            for c in ("event_id", "order_id", "customer_id", "amount", "currency", "occurred_at")
        ),
        _check("event_id_unique", "ExpectColumnValuesToBeUnique", column="event_id", mostly=1.0),
        _check("event_id_format", "ExpectColumnValuesToMatchRegex", column="event_id", regex=UUID),
        _check(
            "order_id_pattern",
            "ExpectColumnValuesToMatchRegex",
            column="order_id",
            regex=r"^ord-[0-9]{6}\z",
        ),
        _check(
            "currency_in_set",
            "ExpectColumnValuesToBeInSet",
            column="currency",
            value_set=["EUR", "USD", "GBP"],
        ),
        _check(
            "amount_in_range",
            "ExpectColumnValuesToBeBetween",
            column="amount",
            min_value=0,
            max_value=100000,
        ),
        _check(
            "occurred_at_not_in_future",
            "ExpectColumnPairValuesAToBeGreaterThanB",
            column_A="occurred_at__latest",
            column_B="occurred_at",
            or_equal=True,
            ignore_row_if="either_value_is_missing",
        ),
    ),
)


def frame(spark, rows: int):
    """`rows` rows; every 20th breaks one rule (a bad order id, currency or amount)."""
    i = F.col("id")
    bad = i % 20 == 0
    return spark.range(rows).select(
        F.expr("uuid()").alias("event_id"),
        F.when(bad & (i % 60 == 0), F.lit("ORD-1"))
        .otherwise(F.format_string("ord-%06d", i % 1000000))
        .alias("order_id"),
        F.format_string("c-%d", i % 997).alias("customer_id"),
        F.when(bad & (i % 60 == 20), F.lit(-1))
        .otherwise(i % 5000)
        .cast("decimal(12,2)")
        .alias("amount"),
        F.when(bad & (i % 60 == 40), F.lit("XXX")).otherwise(F.lit("EUR")).alias("currency"),
        F.lit(NOW).cast("timestamp").alias("occurred_at"),
        (F.lit(NOW).cast("timestamp") + F.expr("INTERVAL 5 MINUTES")).alias("occurred_at__latest"),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1000,10000,100000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--remote", action="store_true", help="over a Spark Connect server")
    parser.add_argument("--driver-memory", default="4g")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, stop_on_signal)  # the Connect server is stopped on a kill
    root = Path(tempfile.mkdtemp(prefix="jsl-gx-engines-"))
    server = None
    if args.remote:
        settings = SparkSettings.resolve(driver_memory=args.driver_memory)
        server = ConnectServer(settings, root / "spark-connect.log").start()
        spark = SparkSession.builder.remote(server.url).getOrCreate()
    else:
        spark = SparkResource(driver_memory=args.driver_memory).get_session()
    columns = sorted({c for check in SUITE.checks for c in _columns(check)})
    print(f"in-memory limit {PANDAS_MAX_ROWS:,} rows; {len(SUITE.checks)} checks")
    print(
        f"{'rows':>9} | {'spark (s)':>18} | {'in memory (s)':>18} | {'collect (s)':>18} | "
        "spark/in memory | in memory/collect"
    )
    try:
        for rows in (int(r) for r in args.rows.split(",")):
            df = frame(spark, rows).localCheckpoint()
            times: dict[str, list[float]] = {"spark": [], "memory": [], "collect": []}
            for _ in range(args.runs):
                on_spark = _timed(
                    times["spark"],
                    validate_dataframe,
                    df,
                    SUITE,
                    evaluated_at=NOW,
                    pandas_max_rows=0,
                )
                in_memory = _timed(times["memory"], validate_dataframe, df, SUITE, evaluated_at=NOW)
                _timed(times["collect"], _collect, df, columns)
                same = [o.to_dict() for o in on_spark.outcomes] == [
                    o.to_dict() for o in in_memory.outcomes
                ]
                if not same:
                    raise SystemExit(f"{rows} rows: the engines' outcomes differ")
            spark_s, memory_s, collect_s = (statistics.median(times[k]) for k in times)
            print(
                f"{rows:>9,} | {_spread(times['spark']):>18} | {_spread(times['memory']):>18} | "
                f"{_spread(times['collect']):>18} | {spark_s / memory_s:>15.1f} | "
                f"{memory_s / collect_s:>17.1f}"
            )
            print(f"{'':>9}   in memory: {in_memory.meta['engines']}")
            df.unpersist()
    finally:
        spark.stop()
        if server is not None:
            server.stop()


def _columns(check: QualityCheck) -> list[str]:
    return [check.kwargs[k] for k in ("column", "column_A", "column_B") if k in check.kwargs]


def _collect(df, columns: list[str]):
    return df.select(*columns).toArrow()


def _timed(into: list[float], call, *args, **kwargs):
    start = time.perf_counter()
    result = call(*args, **kwargs)
    into.append(time.perf_counter() - start)
    return result


def _spread(times: list[float]) -> str:
    return f"{statistics.median(times):.2f} ({min(times):.2f}-{max(times):.2f})"


if __name__ == "__main__":
    main()
