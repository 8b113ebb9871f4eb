"""JSON Schema as pydantic and zod generate it, declared by `json_schema_files:` with no edit,
lands a stream end to end; and CloudEvents, structured and binary, land the same rows.

Per tool: the order model of the differential tests (tests/pipelines/contract/differential/
models.py and tests/interop/zod_schemas.mjs) generates its JSON Schema at test time, written
unedited beside the component; a real nats-server of its own gets the same orders as the
tool's producers write them, some valid and some breaking one rule each; one `materialize`
of bronze and silver with real Spark and Delta. The zod stream is declared with `envelope:
cloudevents` and gets each order twice, as a structured and as a binary CloudEvent: both
land the same columns, and each bad order is quarantined in both modes.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from dagster import ComponentTree, DagsterInstance, materialize

from pipelines.components.models import IngestModel, StreamModel
from pipelines.components.stream import JetStreamStream
from pipelines.contract import contract_from_json_schemas
from resources.jetstream import EmbeddedNatsServer, JetStreamResource, reconcile
from resources.lakehouse import LakehouseResource
from resources.quality import DataQualityResource
from resources.spark import SparkResource
from tests.pipelines.contract.differential.judges import zod_missing, zod_run
from tests.pipelines.contract.differential.models import Order

ORDER = {
    "kind": "order",
    "order_id": "3f2c4a8e-1b7d-4c9a-9e21-5d6f7a8b9c0d",
    "status": "paid",
    "placed_at": "2026-11-26T10:00:00Z",
    "customer": "ada_l",
    "quantity": 2,
    "weight_kg": 1.5,
    "coupon": None,
    "address": {"street": "Main St 1", "zip": "10115", "country": "DE"},
    "lines": [{"sku": "SKU-0001", "qty": 2}],
}
# (order id's last digit, a change to ORDER, the rule it breaks or None).
CASES = [
    ("1", {}, None),
    ("2", {"customer": "ad"}, "customer_min_length"),
    ("3", {"quantity": 0}, "quantity_in_range"),
    ("4", {"discount_pct": 7}, "discount_pct_multiple_of"),
    ("5", {"status": "lost"}, "status_in_allowed_values"),
    ("6", {"note": None, "tags": ["gift"]}, None),
]


def orders(total: object) -> list[tuple[str, dict, str | None]]:
    """(order id, order, broken rule) per case, `total` written as the tool's producers do."""
    found = []
    for digit, change, rule in CASES:
        order = {**copy.deepcopy(ORDER), "total": total, **change}
        order["order_id"] = order["order_id"][:-1] + digit
        found.append((order["order_id"], order, rule))
    return found


def land(folder: Path, spark, schema: dict, envelope, messages, columns) -> dict[str, list]:
    """Declares the stream over `schema` as written, publishes `messages`, lands them;
    returns bronze's sequences, silver's `columns` and the quarantine's rules, by seq."""
    # The file is named as the event type is sent (CloudEvents type `order`).
    (folder / "order.schema.json").write_text(json.dumps(schema, indent=2))
    declared = JetStreamStream(
        stream=StreamModel(name="ORDERS", subjects=["orders.>"]),
        ingests=[IngestModel(name="orders", durable="orders-bronze", table="bronze/orders")],
        json_schema_files=[str(folder / "order.schema.json")],
        envelope=envelope,
    )
    lakehouse = LakehouseResource(root=str(folder / "lakehouse"))
    with EmbeddedNatsServer(store_dir=folder / "nats") as server:
        resources = {
            "jetstream": JetStreamResource(servers=server.url),
            "spark": SparkResource(),
            "lakehouse": lakehouse,
            "quality": DataQualityResource(),
        }
        with resources["jetstream"].client() as client:
            reconcile(client, declared.topology())
            client.publish_batch(messages)
        defs = declared.build_defs(ComponentTree.for_test().load_context)
        with DagsterInstance.ephemeral() as instance:
            result = materialize(defs.assets, resources=resources, instance=instance)
            assert result.success

    def rows(table: str, *columns: str) -> list[tuple]:
        frame = spark.read.format("delta").load(lakehouse.table_path(table))
        return sorted(tuple(r) for r in frame.select(*columns).collect())

    return {
        "bronze": rows("bronze/orders", "seq"),
        "silver": rows("silver/order", "seq", *columns),
        "quarantine": rows("quarantine/orders", "seq", "failed_rules"),
        "checks": {e.check_name: e.metadata for e in result.get_asset_check_evaluations()},
    }


def test_pydantics_schema_lands_each_order_once_in_silver_or_quarantine(spark, tmp_path):
    sent = orders("12.50")  # pydantic writes a Decimal as a JSON string
    messages = [
        ("orders.placed", json.dumps(order).encode(), {"Nats-Msg-Id": order_id})
        for order_id, order, _ in sent
    ]
    envelope = {"event_id": "header:Nats-Msg-Id"}

    columns = ("nats_msg_id", "customer", "total", "lines")
    tables = land(tmp_path, spark, Order.model_json_schema(), envelope, messages, columns)

    assert tables["bronze"] == [(seq,) for seq in range(1, len(sent) + 1)]
    valid = [(seq, o["order_id"]) for seq, (_, o, rule) in enumerate(sent, 1) if rule is None]
    assert [(seq, order_id) for seq, order_id, *_ in tables["silver"]] == valid
    assert {row[3] for row in tables["silver"]} == {"12.50"}  # the exact text, not rounded
    assert all(row[4][0]["sku"] == "SKU-0001" for row in tables["silver"])
    broken = {seq: [rule] for seq, (_, _, rule) in enumerate(sent, 1) if rule is not None}
    assert dict(tables["quarantine"]) == broken


def zod_event_type_is_validator_judged(schema: dict) -> bool:
    contract = contract_from_json_schemas({"Order": schema}, subjects={"Order": ["o.x"]})
    return contract.event_types[0].schema_check is not None


def test_zods_schema_under_cloudevents_lands_structured_and_binary_alike(spark, tmp_path):
    if missing := zod_missing():
        pytest.skip(missing)
    sent = orders(12.5)  # zod's total is a JSON number
    schema, verdicts = zod_run("Order", [json.dumps(order) for _, order, _ in sent])
    assert verdicts == [rule is None for _, _, rule in sent]  # zod's own verdicts agree
    messages = []
    for order_id, order, _ in sent:
        time = order["placed_at"]
        structured = {
            "specversion": "1.0", "id": f"s-{order_id}", "type": "order",
            "source": "/shop/checkout", "time": time, "data": order,
        }  # fmt: skip
        messages.append(("orders.placed", json.dumps(structured).encode(), None))
        headers = {
            "ce-specversion": "1.0", "ce-id": f"b-{order_id}", "ce-type": "order",
            "ce-source": "%2Fshop%2Fcheckout", "ce-time": time,
        }  # fmt: skip
        messages.append(("orders.placed", json.dumps(order).encode(), headers))

    columns = ("ce_id", "order_id", "customer", "total", "ce_source")
    tables = land(tmp_path, spark, schema, "cloudevents", messages, columns)

    assert tables["bronze"] == [(seq,) for seq in range(1, 2 * len(sent) + 1)]
    # Each valid order twice, once per mode, with the same columns.
    by_mode: dict[str, list[tuple]] = {"s": [], "b": []}
    for seq, ce_id, order_id, customer, total, source in tables["silver"]:
        by_mode[ce_id[0]].append((order_id, customer, total, source))
        assert ce_id[2:] == order_id and seq % 2 == (1 if ce_id[0] == "s" else 0)
    valid = [(o["order_id"], o["customer"], 12.5, "/shop/checkout") for _, o, r in sent if not r]
    assert sorted(by_mode["s"]) == sorted(by_mode["b"]) == sorted(valid)
    # Each bad order is quarantined in both modes. zod writes a `pattern` beside `format:
    # date-time`, which no timestamp column's rule can judge: the JSON Schema validator judges
    # the whole schema (rule schema_valid), so no keyword is also a rule of its own.
    assert zod_event_type_is_validator_judged(schema)
    quarantined = dict(tables["quarantine"])
    broken = {
        2 * i + 1 + binary: ["schema_valid"]
        for i, (_, _, rule) in enumerate(sent)
        if rule
        for binary in (0, 1)
    }
    assert quarantined == broken
    # schema_valid's check tables the keywords that failed, a row counted once per keyword.
    # The structured and the binary copy of each bad order: 2 rows per keyword, by name.
    failed = tables["checks"]["schema_valid"]["schema_failures"].value.splitlines()[2:]
    assert failed == [
        '| `/properties/customer/minLength` | 2 | /customer: "ad" is shorter than 3 characters |',
        "| `/properties/discount_pct/multipleOf` | 2 | /discount_pct: 7 is not a multiple of 5 |",
        "| `/properties/quantity/minimum` | 2 | /quantity: 0 is less than the minimum of 1 |",
        '| `/properties/status/enum` | 2 | /status: "lost" is not one of "placed", "paid" or '
        '"shipped" |',
    ]
