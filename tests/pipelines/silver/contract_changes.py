"""What the contract-change tests share: a small ORDERS contract to change, bronze rows of
given payloads, a stage run and the invariant "each bronze row in exactly one table".

The contract is built from a dict (as a defs.yaml holds it) so that each test changes one
thing: `orders(...)` takes the OrderPlaced fields, `unknown_fields` and the extra event types.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from collections import Counter

from pyspark.errors import AnalysisException
from pyspark.sql import functions as F

from pipelines.contract import contract_from_dict
from pipelines.ingest.bronze import BRONZE_SCHEMA
from pipelines.silver.rejudge import rejudge
from pipelines.silver.rejudge_intent import Selection
from pipelines.silver.rejudge_writes import MERGE_WRITES
from pipelines.silver.stage import QUARANTINE, run_contract_silver

STREAM = "ORDERS"
STAGE = "silver.orders"
PUBLISHED = dt.datetime(2026, 11, 21, 10, 0, tzinfo=dt.timezone.utc)
NOW = PUBLISHED + dt.timedelta(hours=1)
PLACED_FIELDS = {
    "data.orderId": {"required": True},
    "data.amount": "decimal(12,2)",
    "data.quantity": "integer",
    "data.currency": {"enum": ["EUR", "USD"]},
}


def orders(fields=None, *, unknown_fields="ignore", more_events=None, version=None):
    """The ORDERS contract: OrderPlaced with `fields` (default `PLACED_FIELDS`)."""
    events = {
        "OrderPlaced": {
            "table": "silver/orders_placed",
            "unknown_fields": unknown_fields,
            "fields": copy.deepcopy(PLACED_FIELDS if fields is None else fields),
        }
    }
    events.update(more_events or {})
    data = {
        "envelope": {
            "event_type": "eventType",
            "event_id": "eventId",
            "fields": {"eventId": {"required": True}, "eventType": {"required": True}},
        },
        "events": events,
    }
    if version:
        data["version"] = version
    return contract_from_dict(data)


def placed(n: int, **data) -> dict:
    """An OrderPlaced message with event id `evt-<n>` and `data`."""
    return {"eventId": f"evt-{n}", "eventType": "OrderPlaced", "data": {"orderId": f"o{n}", **data}}


def paths(table_root, contract) -> dict:
    return {
        "bronze_path": str(table_root / "bronze/orders"),
        "table_paths": {e.name: str(table_root / e.table) for e in contract.event_types},
        "quarantine_path": str(table_root / "quarantine/orders"),
    }


def land(spark, table_root, messages, first_seq: int) -> None:
    """Appends bronze rows of `messages` (dicts as JSON, or raw text), seqs from `first_seq`."""
    rows = []
    for offset, message in enumerate(messages):
        text = message if isinstance(message, str) else json.dumps(message)
        rows.append(
            (
                STREAM,
                first_seq + offset,
                "orders.placed",
                PUBLISHED,
                PUBLISHED.date(),
                None,
                text.encode(),
                None,
                "ingest",
                NOW,
            )
        )
    frame = spark.createDataFrame(rows, BRONZE_SCHEMA)
    frame.write.format("delta").mode("append").save(str(table_root / "bronze/orders"))


def run(spark, store, table_root, contract, run_id="run", **options):
    return run_contract_silver(
        spark, store, contract, stream=STREAM, stage=STAGE, run_id=run_id, now=NOW,
        source_table="bronze/orders", **paths(table_root, contract), **options,
    )  # fmt: skip


def rebuild(spark, store, table_root, contract, run_id="rebuild", **selection):
    """`jsl silver rebuild` of the ORDERS stage: every row in the selection judged again."""
    return rejudge(
        spark, store, contract, stream=STREAM, stage=STAGE, run_id=run_id, now=NOW,
        source_table="bronze/orders", selection=Selection(quarantined_only=False, **selection),
        **paths(table_root, contract),
    )  # fmt: skip


class FaultAfter:
    """Table writes of a rejudge as the MERGE makes them, calling `fault(n)` right after the
    `after`-th (None: never; `done` counts them either way): a crash at a chosen point."""

    def __init__(self, after: int | None = None, fault=None) -> None:
        self.after, self.fault, self.done = after, fault, 0

    def _count(self) -> None:
        self.done += 1
        if self.done == self.after:
            self.fault(self.done)

    def upsert(self, spark, rows, path, seqs):
        MERGE_WRITES.upsert(spark, rows, path, seqs)
        self._count()

    def delete(self, spark, keys, path, seqs):
        MERGE_WRITES.delete(spark, keys, path, seqs)
        self._count()


def table(spark, path, *columns) -> list[tuple]:
    """The table's rows as tuples of `columns` (all if none), ordered by seq."""
    frame = spark.read.format("delta").load(path)
    return [tuple(r) for r in frame.orderBy("seq").select(*(columns or frame.columns)).collect()]


def assert_each_bronze_row_once(spark, table_root, contract, store) -> None:
    """Each bronze seq up to the watermark is in exactly one silver table or quarantine."""
    upto = store.load(STAGE).position
    every = {**paths(table_root, contract)["table_paths"]}
    every[QUARANTINE] = str(table_root / "quarantine/orders")
    found: Counter = Counter()
    for path in every.values():
        try:
            seqs = spark.read.format("delta").load(path).select("seq").collect()
        except AnalysisException:  # a table not created yet holds no row
            continue
        found.update(r.seq for r in seqs)
    bronze = spark.read.format("delta").load(str(table_root / "bronze/orders"))
    expected = {r.seq for r in bronze.where(F.col("seq") <= upto).select("seq").collect()}
    assert {seq for seq, n in found.items() if n > 1} == set(), "bronze rows in two tables"
    assert expected - set(found) == set(), "bronze rows in no table"
    assert set(found) - expected == set(), "rows from no bronze row"
