"""`rejudge`: quarantine retry and silver rebuild move each bronze row once, whatever crashes.

Real Spark and Delta, the watermark and the intent in a real KV bucket. Thirteen ORDERS rows
go through the silver stage under a strict contract (`ROWS` says where each lands), then are
judged again under a changed one.
"""

import datetime as dt
import json
import shutil
import time
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from pipelines.contract import contract_from_dict, read_asyncapi
from pipelines.ingest.bronze import BRONZE_SCHEMA
from pipelines.lakehouse.watermarks import WatermarkStore
from pipelines.silver.rejudge import RejudgeResult, rejudge
from pipelines.silver.rejudge_intent import (
    Intent,
    IntentClaim,
    RejudgeInProgressError,
    Selection,
    begin,
    intent_key,
    kept,
    take_over,
)
from pipelines.silver.rejudge_writes import MERGE_WRITES
from pipelines.silver.stage import QUARANTINE, run_contract_silver
from resources.jetstream import KeyValueSpec
from tests.pipelines.silver.contract_changes import FaultAfter

STREAM = "ORDERS"
STAGE = "silver.orders"
PUBLISHED = dt.datetime(2026, 11, 21, 10, 0, tzinfo=dt.timezone.utc)
NOW = PUBLISHED + dt.timedelta(hours=1)
LATER = PUBLISHED + dt.timedelta(days=1)
CURRENCY = "currency_in_allowed_values"
REQUIRED = "required_fields_present"


def contract(*, currencies=("EUR", "USD"), note=None, cancelled=False):
    events = {
        "OrderPlaced": {
            "subjects": ["orders.placed"],
            "fields": {
                "data.orderId": {"required": True},
                "data.currency": {"required": True, "enum": list(currencies)},
                "data.note": note,
            },
        },
        "OrderShipped": {
            "subjects": ["orders.shipped"],
            "fields": {"data.orderId": {"required": True}},
        },
    }
    if cancelled:
        events["OrderCancelled"] = {
            "subjects": ["orders.cancelled"],
            "fields": {"data.orderId": {"required": True}},
        }
    fields = {"eventId": {"required": True}, "eventType": {"required": True}}
    envelope = {"event_type": "eventType", "event_id": "eventId", "fields": fields}
    return contract_from_dict({"envelope": envelope, "events": events})


STRICT = contract()
ASYNCAPI = Path(__file__).parents[1] / "contract/fixtures/orders.asyncapi.yaml"
LOOSE = contract(currencies=("EUR", "USD", "GBP"))
WITH_CANCELLED = contract(cancelled=True)
NOTE_REQUIRED = contract(note={"required": True})
LOOSE_NOTE_REQUIRED = contract(currencies=("EUR", "USD", "GBP"), note={"required": True})


def event(kind, n, id_of=None, **data):
    return {"eventId": f"evt-{id_of or n}", "eventType": kind, "data": data}


def placed(n, currency, note="gift", id_of=None, order=True):
    data = {"currency": currency, **({"orderId": f"ORD-{n}"} if order else {})}
    return event("OrderPlaced", n, id_of, **data, **({"note": note} if note else {}))


# seq -> (payload, where the strict contract puts it: event type, or the rules it breaks)
ROWS = {
    1: (placed(1, "EUR"), "OrderPlaced"),
    2: (placed(2, "GBP"), [CURRENCY]),
    3: (placed(3, "GBP", note=None, order=False), [REQUIRED, CURRENCY]),
    4: (placed(4, "USD", note=None), "OrderPlaced"),
    5: (event("OrderShipped", 5, orderId="ORD-1"), "OrderShipped"),
    6: (event("OrderCancelled", 6, orderId="ORD-4"), ["known_event_type"]),
    7: (b'{"eventId": "evt-7", "data": {', ["parseable_json"]),
    8: (placed(8, "EUR", id_of=1), ["event_id_unique"]),
    9: (placed(9, "GBP"), [CURRENCY]),
    10: (event("OrderCancelled", 10, orderId="ORD-9"), ["known_event_type"]),
    11: (placed(11, "JPY"), [CURRENCY]),
    12: (placed(12, "USD", note=None), "OrderPlaced"),
    13: (event("OrderShipped", 13, orderId="ORD-12"), "OrderShipped"),
}
SUBJECTS = {"OrderPlaced": "orders.placed", "OrderShipped": "orders.shipped"}


def bronze_rows(spark):
    rows = []
    for seq, (payload, _) in ROWS.items():
        kind = payload["eventType"] if isinstance(payload, dict) else "OrderPlaced"
        subject = SUBJECTS.get(kind, "orders.cancelled")
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        rows.append(
            (STREAM, seq, subject, PUBLISHED, PUBLISHED.date(), None, data, None, "ingest", NOW)
        )
    return spark.createDataFrame(rows, BRONZE_SCHEMA)


@pytest.fixture
def store(js, unique_name) -> WatermarkStore:
    return WatermarkStore(js.create_key_value(KeyValueSpec(unique_name)))


@pytest.fixture
def every_path(paths, table_root) -> dict:
    """The conftest's ORDERS paths with a table for OrderCancelled too."""
    cancelled = str(table_root / "silver/orders_cancelled")
    return {**paths, "table_paths": {**paths["table_paths"], "OrderCancelled": cancelled}}


def for_contract(paths: dict, rules) -> dict:
    names = {e.name for e in rules.event_types}
    tables = {name: path for name, path in paths["table_paths"].items() if name in names}
    return {**paths, "table_paths": tables}


def run_stage(spark, store, paths):
    bronze_rows(spark).write.format("delta").mode("append").save(paths["bronze_path"])
    return run_contract_silver(
        spark, store, STRICT, stream=STREAM, stage=STAGE, run_id="stage-1", now=NOW,
        source_table="bronze/orders", **for_contract(paths, STRICT),
    )  # fmt: skip


def run_rejudge(spark, store, paths, rules, selection, run_id="rejudge-1", **options):
    return rejudge(
        spark, store, rules, stream=STREAM, stage=STAGE, run_id=run_id, now=LATER,
        selection=selection, source_table="bronze/orders", **for_contract(paths, rules),
        **options,
    )  # fmt: skip


def placements(spark, paths: dict, stream: str, upto: int) -> dict[int, list[str]]:
    """Bronze seq (<= upto) -> the tables holding its row (event type, or QUARANTINE)."""
    tables = {**paths["table_paths"], QUARANTINE: paths["quarantine_path"]}
    found = {
        r.seq: []
        for r in spark.read.format("delta").load(paths["bronze_path"])
        .where((F.col("stream") == stream) & (F.col("seq") <= upto)).select("seq").collect()
    }  # fmt: skip
    for name, path in tables.items():
        if not Path(path).is_dir():  # not created yet: holds nothing
            continue
        rows = spark.read.format("delta").load(path)
        for r in rows.where((F.col("stream") == stream) & (F.col("seq") <= upto)).collect():
            found.setdefault(r.seq, []).append(name)
    return found


def assert_each_bronze_row_once(spark, paths: dict, stream: str, upto: int) -> None:
    """Every bronze row of `stream` with seq <= upto is in exactly one table, and no table
    holds a row of that range bronze lacks."""
    found = placements(spark, paths, stream, upto)
    wrong = {seq: names for seq, names in found.items() if len(names) != 1}
    assert not wrong, f"rows not in exactly one table: {wrong}"


def where(spark, paths) -> dict[int, object]:
    """seq -> its event type, or its quarantine failed_rules."""
    found = {}
    for name, path in paths["table_paths"].items():
        if Path(path).is_dir():
            for r in spark.read.format("delta").load(path).select("seq").collect():
                found[r.seq] = name
    for r in spark.read.format("delta").load(paths["quarantine_path"]).collect():
        found[r.seq] = r.failed_rules
    return found


def snapshot(spark, paths) -> dict[str, list]:
    tables = {**paths["table_paths"], QUARANTINE: paths["quarantine_path"]}
    return {
        name: sorted(map(tuple, spark.read.format("delta").load(path).collect()), key=str)
        for name, path in tables.items()
        if Path(path).is_dir()
    }


def test_selection_round_trips_through_json_and_checks_its_bounds():
    selection = Selection(
        True, rules=[CURRENCY], event_types=("OrderPlaced",), first_seq=3, last_seq=9,
        since=PUBLISHED, until=LATER,
    )  # fmt: skip

    assert Selection.from_json(json.loads(json.dumps(selection.to_json()))) == selection
    assert selection.rules == (CURRENCY,)
    with pytest.raises(ValueError, match="quarantined_only=True"):
        Selection(False, rules=(CURRENCY,))
    with pytest.raises(ValueError, match="first_seq 9 is after last_seq 3"):
        Selection(True, first_seq=9, last_seq=3)
    with pytest.raises(ValueError, match="timezone-aware"):
        Selection(True, since=dt.datetime(2026, 1, 1))


def test_a_selection_names_only_the_contracts_rules_and_event_types():
    Selection(True, rules=(CURRENCY,), event_types=("OrderPlaced",)).check_names(STRICT, "ORDERS")
    # Silver's rules: known_event_type too when subjects tell the event types apart.
    by_subject = read_asyncapi(ASYNCAPI, stream="ORDERS")
    assert by_subject.envelope.event_type is None
    Selection(True, rules=("known_event_type",)).check_names(by_subject, "ORDERS")
    # A seq is checked here, where a retry starts, not where a stored intent is read back.
    stored = Selection(True, first_seq=-5)
    with pytest.raises(ValueError, match="first_seq -5 is not a stream sequence"):
        stored.check_names(STRICT, "ORDERS")

    with pytest.raises(
        ValueError, match=r"stream .ORDERS. has no rule .no_such_rule.; its rules: .*curr"
    ):
        Selection(True, rules=("no_such_rule",)).check_names(STRICT, "ORDERS")
    with pytest.raises(ValueError, match=r"no event type 'Nope'; its event types: OrderPlaced"):
        Selection(False, event_types=("Nope",)).check_names(STRICT, "ORDERS")


def test_a_loosened_rule_brings_back_the_rows_that_broke_only_it_once(spark, store, paths):
    run_stage(spark, store, paths)

    retried = run_rejudge(spark, store, paths, LOOSE, Selection(quarantined_only=True))
    placed = where(spark, paths)
    quarantine = spark.read.format("delta").load(paths["quarantine_path"])
    stamps = {r.seq: (r.run_id, r.error) for r in quarantine.collect()}
    before = snapshot(spark, paths)
    again = run_rejudge(spark, store, paths, LOOSE, Selection(True), run_id="rejudge-2")

    assert (placed[2], placed[9]) == ("OrderPlaced", "OrderPlaced")
    assert placed[3] == [REQUIRED]  # still failing, its errors judged again
    assert stamps[3] == ("rejudge-1", "required_fields_present: missing or null: data.orderId")
    assert retried.moved == {CURRENCY: 2}
    assert retried.still_failing == 6
    assert retried.routed == {"OrderPlaced": 2, "OrderShipped": 0, QUARANTINE: 6}
    assert (retried.removed, retried.added) == ({QUARANTINE: 2}, {"OrderPlaced": 2})
    assert (retried.judged, retried.upto, retried.resumed) == (8, 13, False)
    assert_each_bronze_row_once(spark, paths, STREAM, 13)
    assert snapshot(spark, paths) == before
    assert (again.judged, again.moved, again.still_failing) == (6, {}, 6)
    assert store.bucket.try_get(intent_key(STAGE)) is None


def test_rows_of_a_new_event_type_come_back_from_quarantine_to_its_table(
    spark, store, paths, every_path
):
    run_stage(spark, store, paths)

    result = run_rejudge(
        spark, store, every_path, WITH_CANCELLED, Selection(True, rules=("known_event_type",))
    )

    cancelled = spark.read.format("delta").load(every_path["table_paths"]["OrderCancelled"])
    assert sorted((r.seq, r.order_id, r.run_id) for r in cancelled.collect()) == [
        (6, "ORD-4", "rejudge-1"),
        (10, "ORD-9", "rejudge-1"),
    ]
    assert result.moved == {"known_event_type": 2}
    assert (result.judged, result.still_failing) == (2, 0)
    assert where(spark, every_path)[2] == [CURRENCY]  # not selected: as it was
    assert_each_bronze_row_once(spark, every_path, STREAM, 13)


def test_a_rebuild_after_a_field_is_made_required_moves_rows_lacking_it_to_quarantine(
    spark, store, paths
):
    run_stage(spark, store, paths)

    result = run_rejudge(
        spark, store, paths, NOTE_REQUIRED, Selection(False, first_seq=1, last_seq=8)
    )

    placed = where(spark, paths)
    assert placed[4] == [REQUIRED]  # was in OrderPlaced
    assert placed[12] == "OrderPlaced"  # lacks the note too, but after the range
    assert (placed[1], placed[5]) == ("OrderPlaced", "OrderShipped")
    assert result.judged == 8
    assert (result.removed, result.added, result.moved) == (
        {"OrderPlaced": 1},
        {QUARANTINE: 1},
        {},
    )
    assert_each_bronze_row_once(spark, paths, STREAM, 13)


class Crash(Exception):
    pass


def _crash(done: int) -> None:
    raise Crash(f"killed after write {done}")


def crashing_writes(after: int | None = None) -> FaultAfter:
    """Writes as the MERGE does, then dies (an exception) right after the `after`-th write."""
    return FaultAfter(after, _crash)


def copied(template, root, name) -> dict:
    shutil.copytree(template, root / name)
    return {
        "bronze_path": str(root / name / "bronze/orders"),
        "table_paths": {
            "OrderPlaced": str(root / name / "silver/orders_placed"),
            "OrderShipped": str(root / name / "silver/orders_shipped"),
        },
        "quarantine_path": str(root / name / "quarantine/orders"),
    }


def test_a_rejudge_killed_after_any_write_is_finished_by_the_next_run_as_if_never_killed(
    spark, store, paths, table_root, tmp_path, monkeypatch
):
    run_stage(spark, store, paths)
    selection = Selection(False, event_types=("OrderPlaced",))
    baseline = copied(table_root, tmp_path, "baseline")
    counting = crashing_writes()  # never crashes
    targets = ("OrderPlaced", "OrderShipped", QUARANTINE)
    expected = run_rejudge(
        spark, store, baseline, LOOSE_NOTE_REQUIRED, selection,
        writes=dict.fromkeys(targets, counting),
    )  # fmt: skip
    writes = 4  # phase A: OrderPlaced, quarantine; phase B: the same two
    assert counting.done == writes
    never_killed = snapshot(spark, baseline)

    for after in range(1, writes + 1):
        killed = copied(table_root, tmp_path, f"killed-{after}")
        crashing = crashing_writes(after)
        # Odd: the process dies (its lease stays until it expires); even: the run fails
        # with an exception and gives its lease up.
        dies = after % 2 == 1
        with monkeypatch.context() as patched, pytest.raises(Crash):
            if dies:
                patched.setattr(IntentClaim, "abandon", lambda self: None)
            run_rejudge(
                spark, store, killed, LOOSE_NOTE_REQUIRED, selection,
                writes=dict.fromkeys(targets, crashing), lease_ttl=600,  # past the checks below
            )  # fmt: skip
        stranded = placements(spark, killed, STREAM, 13)
        if dies:
            with pytest.raises(RejudgeInProgressError):
                run_rejudge(spark, store, killed, LOOSE_NOTE_REQUIRED, selection, run_id="early")
        expired = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=601)  # the lease: 600 s
        again = run_rejudge(
            spark, store, killed, LOOSE_NOTE_REQUIRED, selection, run_id=f"rerun-{after}",
            clock=lambda at=expired: at,
        )  # fmt: skip

        assert all(stranded.values()), f"a row in no table after write {after}: {stranded}"
        doubled = {seq for seq, names in stranded.items() if len(names) > 1}
        assert bool(doubled) == (after < writes), f"after write {after}: {stranded}"
        assert again == RejudgeResult(**{**expected.__dict__, "resumed": True})
        assert snapshot(spark, killed) == never_killed, f"killed after {after}"
        assert_each_bronze_row_once(spark, killed, STREAM, 13)
    assert crashing.done == writes  # the last run died after the last write
    assert expected.moved == {CURRENCY: 2}
    assert expected.removed == {"OrderPlaced": 2, QUARANTINE: 2}
    assert store.bucket.try_get(intent_key(STAGE)) is None


def test_a_second_rejudge_while_one_holds_the_intent_fails_and_writes_nothing(spark, store, paths):
    run_stage(spark, store, paths)
    refused = []

    class Interleaved:
        def upsert(self, spark, rows, path, seqs):
            before = snapshot(spark, paths)
            with pytest.raises(RejudgeInProgressError) as error:
                run_rejudge(spark, store, paths, STRICT, Selection(True), run_id="rejudge-2")
            refused.append((error.value, snapshot(spark, paths) == before))
            MERGE_WRITES.upsert(spark, rows, path, seqs)

        def delete(self, spark, keys, path, seqs):
            MERGE_WRITES.delete(spark, keys, path, seqs)

    first = run_rejudge(
        spark, store, paths, LOOSE, Selection(True), writes={"OrderPlaced": Interleaved()}
    )

    error, unchanged = refused[0]
    assert unchanged
    assert (error.stage, error.bucket, error.holder) == (STAGE, store.bucket.name, "rejudge-1")
    assert f"intent 'rejudge.{STAGE}' in bucket {store.bucket.name!r}" in str(error)
    assert "Wait for it to finish" in str(error)
    assert first.moved == {CURRENCY: 2}
    assert_each_bronze_row_once(spark, paths, STREAM, 13)
    assert store.bucket.try_get(intent_key(STAGE)) is None


def test_a_living_rejudge_keeps_its_intent_however_long_a_step_takes_and_a_dead_one_lets_go(
    store,
):
    moment = [NOW]
    clock = lambda: moment[0]  # noqa: E731
    intent = Intent(
        STAGE, STREAM, Selection(True), "alive", NOW, 13, 1, (), "bronze/orders", "v", "alive"
    )
    claim = begin(store.bucket, intent, ttl=0.3, clock=clock)

    with kept(claim):
        moment[0] = NOW + dt.timedelta(hours=1)  # a step far longer than the TTL
        deadline = time.monotonic() + 30
        while claim.intent.expires_at <= moment[0] and time.monotonic() < deadline:
            time.sleep(0.05)  # the keeper renews every 0.1 s of real time
        with pytest.raises(RejudgeInProgressError):
            take_over(store.bucket, STAGE, holder="other", ttl=30, clock=clock)
    # Killed (nothing renews any more): taken over once its TTL is past.
    moment[0] += dt.timedelta(seconds=1)
    taken = take_over(store.bucket, STAGE, holder="other", ttl=30, clock=clock)
    assert taken is not None and taken.intent.holder == "other"
