"""A declared ORDERS stream, end to end: provision, publish, materialise bronze and silver.

Real nats-server (one per test: ORDERS captures `orders.>`), real Spark and Delta, Dagster's
`materialize` on an ephemeral instance, everything built by the `JetStreamStream` component
from `tests/pipelines/contract/fixtures/orders.yaml`. The 200 events are those of
`tests/pipelines/silver/test_orders.py` (every tenth bad, ten kinds, two of each), except
that the future shippedAt is a day after the real publish time.
"""

import datetime as dt
import json
from collections.abc import Iterator

import pytest
import yaml
from dagster import AssetKey, ComponentTree, Definitions, asset, materialize

import assets.contract_silver as contract_silver
from assets.bronze import bronze_run_config
from pipelines.components.models import IngestModel, StreamModel
from pipelines.components.stream import ComponentDeclarationError, JetStreamStream
from pipelines.lakehouse.artifacts import ArtifactStore
from pipelines.lakehouse.watermarks import WatermarkConflictError
from pipelines.settings import PROJECT_DIR
from resources.jetstream import EmbeddedNatsServer, JetStreamResource, reconcile
from resources.lakehouse import LakehouseResource
from resources.quality import DataQualityResource
from resources.spark import SparkResource
from tests.pipelines.silver.test_orders import RULES, amount, iso, kind_of, payload, placed

CONTRACT_FILE = PROJECT_DIR / "tests/pipelines/contract/fixtures/orders.yaml"
COUNT = 200
PLACED_KEY = AssetKey(["silver", "orders_placed"])
SHIPPED_KEY = AssetKey(["silver", "orders_shipped"])
QUARANTINE_KEY = AssetKey(["quarantine", "orders"])
# Failing rows per check: two rows of each bad kind, each kind breaking one rule.
FAILING = {
    (PLACED_KEY, "required_fields_present"): 2,
    (PLACED_KEY, "field_types_valid"): 2,
    (PLACED_KEY, "event_id_unique"): 2,
    (PLACED_KEY, "field_rules"): 4,  # amount_in_range 2, currency_in_allowed_values 2
    (PLACED_KEY, "order_id_format"): 0,
    (SHIPPED_KEY, "required_fields_present"): 0,
    (SHIPPED_KEY, "field_types_valid"): 0,
    (SHIPPED_KEY, "event_id_unique"): 0,
    (SHIPPED_KEY, "order_id_format"): 2,
    (SHIPPED_KEY, "shipped_at_not_in_future"): 2,
    (SHIPPED_KEY, "no_unknown_fields"): 2,
    (QUARANTINE_KEY, "parseable_json"): 2,
    (QUARANTINE_KEY, "known_event_type"): 2,
}


def component(**contract) -> JetStreamStream:
    return JetStreamStream(
        stream=StreamModel(name="ORDERS", subjects=["orders.>"]),
        ingests=[IngestModel(name="orders_events", durable="orders-bronze", table="bronze/orders")],
        **(contract or {"contract_file": str(CONTRACT_FILE)}),
    )


@pytest.fixture
def server(tmp_path) -> Iterator[EmbeddedNatsServer]:
    with EmbeddedNatsServer(store_dir=tmp_path / "nats") as server:
        yield server


@pytest.fixture
def resources(tmp_path, server, spark) -> dict:
    return {
        "jetstream": JetStreamResource(servers=server.url),
        "spark": SparkResource(),
        "lakehouse": LakehouseResource(root=str(tmp_path / "lakehouse")),
        "quality": DataQualityResource(),
    }


def provision_and_publish(declared: JetStreamStream, resources: dict) -> dt.datetime:
    """Reconciles the declared topology and publishes the events; returns the future time."""
    future = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1)
    messages = []
    for i in range(COUNT):
        event = payload(i)
        if kind_of(i) == "future_time":
            event["data"]["shippedAt"] = iso(future)
        data = event if isinstance(event, bytes) else json.dumps(event).encode()
        messages.append(("orders.placed" if i % 2 == 0 else "orders.shipped", data))
    with resources["jetstream"].client() as client:
        reconcile(client, declared.topology())
        client.publish_batch(messages)
    return future


def run(declared: JetStreamStream, resources, instance, *extra, raise_on_error=True):
    defs = declared.build_defs(ComponentTree.for_test().load_context)
    return materialize(
        [*defs.assets, *extra], resources=resources, instance=instance,
        raise_on_error=raise_on_error,
    )  # fmt: skip


def table(spark, resources, name: str):
    return spark.read.format("delta").load(resources["lakehouse"].table_path(name))


def checks(result) -> dict[tuple[AssetKey, str], tuple[bool, int, str]]:
    return {
        (e.asset_key, e.check_name): (
            e.passed,
            e.metadata["failing_rows"].value,
            e.severity.value,
        )
        for e in result.get_asset_check_evaluations()
    }


def expected_quarantine() -> dict[int, tuple]:
    rows = {}
    for i in range(COUNT):
        kind = kind_of(i)
        if kind in (None, "future_time"):
            continue
        event = payload(i)
        ids = (None, None) if kind == "malformed_json" else (event["eventId"], event["eventType"])
        rows[i + 1] = (RULES[kind], *ids)
    return rows


def test_declared_orders_land_in_silver_and_quarantine_exactly_once_with_their_checks(
    spark, resources, dagster_instance
):
    declared = component()
    provision_and_publish(declared, resources)

    first = run(declared, resources, dagster_instance)

    assert first.success
    placed_rows = table(spark, resources, "silver/orders_placed").select(
        "event_id", "order_id", "customer_id", "amount", "currency", "amount_cents", "seq",
        "subject",
    )  # fmt: skip
    assert {tuple(r) for r in placed_rows.collect()} == {
        (
            f"evt-{i:04d}",
            f"ORD-{i:06d}",
            f"cust-{i % 37:03d}",
            amount(i),
            placed(i)["data"]["currency"],
            int(amount(i) * 100),
            i + 1,
            "orders.placed",
        )
        for i in range(0, COUNT, 2)
        if kind_of(i) is None
    }
    shipped_rows = table(spark, resources, "silver/orders_shipped").collect()
    assert {(r.event_id, r.order_id, r.seq) for r in shipped_rows} == {
        (f"evt-{i:04d}", f"ORD-{i - 1:06d}", i + 1)
        for i in range(1, COUNT, 2)
        if kind_of(i) in (None, "future_time")
    }
    late = sorted(r.seq for r in shipped_rows if r.shipped_at > r.published)
    assert late == [i + 1 for i in range(COUNT) if kind_of(i) == "future_time"]
    quarantine = table(spark, resources, "quarantine/orders")
    assert {
        r.seq: (r.failed_rules, r.event_id, r.event_type)
        for r in quarantine.select("seq", "failed_rules", "event_id", "event_type").collect()
    } == expected_quarantine()
    assert (len(placed_rows.collect()), len(shipped_rows), quarantine.count()) == (100, 82, 18)
    assert checks(first) == {
        key: (failing == 0, failing, "WARN") for key, failing in FAILING.items()
    }
    # The column rules' verdicts come from the generated Great Expectations suites.
    evaluations = {(e.asset_key, e.check_name): e for e in first.get_asset_check_evaluations()}
    sources = {key: e.metadata["verdict_from"].value for key, e in evaluations.items()}
    assert sources[(PLACED_KEY, "field_rules")] == "great_expectations"
    assert sources[(PLACED_KEY, "field_types_valid")] == "failing_rows"
    unique = evaluations[(PLACED_KEY, "event_id_unique")].metadata
    assert unique["expectations"].value == "event_id_unique"
    assert unique["unexpected_rows"].value == 2 * FAILING[(PLACED_KEY, "event_id_unique")]
    written = {
        m.asset_key: m.metadata["rows_written"].value
        for m in first.asset_materializations_for_node("silver_orders")
    }
    assert written == {PLACED_KEY: 100, SHIPPED_KEY: 82, QUARANTINE_KEY: 18}
    # The batch's GX results, reports and manifest are in the Object Store, named in metadata.
    with resources["jetstream"].client() as client:
        manifest = ArtifactStore(client).get_manifest(first.run_id, "silver/orders")
    assert manifest.ranges == {"bronze/orders": (1, COUNT)}
    assert manifest.checks == {
        f"{key.to_user_string()}:{name}": failing == 0 for (key, name), failing in FAILING.items()
    }
    assert {(t.table, t.rows_written) for t in manifest.tables} == {
        ("silver/orders_placed", 100), ("silver/orders_shipped", 82), ("quarantine/orders", 18)
    }  # fmt: skip
    assert {a.name.rsplit("/", 1)[1] for a in manifest.artifacts} == {
        "validation-OrderPlaced.json", "report-OrderPlaced.html",
        "validation-OrderShipped.json", "report-OrderShipped.html",
    }  # fmt: skip
    for materialization in first.asset_materializations_for_node("silver_orders"):
        fetch = materialization.metadata["artifacts_fetch"].value
        assert f"runs/{first.run_id}/silver/orders/manifest.json" in fetch

    before = {name: sorted(map(tuple, table(spark, resources, name).collect())) for name in (
        "silver/orders_placed", "silver/orders_shipped", "quarantine/orders")}  # fmt: skip
    second = run(declared, resources, dagster_instance)

    assert second.success
    after = {name: sorted(map(tuple, table(spark, resources, name).collect())) for name in before}
    assert after == before
    assert checks(second) == checks(first)


def test_a_failing_block_rule_is_a_blocking_error_and_what_follows_does_not_run(
    spark, resources, dagster_instance
):
    contract = yaml.safe_load(CONTRACT_FILE.read_text())
    contract["events"]["OrderShipped"]["fields"]["data.shippedAt"]["severity"] = "block"
    declared = component(contract=contract)
    provision_and_publish(declared, resources)
    ran = []

    @asset(deps=[SHIPPED_KEY])
    def shipping_report() -> None:
        ran.append(True)

    result = run(declared, resources, dagster_instance, shipping_report, raise_on_error=False)

    assert not result.success
    assert checks(result)[(SHIPPED_KEY, "shipped_at_not_in_future")] == (False, 2, "ERROR")
    assert checks(result)[(SHIPPED_KEY, "order_id_format")] == (False, 2, "WARN")
    assert ran == []
    # A block rule does not move rows: the two shipments dated tomorrow stay in silver.
    assert table(spark, resources, "silver/orders_shipped").count() == 82


def test_silver_reads_the_ingest_silver_from_names_and_refuses_an_unknown_one():
    second = IngestModel(name="orders_audit", durable="orders-audit", table="audit/orders")
    declared = component().model_copy(update={"silver_from": "orders_audit"})
    declared.ingests.append(second)

    defs = declared.build_defs(ComponentTree.for_test().load_context)
    silver = next(a for a in defs.assets if getattr(a, "node_def", None) and PLACED_KEY in a.keys)

    assert silver.asset_deps[PLACED_KEY] == {AssetKey(["bronze", "orders_audit"])}
    wrong = declared.model_copy(update={"silver_from": "orders_evnts"})
    with pytest.raises(ComponentDeclarationError, match="silver_from 'orders_evnts' names no"):
        wrong.build_defs(ComponentTree.for_test().load_context)


def job_assets(defs, name: str) -> set[AssetKey]:
    """What the job `name` of a component's `defs` materialises."""
    job = Definitions(assets=defs.assets, jobs=defs.jobs, resources=defs.resources).resolve_job_def(
        name
    )
    return set(job.asset_layer.executable_asset_keys)


def test_the_silver_from_ingests_job_takes_silver_in_the_same_run_unless_declared_off():
    second = IngestModel(name="orders_audit", durable="orders-audit", table="audit/orders")
    declared = component()
    declared.ingests.append(second)
    silver = {PLACED_KEY, SHIPPED_KEY, QUARANTINE_KEY}
    bronze, audit = AssetKey(["bronze", "orders_events"]), AssetKey(["bronze", "orders_audit"])

    defs = declared.build_defs(ComponentTree.for_test().load_context)
    assert job_assets(defs, "ingest_orders_events") == {bronze} | silver
    assert job_assets(defs, "ingest_orders_audit") == {audit}

    alone = declared.model_copy(update={"silver_in_ingest_run": False})
    defs = alone.build_defs(ComponentTree.for_test().load_context)
    assert job_assets(defs, "ingest_orders_events") == {bronze}
    moved = declared.model_copy(update={"silver_from": "orders_audit"})
    defs = moved.build_defs(ComponentTree.for_test().load_context)
    assert job_assets(defs, "ingest_orders_events") == {bronze}
    assert job_assets(defs, "ingest_orders_audit") == {audit} | silver


def test_the_sensors_run_of_the_ingest_job_lands_bronze_then_silver_once(
    spark, resources, dagster_instance
):
    declared = component()
    provision_and_publish(declared, resources)
    defs = declared.build_defs(ComponentTree.for_test().load_context)
    job = Definitions(assets=defs.assets, jobs=defs.jobs, resources=resources).resolve_job_def(
        "ingest_orders_events"
    )
    spec = declared.ingests[0].ingest(declared.stream.spec()).spec
    # What the stream sensor requests: the bronze range's end as run config, nothing for silver.
    config = bronze_run_config(spec, COUNT)

    first = job.execute_in_process(run_config=config, instance=dagster_instance)

    assert first.success
    assert table(spark, resources, "bronze/orders").count() == COUNT
    landed = {
        name: table(spark, resources, name).count()
        for name in ("silver/orders_placed", "silver/orders_shipped", "quarantine/orders")
    }
    assert sum(landed.values()) == COUNT  # every bronze row in exactly one table
    assert checks(first) == {
        key: (failing == 0, failing, "WARN") for key, failing in FAILING.items()
    }  # every check, judged in the ingest run
    # The same range again (a retried run): nothing new in bronze or silver.
    again = job.execute_in_process(run_config=config, instance=dagster_instance)
    assert again.success
    assert table(spark, resources, "bronze/orders").count() == COUNT
    assert {name: table(spark, resources, name).count() for name in landed} == landed


def test_a_run_that_loses_the_watermark_to_another_goes_again_and_writes_each_row_once(
    spark, resources, dagster_instance, monkeypatch
):
    declared = component()
    provision_and_publish(declared, resources)
    real = contract_silver.run_contract_silver
    calls = []

    def raced(*args, **kwargs):
        # Another run of the stage takes the batch first and moves the watermark; this run's
        # own merges then insert nothing and its compare-and-set fails, as in a real race.
        calls.append(kwargs["run_id"])
        if len(calls) == 1:
            real(*args, **{**kwargs, "run_id": "the-other-run"})
            stage = kwargs["stage"]
            raise WatermarkConflictError(
                f"stage {stage!r}: moved by another run", stage=stage, bucket="checkpoints"
            )
        return real(*args, **kwargs)

    monkeypatch.setattr(contract_silver, "run_contract_silver", raced)

    result = run(declared, resources, dagster_instance)

    assert result.success
    assert len(calls) == 2  # went again once, in the same step
    landed = sum(
        table(spark, resources, name).count()
        for name in ("silver/orders_placed", "silver/orders_shipped", "quarantine/orders")
    )
    assert landed == COUNT  # every bronze row once, written by the run that won
    warnings = [
        e.message
        for e in dagster_instance.all_logs(result.run_id)
        if "running the stage again" in e.message
    ]
    assert warnings and "moved by another run" in warnings[0]


def test_the_quarantine_table_can_be_named_but_not_after_another_table_of_the_stream():
    named = component(contract_file=str(CONTRACT_FILE), quarantine_table="silver/rejected")

    defs = named.build_defs(ComponentTree.for_test().load_context)

    silver = next(a for a in defs.assets if getattr(a, "node_def", None) and PLACED_KEY in a.keys)
    assert AssetKey(["silver", "rejected"]) in silver.keys
    assert QUARANTINE_KEY not in silver.keys
    clash = component(contract_file=str(CONTRACT_FILE), quarantine_table="silver/orders_placed")
    with pytest.raises(ComponentDeclarationError, match=(
        "quarantine_table 'silver/orders_placed' is the table of event type 'OrderPlaced'"
    )):  # fmt: skip
        clash.build_defs(ComponentTree.for_test().load_context)


def test_a_quarantine_and_block_rule_quarantines_its_rows_and_stops_what_follows(
    spark, resources, dagster_instance
):
    contract = yaml.safe_load(CONTRACT_FILE.read_text())
    contract["events"]["OrderPlaced"]["fields"]["data.amount"]["severity"] = "quarantine+block"
    declared = component(contract=contract)
    provision_and_publish(declared, resources)
    ran = []

    @asset(deps=[PLACED_KEY])
    def revenue_report() -> None:
        ran.append(True)

    result = run(declared, resources, dagster_instance, revenue_report, raise_on_error=False)

    assert not result.success
    assert checks(result)[(PLACED_KEY, "amount_in_range")] == (False, 2, "ERROR")
    assert ran == []
    # The two orders out of range are in quarantine, not in silver.
    quarantined = table(spark, resources, "quarantine/orders").where(
        "array_contains(failed_rules, 'amount_in_range')"
    )
    assert quarantined.count() == 2
    assert table(spark, resources, "silver/orders_placed").count() == 100
