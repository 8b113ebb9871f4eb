"""`build_stream_defs`: one declared stream becomes its bronze assets, jobs, sensors and checks,
with every name derived from the stream and its ingests, and a second stream merges beside the
first without a clash."""

from __future__ import annotations

import pytest
from dagster import AssetKey, Definitions, asset

from pipelines.file_trash.topology import AUDIT_LOG, BRONZE_FILE_EVENTS, FILE_EVENTS
from pipelines.ingest.spec import IngestSpec
from pipelines.wiring.streams import (
    BronzeIngest,
    build_stream,
    build_stream_defs,
    check_one_writer_per_bronze_table,
)
from resources.jetstream import JetStreamResource, StreamSpec
from resources.lakehouse import TABLE_METADATA_KEY, LakehouseResource
from resources.spark import SparkResource

ORDERS = StreamSpec(name="ORDERS", subjects=("orders.>",), description="Orders.")
ORDER_EVENTS = IngestSpec(
    name="order_events", stream="ORDERS", durable="orders-bronze", table="bronze/order_events"
)
RESOURCES = {
    "jetstream": JetStreamResource(),
    "spark": SparkResource(),
    "lakehouse": LakehouseResource(root="/tmp/lakehouse"),
}


def names(defs: Definitions) -> dict[str, set[str]]:
    """The names of what `defs` holds (resolved with the resources the jobs need)."""
    defs = Definitions.merge(defs, Definitions(resources=RESOURCES))
    return {
        "assets": {key.to_user_string() for key in defs.resolve_all_asset_keys()},
        "jobs": {job.name for job in defs.jobs or []},
        "sensors": {sensor.name for sensor in defs.sensors or []},
        "checks": {
            f"{key.asset_key.to_user_string()}:{key.name}"
            for key in defs.resolve_asset_graph().asset_check_keys
        },
    }


def test_a_stream_gets_its_assets_jobs_sensors_and_checks_named_after_it() -> None:
    built = build_stream(
        FILE_EVENTS,
        [BronzeIngest(BRONZE_FILE_EVENTS, replay=True), BronzeIngest(AUDIT_LOG, "audit")],
    )

    assert names(built.defs) == {
        "assets": {"jetstream/FILE_EVENTS", "bronze/file_events", "audit/audit_log"},
        "jobs": {"ingest_file_events", "ingest_audit_log", "replay_file_events"},
        "sensors": {
            "file_events_stream_sensor",
            "audit_log_stream_sensor",
            "observe_FILE_EVENTS",
            "file_events_replay_requests",
        },
        "checks": {"bronze/file_events:consumer_lag", "audit/audit_log:consumer_lag"},
    }
    assert built.tables == ("bronze/file_events", "audit/audit_log")
    assert built.bronze_assets["audit_log"].group_names_by_key == {
        AssetKey(["audit", "audit_log"]): "audit"
    }


def test_an_ingest_job_takes_its_same_run_assets_after_bronze_and_the_others_do_not() -> None:
    silver = AssetKey(["silver", "file_events"])
    built = build_stream(
        FILE_EVENTS,
        [
            BronzeIngest(BRONZE_FILE_EVENTS, same_run=(silver,)),
            BronzeIngest(AUDIT_LOG, "audit"),
        ],
    )

    @asset(key=silver, deps=[AssetKey(["bronze", "file_events"])])
    def silver_table() -> None: ...

    defs = Definitions.merge(built.defs, Definitions(assets=[silver_table], resources=RESOURCES))
    job = defs.resolve_job_def("ingest_file_events")
    assert job.asset_layer.executable_asset_keys == {AssetKey(["bronze", "file_events"]), silver}
    assert job.description.endswith(", then materialise silver/file_events in the same run.")
    audit = defs.resolve_job_def("ingest_audit_log")
    assert audit.asset_layer.executable_asset_keys == {AssetKey(["audit", "audit_log"])}
    assert "then" not in audit.description


def test_a_second_stream_merges_beside_the_first_and_loads() -> None:
    merged = Definitions.merge(
        build_stream_defs(FILE_EVENTS, [BronzeIngest(BRONZE_FILE_EVENTS)]),
        build_stream_defs(ORDERS, [BronzeIngest(ORDER_EVENTS, replay=True)]),
    )

    Definitions.validate_loadable(Definitions.merge(merged, Definitions(resources=RESOURCES)))
    assert {"jetstream/ORDERS", "bronze/order_events"} <= names(merged)["assets"]
    assert "ingest_order_events" in names(merged)["jobs"]


@pytest.mark.parametrize(
    ("ingests", "message"),
    [
        ([], "declare at least one ingest"),
        ([BronzeIngest(ORDER_EVENTS)], "reads stream 'ORDERS', not 'FILE_EVENTS'"),
        (
            [BronzeIngest(BRONZE_FILE_EVENTS), BronzeIngest(BRONZE_FILE_EVENTS, "audit")],
            "two ingests share the name 'file_events'",
        ),
        (
            [BronzeIngest(BRONZE_FILE_EVENTS, follow_seconds=60)],
            "ingest 'file_events': follow_seconds needs an asset materialised in the same run",
        ),
    ],
)
def test_a_stream_declared_wrong_is_refused_naming_what(ingests, message) -> None:
    with pytest.raises(ValueError, match=message):
        build_stream_defs(FILE_EVENTS, ingests)


def test_a_bronze_table_written_by_a_second_stream_or_asset_is_refused_naming_both() -> None:
    """One ingest per bronze table: its lease is what keeps the table's writers apart."""
    same_table = IngestSpec(
        name="orders_raw", stream="ORDERS", durable="orders-bronze", table=BRONZE_FILE_EVENTS.table
    )
    file_events = build_stream_defs(FILE_EVENTS, [BronzeIngest(BRONZE_FILE_EVENTS)])
    orders = build_stream_defs(ORDERS, [BronzeIngest(ORDER_EVENTS)])
    orders_into_file_events = build_stream_defs(ORDERS, [BronzeIngest(same_table)])

    @asset(metadata={TABLE_METADATA_KEY: BRONZE_FILE_EVENTS.table})
    def rewrites_bronze() -> None: ...

    check_one_writer_per_bronze_table([*file_events.assets, *orders.assets])
    with pytest.raises(ValueError) as raised:
        check_one_writer_per_bronze_table([*file_events.assets, *orders_into_file_events.assets])
    with pytest.raises(ValueError, match="declared by asset 'rewrites_bronze' too"):
        check_one_writer_per_bronze_table([*file_events.assets, rewrites_bronze])

    assert str(raised.value).startswith(
        "table 'bronze/file_events' is the bronze table of asset 'bronze/file_events' (stream "
        "'FILE_EVENTS', consumer 'lakehouse-bronze') and is declared by asset "
        "'bronze/orders_raw' (stream 'ORDERS', consumer 'orders-bronze') too"
    )


def test_the_sensor_interval_is_declared_per_ingest_and_defaults_to_dagster_s() -> None:
    from pipelines.components.models import IngestModel

    built = build_stream(ORDERS, [BronzeIngest(ORDER_EVENTS, sensor_interval=5)])
    declared = IngestModel(name="o", durable="o", table="bronze/o", sensor_interval_seconds=7)
    default = IngestModel(name="o", durable="o", table="bronze/o")

    intervals = {s.name: s.minimum_interval_seconds for s in built.defs.sensors}
    assert intervals["order_events_stream_sensor"] == 5
    assert intervals["observe_ORDERS"] == 30
    assert (declared.ingest(ORDERS).sensor_interval, default.ingest(ORDERS).sensor_interval) == (
        7, 30
    )  # fmt: skip
    too_often = IngestModel(name="o", durable="o", table="bronze/o", sensor_interval_seconds=0)
    with pytest.raises(ValueError, match="ingest 'o': sensor_interval_seconds must be at least 1"):
        too_often.ingest(ORDERS)
