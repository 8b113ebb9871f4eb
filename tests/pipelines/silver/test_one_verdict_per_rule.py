"""One verdict per rule (#51): rows that break one rule of a reference contract fail that
rule's check and no other, in the stage and in Great Expectations.

The reference contracts are ORDERS (`tests/pipelines/contract/fixtures/orders.yaml`) and the
file trash's (`pipelines/file_trash/contract.yaml`). For every rule silver checks, on every
event type it applies to, a case holds rows that break it and nothing else (a required field
missing, or a field mistyped, in each row one of the event type's fields). Each contract's
rows are parsed and routed in one batch on real Spark; each case's candidates are then
validated alone, with its event type's suite, by the real GX runner. A check's verdict is
the asset's (`assets/contract_silver.py`, `mostly` 1.0): its GX outcome for a rule GX checks,
else whether the stage flagged a row.

A row cannot break only `required_fields_present` by leaving out the discriminator
(`eventType`): without it the row has no event type, which breaks `known_event_type` too.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass

import pytest
from pyspark.sql import functions as F

from pipelines.contract import Contract, read_contract
from pipelines.contract import rules as builtin
from pipelines.ingest.bronze import BRONZE_SCHEMA
from pipelines.settings import PROJECT_DIR
from pipelines.silver import parse_events
from pipelines.silver.expectations import contract_suite, expectation_frame, rule_outcomes
from pipelines.silver.layout import EVENT_TYPE
from pipelines.silver.route import judge, split
from pipelines.silver.rule_columns import silver_rules
from pipelines.silver.stage import QUARANTINE, rule_checks
from resources.quality import validate_dataframe

ORDERS = read_contract(PROJECT_DIR / "tests/pipelines/contract/fixtures/orders.yaml")
FILE_TRASH = read_contract(PROJECT_DIR / "pipelines/file_trash/contract.yaml")
CONTRACTS = {"ORDERS": ORDERS, "FILE_EVENTS": FILE_TRASH}
NOW = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.timezone.utc)
PUBLISHED = NOW - dt.timedelta(minutes=1)
EARLIER = "2026-11-21T10:00:00.000Z"
LATER = "2026-11-21T13:00:00.000Z"  # after the publish time plus any rule's skew
MISSING = object()


def order_placed(**data: object) -> dict:
    fields = {"orderId": "ORD-000001", "customerId": "cust-001", "amount": 12.5, "currency": "EUR"}
    return _event("OrderPlaced", "occurredAt", fields, data)


def order_shipped(**data: object) -> dict:
    fields = {"orderId": "ORD-000001", "shippedAt": EARLIER}
    return _event("OrderShipped", "occurredAt", fields, data)


def file_deleted(**data: object) -> dict:
    fields = {
        "fileId": "file-1", "fileName": "report.pdf", "filePath": "/u/report.pdf",
        "fileSize": 123456, "mimeType": "application/pdf", "userId": "user-001",
        "deletedAt": EARLIER,
    }  # fmt: skip
    return _event("FileDeletedEvent", "timestamp", fields, data)


def file_trashed(**data: object) -> dict:
    fields = {
        "trashId": "trash-1", "fileId": "file-1", "fileName": "report.pdf",
        "userId": "user-001", "trashedAt": EARLIER, "expiresAt": "2026-12-21T10:00:00.000Z",
        "originalEventId": "d-1",
    }  # fmt: skip
    return _event("FilePlacedInTrashEvent", "timestamp", fields, data)


def _event(event_type: str, time_key: str, fields: dict, data: dict) -> dict:
    """An event whose `data` is `fields` updated by `data` (a key set to MISSING is left out;
    `data=...` replaces the whole object, MISSING leaves it out). Its event id is the batch's
    to give (`_bronze`)."""
    event = {"eventId": "", "eventType": event_type, time_key: EARLIER}
    whole = data.pop("data", None)
    if whole is not None:
        if whole is not MISSING:
            event["data"] = whole
        return event
    event["data"] = {k: v for k, v in {**fields, **data}.items() if v is not MISSING}
    return event


def without(event: dict, key: str) -> dict:
    """`event` with a top-level key left out."""
    return {k: v for k, v in event.items() if k != key}


def with_top(event: dict, key: str, value: object) -> dict:
    """`event` with a top-level key set to `value`."""
    return {**event, key: value}


@dataclass(frozen=True)
class Case:
    """Rows of `stream` that break `rule` alone (rows of `event`; None: of no event type)."""

    stream: str
    rule: str
    event: str | None
    payloads: tuple[dict | bytes, ...]

    @property
    def id(self) -> str:
        return f"{self.stream}-{self.rule}-{self.event or 'untyped'}"


def _required_and_types(stream: str, event: str, make, time_key: str, mistyped: dict) -> list:
    """A case missing one of the event type's fields per row (absent or JSON null; all but
    the discriminator, and the whole `data`), and one mistyping a field of `mistyped` (or
    `data`) per row."""
    good = make()
    missing = [without(good, "eventId"), without(good, time_key)]
    missing += [with_top(good, "eventId", None), with_top(good, time_key, None)]
    missing += [make(**{key: gone}) for key in good["data"] for gone in (MISSING, None)]
    missing.append(make(data=MISSING))
    typed = [
        with_top(good, key, value) if key in good else make(**{key: value})
        for key, value in mistyped.items()
    ]
    typed.append(make(data="not an object"))
    return [
        Case(stream, builtin.REQUIRED_FIELDS_PRESENT, event, tuple(missing)),
        Case(stream, builtin.FIELD_TYPES_VALID, event, tuple(typed)),
    ]


CASES = [
    Case("ORDERS", builtin.PARSEABLE_JSON, None, (b'{"eventId": "o-x", "data": {',)),
    Case("ORDERS", builtin.KNOWN_EVENT_TYPE, None, (with_top(order_placed(), "eventType", "X"),)),
    *_required_and_types(
        "ORDERS", "OrderPlaced", order_placed, "occurredAt",
        {"eventId": 7, "occurredAt": "yesterday", "orderId": 1, "customerId": True,
         "amount": "12.50", "currency": 1},
    ),
    *_required_and_types(
        "ORDERS", "OrderShipped", order_shipped, "occurredAt",
        {"eventId": [1], "occurredAt": 5, "orderId": {"id": 1}, "shippedAt": 5},
    ),
    Case("ORDERS", builtin.EVENT_ID_UNIQUE, "OrderPlaced", (order_placed(),) * 2),
    Case("ORDERS", builtin.EVENT_ID_UNIQUE, "OrderShipped", (order_shipped(),) * 2),
    Case("ORDERS", builtin.NO_UNKNOWN_FIELDS, "OrderShipped", (order_shipped(carrier="DHL"),)),
    Case("ORDERS", "order_id_format", "OrderPlaced", (order_placed(orderId="ORD-12"),)),
    Case("ORDERS", "order_id_format", "OrderShipped", (order_shipped(orderId="ORD-12"),)),
    Case("ORDERS", "amount_in_range", "OrderPlaced",
         (order_placed(amount=0), order_placed(amount=100000.01))),
    Case("ORDERS", "currency_in_allowed_values", "OrderPlaced", (order_placed(currency="JPY"),)),
    Case("ORDERS", "shipped_at_not_in_future", "OrderShipped", (order_shipped(shippedAt=LATER),)),
    Case("FILE_EVENTS", builtin.PARSEABLE_JSON, None, (b"not json",)),
    Case("FILE_EVENTS", builtin.KNOWN_EVENT_TYPE, None,
         (with_top(file_deleted(), "eventType", "FileRestoredEvent"),)),
    *_required_and_types(
        "FILE_EVENTS", "FileDeletedEvent", file_deleted, "timestamp",
        {"eventId": 7, "timestamp": "yesterday", "fileId": 1, "fileName": False,
         "filePath": ["/"], "mimeType": 5, "userId": 5, "deletedAt": 5,
         "fileSize": "12"},  # issue #51's, which once failed required_fields_present too
    ),
    *_required_and_types(
        "FILE_EVENTS", "FilePlacedInTrashEvent", file_trashed, "timestamp",
        {"eventId": 7, "timestamp": 5, "trashId": 1, "fileId": 1, "fileName": 1, "userId": 1,
         "trashedAt": "soon", "expiresAt": 5, "originalEventId": {"id": "d-1"}},
    ),
    Case("FILE_EVENTS", builtin.EVENT_ID_UNIQUE, "FileDeletedEvent", (file_deleted(),) * 2),
    Case("FILE_EVENTS", builtin.EVENT_ID_UNIQUE, "FilePlacedInTrashEvent",
         (file_trashed(),) * 2),
    Case("FILE_EVENTS", "file_size_in_range", "FileDeletedEvent",
         (file_deleted(fileSize=-1), file_deleted(fileSize=(1 << 40) + 1))),
    Case("FILE_EVENTS", "mime_type_well_formed", "FileDeletedEvent",
         (file_deleted(mimeType="Application/PDF"),)),
    Case("FILE_EVENTS", "user_id_format", "FileDeletedEvent", (file_deleted(userId="bob"),)),
    Case("FILE_EVENTS", "deleted_at_not_in_future", "FileDeletedEvent",
         (file_deleted(deletedAt=LATER),)),
]  # fmt: skip


@dataclass(frozen=True)
class Found:
    """What one case's rows came to."""

    rows: list[tuple[str | None, bool, list[str]]]  # (event type, quarantined, failed_rules)
    gx: dict[str, dict[str, dict]]  # event type -> rule -> `rule_outcomes` of its rows alone


def _bronze(spark, stream: str, cases: list[Case]) -> tuple:
    """The cases' rows in one bronze frame, and each case's seqs. Every row gets an event id
    of its own (a repeated id case: one for its rows), unless it has no string id."""
    rows, seqs = [], {}
    for n, case in enumerate(cases):
        for m, payload in enumerate(case.payloads):
            if isinstance(payload, dict) and isinstance(payload.get("eventId"), str):
                own = f"c{n}" if case.rule == builtin.EVENT_ID_UNIQUE else f"c{n}-{m}"
                payload = {**payload, "eventId": own}
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            seq = len(rows) + 1
            subject = f"{stream.lower()}.events"
            meta = (None, data, None, "ingest", NOW)
            rows.append((stream, seq, subject, PUBLISHED, PUBLISHED.date(), *meta))
            seqs.setdefault(case.id, []).append(seq)
    return spark.createDataFrame(rows, BRONZE_SCHEMA), seqs


@pytest.fixture(scope="module")
def cases_found(spark) -> dict[str, Found]:
    """Case id -> its rows' verdicts and GX outcomes: each contract's cases parsed and judged
    in one batch (computed once), each case's candidates validated alone."""
    results = {}
    for stream, contract in CONTRACTS.items():
        cases = [c for c in CASES if c.stream == stream]
        bronze, seqs = _bronze(spark, stream, cases)
        judged = judge(parse_events(bronze, contract), contract, run_id="r", now=NOW)
        judged = judged.localCheckpoint()
        batch = split(judged, contract, now=NOW)
        names = [e.name for e in contract.event_types]
        typed = F.when(F.col(EVENT_TYPE).isin(*names), F.col(EVENT_TYPE))
        by_seq = {
            r.seq: (r.type, r.quarantined, r.failed_rules)
            for r in judged.select(
                "seq", typed.alias("type"), "quarantined", "failed_rules"
            ).collect()
        }
        for case in cases:
            rows = [by_seq[seq] for seq in seqs[case.id]]
            results[case.id] = Found(rows, _validated(contract, batch, seqs[case.id], rows))
    return results


def _validated(contract: Contract, batch, seqs: list[int], rows) -> dict[str, dict[str, dict]]:
    """Each event type's suite on the case's candidates of that type (if it has any)."""
    outcomes = {}
    for event in contract.event_types:
        if not any(kind == event.name for kind, _, _ in rows):
            continue
        candidates = batch.candidates[event.name].where(F.col("seq").isin(*seqs))
        frame = expectation_frame(candidates, contract, event)
        report = validate_dataframe(frame, contract_suite(contract, event), evaluated_at=NOW)
        outcomes[event.name] = rule_outcomes(report)
    return outcomes


def failing_checks(contract: Contract, result: Found) -> set[tuple[str, str]]:
    """(target, check) of the asset checks that fail on the case's rows, with `mostly` 1.0
    as `assets/contract_silver.py` judges them: a rule GX checks by its GX outcome, any other
    by the rows the stage flagged (an event type's rows; the quarantined rows for the
    quarantine's checks); a check fails when one of its rules does."""
    failing = set()
    for check in rule_checks(contract):
        if check.target == QUARANTINE:
            judged = [rules for _, quarantined, rules in result.rows if quarantined]
        else:
            judged = [rules for kind, _, rules in result.rows if kind == check.target]
        gx = result.gx.get(check.target, {})
        for rule in check.rules:
            if rule.name in gx:
                broken = not gx[rule.name]["passed"]
            else:
                broken = any(rule.name in rules for rules in judged)
            if broken:
                failing.add((check.target, check.name))
    return failing


def test_every_rule_of_the_reference_contracts_has_a_case_on_every_event_type():
    walked = {(c.stream, c.rule, c.event) for c in CASES}
    for stream, contract in CONTRACTS.items():
        for rule in silver_rules(contract):
            if rule.name in (builtin.PARSEABLE_JSON, builtin.KNOWN_EVENT_TYPE):
                assert (stream, rule.name, None) in walked
            else:
                for event in rule.applies_to:
                    assert (stream, rule.name, event) in walked, (stream, rule.name, event)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_rows_breaking_one_rule_fail_its_check_and_no_other(case: Case, cases_found) -> None:
    contract, result = CONTRACTS[case.stream], cases_found[case.id]

    # The stage: each row breaks the rule alone (a repeated id: its copy does, the first
    # row nothing), and the rows are of the case's event type.
    flagged = [rules for _, _, rules in result.rows]
    if case.rule == builtin.EVENT_ID_UNIQUE:
        assert flagged == [[], [case.rule]]
    else:
        assert flagged == [[case.rule]] * len(case.payloads)
    assert {kind for kind, _, _ in result.rows} == {case.event}
    assert set(result.gx) == {case.event} - {None}  # GX judged the case's rows, if typed
    # GX: the rule's expectations fail on those rows, every other one holds.
    outcomes = {rule: o for by_rule in result.gx.values() for rule, o in by_rule.items()}
    gx_failed = {rule for rule, o in outcomes.items() if not o["passed"]}
    if case.rule in outcomes:  # the rows of one event type: one outcome per rule
        assert gx_failed == {case.rule}
    else:
        assert gx_failed == set()
    # The asset checks: the one that judges the rule fails, alone.
    (check,) = [
        c for c in rule_checks(contract)
        if case.rule in {r.name for r in c.rules} and c.target in (case.event, QUARANTINE)
    ]  # fmt: skip
    assert failing_checks(contract, result) == {(check.target, check.name)}
