"""Runs one quarantine retry in this process and SIGKILLs itself right after a table write.

Used by `test_rejudge_killed.py` to kill a retry for real: no `finally`, no lease given up,
no intent deleted; the JVM this process started exits with it.

    python -m tests.pipelines.silver.rejudge_child NATS_URL BUCKET ROOT AFTER RUN_ID

Exits 0 if the retry finished with fewer than AFTER writes.
"""

from __future__ import annotations

import os
import signal
import sys

from pipelines.lakehouse.watermarks import WatermarkStore
from pipelines.silver.rejudge import rejudge
from pipelines.silver.rejudge_intent import Selection
from pipelines.silver.stage import QUARANTINE
from resources.jetstream import JetStreamResource, KeyValueSpec
from resources.spark import SparkResource
from tests.pipelines.silver.contract_changes import (
    NOW,
    STAGE,
    STREAM,
    FaultAfter,
    orders,
    paths,
)
from tests.table_roots import root_of

# The contract after the fix: GBP admitted (the test's first contract refuses it).
LOOSE = {"data.orderId": {"required": True}, "data.currency": {"enum": ["EUR", "USD", "GBP"]}}


def _kill(done: int) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def main(argv: list[str]) -> int:
    url, bucket, root, after, run_id = argv
    contract = orders(LOOSE)
    killer = FaultAfter(int(after), _kill)
    spark = SparkResource(ui_enabled=False, shuffle_partitions=2, driver_memory="1g")
    session = spark.get_session()
    with JetStreamResource(servers=url, connect_timeout=5, request_timeout=5).client() as js:
        store = WatermarkStore(js.create_key_value(KeyValueSpec(bucket)))
        rejudge(
            session, store, contract, stream=STREAM, stage=STAGE, run_id=run_id, now=NOW,
            selection=Selection(quarantined_only=True), source_table="bronze/orders",
            writes={target: killer for target in ("OrderPlaced", QUARANTINE)},
            **paths(root_of(root), contract),
        )  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
