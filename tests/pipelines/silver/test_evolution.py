"""Silver follows its contract: each kind of change is applied, or refused before any write.

The first tests classify differences without Spark. The others run the real stage (Spark,
Delta, a KV watermark on a real nats-server): publish under one contract, change it, publish
again, run, and check every table's exact contents and types, and that each bronze row is in
exactly one table (`assert_each_bronze_row_once`).
"""

import copy
import shutil
from decimal import Decimal

import pytest
from pyspark.sql.types import (
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from pipelines.contract import (
    Envelope,
    Layout,
    NestedObjects,
    contract_from_json_schemas,
)
from pipelines.contract.fingerprint import event_type_version
from pipelines.lakehouse.watermarks import WatermarkStore
from pipelines.silver.drift import written_table
from pipelines.silver.evolution import (
    ChangeKind,
    OnSchemaChange,
    SchemaChangeError,
    compare_table,
    widens,
)
from pipelines.silver.stage import QUARANTINE
from resources.jetstream import KeyValueSpec
from resources.lakehouse import LakehouseResource
from tests.pipelines.silver.contract_changes import (
    PLACED_FIELDS,
    STAGE,
    assert_each_bronze_row_once,
    land,
    orders,
    placed,
    rebuild,
    run,
    table,
)


@pytest.fixture
def store(js, unique_name) -> WatermarkStore:
    return WatermarkStore(js.create_key_value(KeyValueSpec(unique_name)))


def _placed_path(table_root) -> str:
    return str(table_root / "silver/orders_placed")


# --- what each difference is, without Spark ---------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "wider"),
    [
        (IntegerType(), LongType(), True),
        (IntegerType(), DoubleType(), True),
        (IntegerType(), DecimalType(10, 0), True),
        (IntegerType(), DecimalType(11, 2), False),  # 9 integer digits cannot hold 2^31
        (LongType(), DecimalType(20, 0), True),
        (LongType(), IntegerType(), False),
        (LongType(), DoubleType(), False),  # a double rounds longs above 2^53
        (DecimalType(12, 2), DecimalType(18, 4), True),
        (DecimalType(12, 2), DecimalType(13, 3), True),
        (DecimalType(12, 2), DecimalType(12, 3), False),  # one integer digit fewer
        (DecimalType(12, 2), DecimalType(12, 1), False),
        (StringType(), LongType(), False),
    ],
)
def test_widening_is_what_holds_every_old_value_exactly(old, new, wider):
    assert widens(old, new) is wider


def _schema(*fields) -> StructType:
    return StructType([StructField(name, data_type) for name, data_type in fields])


def test_each_difference_is_classified_with_table_column_and_types():
    live = _schema(("a", IntegerType()), ("b", DecimalType(12, 2)), ("c", StringType()))
    wanted = _schema(("a", LongType()), ("b", DecimalType(10, 2)), ("d", StringType()))

    changes = compare_table("silver/t", live, wanted)

    assert [(c.column, c.kind, c.old, c.new) for c in changes] == [
        ("a", ChangeKind.WIDENING, "int", "bigint"),
        ("b", ChangeKind.BREAKING, "decimal(12,2)", "decimal(10,2)"),
        ("d", ChangeKind.ADDITIVE, None, "string"),
        ("c", ChangeKind.BREAKING, "string", None),
    ]
    text = changes[1].describe()
    assert "silver/t" in text and "'b'" in text and "decimal(12,2) -> decimal(10,2)" in text
    assert "jsl silver rebuild" in text


def test_a_new_struct_member_is_additive_and_a_changed_one_is_located_inside_it():
    live = _schema(("s", _schema(("x", IntegerType()))))
    wanted = _schema(("s", _schema(("x", LongType()), ("y", StringType()))))

    changes = compare_table("silver/t", live, wanted)

    assert [(c.column, c.kind) for c in changes] == [
        ("s.x", ChangeKind.WIDENING),
        ("s.y", ChangeKind.ADDITIVE),
    ]


# --- the stage, before and after a change ---------------------------------------------


def test_an_optional_field_added_lands_its_values_and_earlier_rows_keep_null(
    spark, store, table_root
):
    before = orders()
    land(spark, table_root, [placed(1, amount=1.5)], first_seq=1)
    run(spark, store, table_root, before)
    after = orders({**PLACED_FIELDS, "data.channel": "string"})
    land(spark, table_root, [placed(2, amount=2.5, channel="web")], first_seq=2)

    result = run(spark, store, table_root, after, run_id="run-2")

    assert [(c.column, c.kind) for c in result.schema_changes] == [("channel", ChangeKind.ADDITIVE)]
    path = _placed_path(table_root)
    assert table(spark, path, "order_id", "channel") == [("o1", None), ("o2", "web")]
    columns = spark.read.format("delta").load(path).columns
    assert columns.index("channel") == columns.index("currency") + 1  # where the contract puts it
    assert_each_bronze_row_once(spark, table_root, after, store)


def test_a_decimal_widened_keeps_every_digit(spark, store, table_root):
    before = orders()
    land(spark, table_root, [placed(1, amount=12.34)], first_seq=1)
    run(spark, store, table_root, before)
    after = orders({**PLACED_FIELDS, "data.amount": "decimal(18,4)"})
    land(spark, table_root, [placed(2, amount=12.3456), placed(3, amount=99999.9999)], 2)

    result = run(spark, store, table_root, after, run_id="run-2")

    assert [(c.column, c.kind, c.old, c.new) for c in result.schema_changes] == [
        ("amount", ChangeKind.WIDENING, "decimal(12,2)", "decimal(18,4)")
    ]
    path = _placed_path(table_root)
    assert spark.read.format("delta").load(path).schema["amount"].dataType == DecimalType(18, 4)
    assert table(spark, path, "amount") == [
        (Decimal("12.3400"),),
        (Decimal("12.3456"),),
        (Decimal("99999.9999"),),
    ]
    assert_each_bronze_row_once(spark, table_root, after, store)


def test_an_integer_widened_to_long_takes_values_above_2_to_the_31(spark, store, table_root):
    before = orders()
    land(spark, table_root, [placed(1, quantity=7)], first_seq=1)
    run(spark, store, table_root, before)
    after = orders({**PLACED_FIELDS, "data.quantity": "long"})
    land(spark, table_root, [placed(2, quantity=2**31), placed(3, quantity=2**40 + 1)], 2)

    run(spark, store, table_root, after, run_id="run-2")

    path = _placed_path(table_root)
    assert spark.read.format("delta").load(path).schema["quantity"].dataType == LongType()
    assert table(spark, path, "quantity") == [(7,), (2**31,), (2**40 + 1,)]
    assert_each_bronze_row_once(spark, table_root, after, store)


def test_a_renamed_column_keeps_its_values_under_its_new_name(spark, store, table_root):
    before = orders()
    land(spark, table_root, [placed(1, currency="EUR")], first_seq=1)
    run(spark, store, table_root, before)
    fields = {**PLACED_FIELDS, "data.currency": {"enum": ["EUR", "USD"], "column": "ccy"}}
    after = orders(fields)
    land(spark, table_root, [placed(2, currency="USD")], first_seq=2)

    result = run(spark, store, table_root, after, run_id="run-2")

    assert [(c.column, c.kind, c.old, c.new) for c in result.schema_changes] == [
        ("ccy", ChangeKind.RENAME, "currency", "ccy")
    ]
    path = _placed_path(table_root)
    assert "currency" not in spark.read.format("delta").load(path).columns
    assert table(spark, path, "order_id", "ccy") == [("o1", "EUR"), ("o2", "USD")]
    assert_each_bronze_row_once(spark, table_root, after, store)


def test_keeping_unknown_fields_adds_their_column(spark, store, table_root):
    before = orders()
    land(spark, table_root, [placed(1, coupon="A")], first_seq=1)
    run(spark, store, table_root, before)
    after = orders(unknown_fields="keep")
    land(spark, table_root, [placed(2, coupon="B")], first_seq=2)

    run(spark, store, table_root, after, run_id="run-2")

    rows = table(spark, _placed_path(table_root), "order_id", "unknown_fields")
    assert rows == [("o1", None), ("o2", {"data.coupon": '"B"'})]
    assert_each_bronze_row_once(spark, table_root, after, store)


def _version(spark, path) -> int:
    return spark.sql(f"DESCRIBE HISTORY delta.`{path}`").first()["version"]


def _refused(spark, store, table_root, after, **options) -> SchemaChangeError:
    land(spark, table_root, [placed(9, amount=9.5, quantity=9)], first_seq=9)
    names = ("silver/orders_placed", "quarantine/orders")
    versions = {name: _version(spark, table_root / name) for name in names}
    with pytest.raises(SchemaChangeError) as refused:
        run(spark, store, table_root, after, run_id="run-2", **options)
    for name, version in versions.items():  # nothing written
        assert _version(spark, table_root / name) == version
    assert store.load(STAGE).position == 1  # the watermark stays
    return refused.value


def test_a_type_narrowed_is_refused_before_anything_is_written(spark, store, table_root):
    land(spark, table_root, [placed(1, amount=1.5, quantity=1)], first_seq=1)
    run(spark, store, table_root, orders())
    after = orders({**PLACED_FIELDS, "data.amount": "decimal(6,1)"})

    error = _refused(spark, store, table_root, after)

    assert [(c.table, c.column, c.kind) for c in error.changes] == [
        ("silver/orders_placed", "amount", ChangeKind.BREAKING)
    ]
    assert "decimal(12,2) -> decimal(6,1)" in str(error) and "jsl silver rebuild" in str(error)


def test_a_field_made_required_is_refused_while_rows_lack_it(spark, store, table_root):
    land(spark, table_root, [placed(1, amount=1.5)], first_seq=1)  # no quantity
    run(spark, store, table_root, orders())
    after = orders({**PLACED_FIELDS, "data.quantity": {"type": "integer", "required": True}})

    error = _refused(spark, store, table_root, after)

    assert [(c.column, c.old, c.new) for c in error.changes] == [
        ("quantity", "optional", "required")
    ]
    assert "1 row(s) of the table have no value" in str(error)


def test_freeze_refuses_an_added_field_and_evolve_applies_it(spark, store, table_root):
    land(spark, table_root, [placed(1, amount=1.5)], first_seq=1)
    run(spark, store, table_root, orders())
    after = orders({**PLACED_FIELDS, "data.channel": "string"})

    freeze = {"OrderPlaced": OnSchemaChange.FREEZE}
    error = _refused(spark, store, table_root, after, policy=freeze)

    assert [(c.column, c.kind) for c in error.changes] == [("channel", ChangeKind.ADDITIVE)]
    assert "on_schema_change: freeze" in str(error)
    result = run(spark, store, table_root, after, run_id="run-3")  # evolve: the default
    assert [c.column for c in result.schema_changes] == ["channel"]


def test_rows_record_the_contract_that_judged_them(spark, store, table_root):
    before = orders(version="1.0.0")
    land(spark, table_root, [placed(1, amount=1.5), "not json"], first_seq=1)
    run(spark, store, table_root, before)
    after = orders({**PLACED_FIELDS, "data.channel": "string"}, version="1.1.0")
    land(spark, table_root, [placed(3, amount=2.5)], first_seq=3)

    result = run(spark, store, table_root, after, run_id="run-2")

    old, new = (event_type_version(c, c.event_types[0]) for c in (before, after))
    assert old.startswith("1.0.0+") and new.startswith("1.1.0+") and old != new
    assert table(spark, _placed_path(table_root), "seq", "contract_version") == [(1, old), (3, new)]
    quarantined = table(spark, str(table_root / "quarantine/orders"), "seq", "contract_version")
    assert [seq for seq, _ in quarantined] == [2]
    assert result.contract_versions["OrderPlaced"] == new
    assert result.contract_versions[QUARANTINE].startswith("1.1.0+")


# --- columns by structure: a table keeps the layout it was written with ------------------

PLACED_SCHEMA = {
    "type": "object",
    "required": ["eventId", "eventType", "data"],
    "properties": {
        "eventId": {"type": "string"},
        "eventType": {"const": "OrderPlaced"},
        "data": {
            "type": "object",
            "required": ["orderId"],
            "properties": {
                "orderId": {"type": "string"},
                "quantity": {"type": "integer"},
                "ref": {"oneOf": [{"type": "integer"}, {"type": "string"}]},
            },
        },
    },
}


def _placed_from_schema(layout: Layout, schema=PLACED_SCHEMA):
    return contract_from_json_schemas(
        {"OrderPlaced": schema},
        envelope=Envelope(event_type="eventType", event_id="eventId"),
        tables={"OrderPlaced": "silver/orders_placed"},
        layout=layout,
    )


def test_a_new_table_nests_objects_and_a_flattened_table_stays_flattened(spark, store, table_root):
    lakehouse = LakehouseResource(root=str(table_root))
    as_written = Layout(written=lambda table: written_table(lakehouse, table))
    land(spark, table_root, [placed(1, quantity=2, ref=7)], first_seq=1)

    # Before this layout existed every object was flattened and a union was JSON text: such
    # a table stays so.
    old = copy.deepcopy(PLACED_SCHEMA)
    old["properties"]["data"]["properties"]["ref"]["x-jsl-type"] = "json"
    flat = _placed_from_schema(Layout(NestedObjects.FLATTEN), old)
    run(spark, store, table_root, flat)
    assert written_table(lakehouse, "silver/orders_placed").columns["data.orderId"] == "order_id"
    now = _placed_from_schema(as_written).event_type("OrderPlaced")
    assert now.fields == flat.event_type("OrderPlaced").fields
    land(spark, table_root, [placed(2, quantity=3, ref="r-8")], first_seq=2)
    result = run(spark, store, table_root, _placed_from_schema(as_written), run_id="run-2")
    assert result.schema_changes == ()
    path = _placed_path(table_root)
    landed = [("o1", 2, "7"), ("o2", 3, '"r-8"')]
    assert table(spark, path, "order_id", "quantity", "ref") == landed

    # A new table (none at the path yet) nests `data` in one struct column.
    shutil.rmtree(path)
    nested = _placed_from_schema(as_written)
    assert [f.column for f in nested.event_type("OrderPlaced").fields][-1] == "data"
    rebuild(spark, store, table_root, nested)
    assert table(spark, path, "data.order_id", "data.quantity") == [("o1", 2), ("o2", 3)]
    # The union of unlike types is a VARIANT, each value of its own JSON type.
    refs = spark.read.format("delta").load(path).orderBy("seq")
    refs = refs.selectExpr("schema_of_variant(data.ref)", "to_json(data.ref)")
    assert [tuple(r) for r in refs.collect()] == [("BIGINT", "7"), ("STRING", '"r-8"')]
    assert written_table(lakehouse, "silver/orders_placed").columns["data"] == "data"
    assert _placed_from_schema(as_written) == nested
    assert_each_bronze_row_once(spark, table_root, nested, store)
