"""A quarantine retry SIGKILLed after each of its table writes, then run again: each bronze row
ends in exactly one table, with the contents of a retry never killed.

The retry runs in a child process with its own JVM (`rejudge_child.py`), which kills itself
for real right after its N-th write; the rerun here finds the dead run's intent, waits out
its lease (a clock past it) and finishes it first. The kill after the second write (between
the two tables of one phase) runs on the S3 server too, and so does a retry started while a
stage run writes (the stage's writer lease, `pipelines.silver.writer`).
"""

from __future__ import annotations

import datetime as dt
import signal
import subprocess
import sys

import pytest

import pipelines.silver.stage as stage_module
from pipelines.lakehouse.watermarks import WatermarkStore
from pipelines.silver.placement import placement
from pipelines.silver.rejudge import rejudge
from pipelines.silver.rejudge_intent import RejudgeInProgressError, Selection, intent_key
from resources.jetstream import KeyValueSpec
from tests.pipelines.silver.contract_changes import (
    NOW,
    STAGE,
    STREAM,
    land,
    orders,
    paths,
    placed,
    run,
    table,
)
from tests.pipelines.silver.rejudge_child import LOOSE

STRICT = {"data.orderId": {"required": True}, "data.currency": {"enum": ["EUR", "USD"]}}
MESSAGES = [
    placed(1, currency="EUR"),
    placed(2, currency="GBP"),  # comes back to silver under LOOSE
    placed(3, currency="JPY"),  # stays
    {"eventId": "evt-4", "eventType": "OrderPlaced", "data": {"currency": "GBP"}},  # no id
]
# A retry's writes: phase A, OrderPlaced then quarantine; phase B, quarantine.
WRITES = 3


@pytest.mark.parametrize(
    ("any_root", "after"),
    [*(("local", after) for after in range(1, WRITES + 1)), ("s3", 2)],
    indirect=["any_root"],
)
def test_a_retry_killed_after_a_write_is_finished_by_the_next_one_exactly(
    spark, js, nats_server, any_root, unique_name, after
):
    table_root = any_root
    store = WatermarkStore(js.create_key_value(KeyValueSpec(unique_name)))
    land(spark, table_root, MESSAGES, first_seq=1)
    run(spark, store, table_root, orders(STRICT))
    every = {**paths(table_root, orders(STRICT))}
    tables = {**every["table_paths"], "quarantine": every["quarantine_path"]}

    child = subprocess.run(
        [sys.executable, "-m", "tests.pipelines.silver.rejudge_child", nats_server.url,
         unique_name, str(table_root), str(after), f"killed-{after}"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip

    assert child.returncode == -signal.SIGKILL, child.stderr[-3000:]
    killed = placement(
        spark, stream=STREAM, bronze_path=every["bronze_path"], table_paths=tables, first=1, last=4
    )
    assert killed.missing == 0  # never in no table
    assert store.bucket.try_get(intent_key(STAGE)) is not None  # the dead run's intent stays
    loose = orders(LOOSE)
    with pytest.raises(RejudgeInProgressError):  # its lease holds until it expires
        run(spark, store, table_root, loose, run_id="stage-while-pending")

    later = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=601)
    again = rejudge(
        spark, store, loose, stream=STREAM, stage=STAGE, run_id="rerun", now=NOW,
        selection=Selection(quarantined_only=True), source_table="bronze/orders",
        clock=lambda: later, **paths(table_root, loose),
    )  # fmt: skip

    assert again.resumed and again.moved == {"currency_in_allowed_values": 1}
    after_rerun = placement(
        spark, stream=STREAM, bronze_path=every["bronze_path"], table_paths=tables, first=1, last=4
    )
    assert after_rerun.exact, after_rerun
    assert [seq for (seq,) in table(spark, tables["OrderPlaced"], "seq")] == [1, 2]
    assert [seq for (seq,) in table(spark, tables["quarantine"], "seq")] == [3, 4]
    assert store.bucket.try_get(intent_key(STAGE)) is None


@pytest.mark.parametrize("any_root", ["s3"], indirect=True)
def test_a_retry_started_during_a_stage_run_waits_for_it_then_each_row_lands_once(
    spark, js, nats_server, any_root, unique_name, monkeypatch
):
    """Two drivers, one set of tables on S3 (where Delta keeps commits apart within one
    driver only): a quarantine retry in a JVM of its own, started while a stage run is
    merging, waits for the stage's writer lease, then moves the rows the stage quarantined."""
    table_root = any_root
    store = WatermarkStore(js.create_key_value(KeyValueSpec(unique_name)))
    land(spark, table_root, MESSAGES, first_seq=1)
    run(spark, store, table_root, orders(STRICT))
    land(spark, table_root, [placed(5, currency="GBP"), placed(6, currency="USD")], first_seq=5)
    every = paths(table_root, orders(STRICT))
    tables = {**every["table_paths"], "quarantine": every["quarantine_path"]}
    argv = [sys.executable, "-m", "tests.pipelines.silver.rejudge_child", nats_server.url,
            unique_name, str(table_root), "99", "retry-beside"]  # fmt: skip
    child: list[subprocess.Popen] = []
    merge = stage_module.merge_new_rows

    def merge_with_a_retry_waiting(*args, **kwargs):
        if not child:  # before the stage's first merge: start the retry, see it wait
            child.append(subprocess.Popen(argv, stderr=subprocess.PIPE, text=True))
            said = ""
            while "waiting up to" not in said:
                line = child[0].stderr.readline()
                assert line, f"the retry ended without waiting: {said[-3000:]}"
                said += line
            assert "for run 'during' (silver stage run)" in said, said[-3000:]
        return merge(*args, **kwargs)

    monkeypatch.setattr(stage_module, "merge_new_rows", merge_with_a_retry_waiting)
    try:
        during = run(spark, store, table_root, orders(STRICT), run_id="during")
        _, rest = child[0].communicate(timeout=600)
    finally:
        for process in child:
            process.kill()

    assert child[0].returncode == 0, rest[-3000:]
    assert during.rows_in == 2 and store.load(STAGE).position == 6
    placed_now = placement(
        spark, stream=STREAM, bronze_path=every["bronze_path"], table_paths=tables, first=1, last=6
    )
    assert placed_now.exact, placed_now
    # The retry ran after the stage run: it moved seq 5 too, which that run quarantined.
    assert [seq for (seq,) in table(spark, tables["OrderPlaced"], "seq")] == [1, 2, 5, 6]
    assert [seq for (seq,) in table(spark, tables["quarantine"], "seq")] == [3, 4]
