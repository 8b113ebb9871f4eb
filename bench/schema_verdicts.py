"""What judging real, large schemas costs (issue 50), in one run and one local session:

1. The verdict engine's rows/s against its ceiling: silver's `schema_valid` (the jsonschema-rs
   Arrow UDF, `pipelines.silver.schema_verdicts`) over a frame of the corpus's GitHub webhook
   payloads, against jsonschema-rs alone in a Python loop over the same texts (`json.loads`
   and `iter_errors`, the ceiling: no Spark, no Arrow).
2. The silver step (`parse_events`, `route`, the judged batch checkpointed and counted, as
   the stage does) for the large contract (the corpus's `--source`, GitHub webhooks by
   default: thousands of JSON paths) against a small one (the ORDERS contract, 20 rules),
   on `--batch` rows each: wall seconds for building the plan and for running it, and the
   ratio.
3. Loading the large contract from its files (what every `dg check defs`, launch and code
   server pays).

    .venv/bin/python bench/schema_verdicts.py [--batch 2000] [--runs 3] [--verdicts-only]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the corpus lives in tests/

from pyspark.sql import functions as F

from pipelines.contract import read_contract, read_json_schemas
from pipelines.ingest.bronze import BRONZE_SCHEMA
from pipelines.settings import PROJECT_DIR
from pipelines.silver import parse_events, route
from pipelines.silver.schema_verdicts import schema_errors
from resources.spark import SparkResource
from tests.pipelines.contract.corpus import corpus_events
from tests.pipelines.silver.test_corpus_verdicts import subject

ORDERS = PROJECT_DIR / "tests/pipelines/contract/fixtures/orders.yaml"
PUBLISHED = dt.datetime(2026, 11, 27, 12, 0, tzinfo=dt.timezone.utc)


def orders_payload(n: int) -> str:
    """A valid OrderPlaced of the ORDERS fixture contract, the `n`th."""
    return json.dumps(
        {
            "eventId": f"e-{n}",
            "eventType": "OrderPlaced",
            "occurredAt": "2026-11-21T10:00:00Z",
            "data": {"orderId": f"ORD-{n % 999999:06d}", "customerId": "c-1", "amount": 12.5,
                     "currency": "EUR"},
        }
    )  # fmt: skip


def _bronze(spark, messages: list[tuple[str, str]]):
    rows = [
        ("S", seq, subj, PUBLISHED, PUBLISHED.date(), None, text.encode(), None, "r", PUBLISHED)
        for seq, (subj, text) in enumerate(messages, 1)
    ]
    return spark.createDataFrame(rows, BRONZE_SCHEMA).localCheckpoint()


def schema_files(events) -> list[Path]:
    """Each corpus event's JSON Schema written to a file of its own, in a temp folder."""
    folder = Path(tempfile.mkdtemp())
    paths = [folder / f"{event.name}.schema.json" for event in events]
    for path, event in zip(paths, events, strict=True):
        path.write_text(json.dumps(event.schema))
    return paths


def _silver_step(bronze, contract) -> tuple[float, float]:
    """(seconds to build the plan, seconds to run it) for one batch, as the stage does."""
    start = time.perf_counter()
    parsed = parse_events(bronze, contract)
    planned = time.perf_counter()
    checked = parsed.localCheckpoint()
    batch = route(checked, contract, run_id="bench", now=PUBLISHED, source_table="bronze/x")
    for table in batch.tables.values():
        table.count()
    batch.quarantine.count()
    return planned - start, time.perf_counter() - planned


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--source", default="npm @octokit/webhooks-schemas")
    parser.add_argument("--verdicts-only", action="store_true", help="skip the silver step")
    args = parser.parse_args()

    events = [e for e in corpus_events() if e.source.startswith(args.source)]
    paths = schema_files(events)
    start = time.perf_counter()
    large = read_json_schemas(paths, subjects={e.name: [subject(e.name)] for e in events})
    load = time.perf_counter() - start
    small = read_contract(ORDERS)
    print(f"contract load: {load:.2f} s for {len(events)} schemas ({args.source})")

    examples = [(subject(e.name), x) for e in events for x in e.examples]
    messages = [examples[n % len(examples)] for n in range(args.batch)]
    checks = {e.name: e.schema_check for e in large.event_types if e.schema_check}
    by_subject = {subject(e.name): e.name for e in large.event_types}

    # 1. The ceiling: jsonschema-rs alone, each text parsed and judged in a Python loop.
    for check in checks.values():
        check.errors({})  # compiled before timing, as a worker keeps it
    ceiling = []
    for _ in range(args.runs):
        start = time.perf_counter()
        for subj, text in messages:
            check = checks.get(by_subject[subj])
            if check is not None:
                check.errors(json.loads(text))
        ceiling.append(args.batch / (time.perf_counter() - start))

    spark = SparkResource(ui_enabled=False, shuffle_partitions=2).get_session()
    bronze = _bronze(spark, messages)
    orders = _bronze(spark, [("orders.placed", orders_payload(n)) for n in range(args.batch)])
    engine = []
    for _ in range(args.runs):
        kinds = F.element_at(F.split(F.col("subject"), r"\.", 2), 2)
        names = {subject(e.name).split(".", 1)[1]: e.name for e in large.event_types}
        event_type = F.coalesce(*(F.when(kinds == k, F.lit(v)) for k, v in names.items()))
        errors = schema_errors(large, event_type, F.col("payload").cast("string"))
        frame = bronze.select(errors.alias("errors"))
        start = time.perf_counter()
        frame.agg(F.sum(F.size("errors"))).collect()
        engine.append(args.batch / (time.perf_counter() - start))
    rate, alone = statistics.median(engine), statistics.median(ceiling)
    print(
        f"verdicts, rows/s: engine {rate:,.0f}, jsonschema-rs alone {alone:,.0f} "
        f"(ratio {rate / alone:.2f})"
    )

    if args.verdicts_only:
        return
    big, little = [], []
    for _ in range(args.runs):
        big.append(_silver_step(bronze, large))
        little.append(_silver_step(orders, small))
    for name, runs, contract in (("large", big, large), ("small", little, small)):
        plan = statistics.median(r[0] for r in runs)
        run = statistics.median(r[1] for r in runs)
        print(
            f"silver step, {name} contract ({len(contract.event_types)} event types, "
            f"{len(contract.rules)} rules): plan {plan:.1f} s, run {run:.1f} s, "
            f"total {plan + run:.1f} s"
        )
    ratio = statistics.median(sum(r) for r in big) / statistics.median(sum(r) for r in little)
    print(f"silver step, large / small at {args.batch} rows: {ratio:.1f}x (goal <= 2x)")
    spark.stop()


if __name__ == "__main__":
    main()
