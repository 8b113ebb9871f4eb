"""Nothing new, nothing done (issues 34 and 35): a run with nothing past any watermark starts
no SparkSession, reports every asset as having nothing new, and records silver's checks as
carried over from the batch they judged, not as new verdicts. One new message, and Spark is
used again and the row lands once.

Real nats-server, real Spark/Delta and GX, real Dagster runs of the code location's assets
(and of a declared ORDERS stream), with the tables in a local folder and, for the first test,
in a real S3 server (SeaweedFS) too. A run that must not use Spark gets a `SparkResource` whose
`get_session` raises.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest
import yaml
from dagster import (
    AssetKey,
    AssetsDefinition,
    AssetSelection,
    ComponentTree,
    Definitions,
    asset,
    materialize,
)

from assets.gold import GOLD_KEYS
from pipelines.components.models import IngestModel, StreamModel
from pipelines.components.stream import JetStreamStream
from pipelines.definitions import ASSETS, file_trashed_events
from pipelines.file_trash import tables
from pipelines.file_trash.events import generate_file_deleted_events
from pipelines.file_trash.topology import FILE_TRASH_TOPOLOGY
from resources.jetstream import EmbeddedNatsServer, JetStreamResource, reconcile
from resources.jetstream.core.messages import MSG_ID_HEADER
from resources.lakehouse import LakehouseResource
from resources.quality import DataQualityResource
from resources.spark import SparkResource
from tests.assets.test_contract_silver import CONTRACT_FILE, SHIPPED_KEY, provision_and_publish

FILE_DELETED_KEY = AssetKey(tables.SILVER_FILE_DELETED.split("/"))
SESSIONS: list[str] = []  # one entry per SparkSession a run asked for


class NoSpark(SparkResource):
    """A SparkResource a run must not use: asking it for a session fails the step."""

    def get_session(self):
        raise AssertionError("a run with nothing new asked for a SparkSession")


class CountedSpark(SparkResource):
    """The real SparkResource, counting the sessions runs ask it for."""

    def get_session(self):
        SESSIONS.append("asked")
        return super().get_session()


@pytest.fixture
def server(tmp_path) -> Iterator[EmbeddedNatsServer]:
    """The code location's topology uses FILE_EVENTS on `files.>`: a server of its own."""
    with EmbeddedNatsServer(store_dir=tmp_path / "nats") as server:
        yield server


@pytest.fixture
def resources(tmp_path, server, spark, request) -> dict[str, object]:
    """The code location's resources, pointed at this test's server and table root (the
    test session's `spark` fixture is the session runs with Spark get): a local folder, or
    with the parameter "s3", a root on the session's S3 server (`s3_lakehouse`)."""
    jetstream = JetStreamResource(servers=server.url)
    with jetstream.client() as client:
        reconcile(client, FILE_TRASH_TOPOLOGY)
    on_s3 = getattr(request, "param", "local") == "s3"
    root = request.getfixturevalue("s3_lakehouse") if on_s3 else str(tmp_path / "lakehouse")
    return {
        "jetstream": jetstream,
        "spark": CountedSpark(),
        "lakehouse": LakehouseResource(root=root),
        "quality": DataQualityResource(),
    }


def publish(resources, count: int, *, seed: int) -> list[str]:
    """Publishes `count` FileDeletedEvents; their event ids."""
    events = list(
        generate_file_deleted_events(count, now=dt.datetime.now(dt.timezone.utc), seed=seed)
    )
    with resources["jetstream"].client() as client:
        client.publish_batch(
            [("files.deleted", e.to_json(), {MSG_ID_HEADER: e.eventId}) for e in events]
        )
    return [e.eventId for e in events]


def run_everything(resources, instance, *, spark: SparkResource | None = None):
    """One in-process run of every asset of the code location ('*')."""
    everything = Definitions(
        assets=ASSETS, resources={**resources, "spark": spark or resources["spark"]}
    )
    keys = AssetSelection.from_coercible("*").resolve(everything.resolve_asset_graph())
    return everything.resolve_implicit_global_asset_job_def().execute_in_process(
        instance=instance, asset_selection=list(keys), raise_on_error=False
    )


def materialized(result) -> dict[AssetKey, dict]:
    return {
        event.asset_key: {k: v.value for k, v in event.materialization.metadata.items()}
        for event in result.get_asset_materialization_events()
    }


def evaluations(result) -> dict[tuple[AssetKey, str], object]:
    return {(e.asset_key, e.check_name): e for e in result.get_asset_check_evaluations()}


def failures(result) -> list[str]:
    """The errors of the run's failed steps."""
    return [e.step_failure_data.error.to_string() for e in result.all_events if e.is_step_failure]


def table(spark, resources, name: str):
    return spark.read.format("delta").load(resources["lakehouse"].table_path(name))


# On S3 the stages read the tables' logs through the S3 API (pyarrow), still without a JVM.
@pytest.mark.parametrize("resources", ["local", "s3"], indirect=True)
def test_a_run_with_nothing_new_starts_no_spark_and_one_new_message_lands_once(
    resources, dagster_instance, spark
):
    event_ids = publish(resources, 25, seed=21)
    first = run_everything(resources, dagster_instance)
    assert first.success
    # The first run published a FilePlacedInTrashEvent per deleted file into FILE_EVENTS
    # itself: the second lands them in bronze and silver/file_trashed. Then all is taken.
    second = run_everything(resources, dagster_instance)
    assert second.success
    assert materialized(second)[FILE_DELETED_KEY]["rows_written"] == 0
    assert SESSIONS

    idle = run_everything(resources, dagster_instance, spark=NoSpark())

    assert idle.success, failures(idle)
    assets = materialized(idle)
    assert set(assets) == {key for a in ASSETS if isinstance(a, AssetsDefinition) for key in a.keys}
    assert all(metadata["nothing_new"] is True for metadata in assets.values()), {
        key.to_user_string(): metadata.get("nothing_new") for key, metadata in assets.items()
    }
    bronze = assets[AssetKey(["bronze", "file_events"])]
    assert bronze["stream_last_seq"] == bronze["checkpoint_committed_end"] == 50
    assert (bronze["messages"], bronze["dagster/row_count"]) == (0, 50)
    assert assets[FILE_DELETED_KEY]["dagster/row_count"] == 25
    assert assets[GOLD_KEYS["daily_by_user"]]["rewritten"] is False
    assert assets[file_trashed_events.key]["published"] == 0
    # Each asset said so in the run's log (silver once for its three tables).
    said = [e.user_message for e in dagster_instance.all_logs(idle.run_id)]
    assert len([m for m in said if ": nothing new: " in m]) == len(assets) - 2
    # Silver's checks are the second run's verdicts, carried over, not judged again.
    judged, carried = evaluations(second), evaluations(idle)
    assert carried.keys() == judged.keys() and carried
    for key, evaluation in carried.items():
        assert evaluation.metadata["carried_over_from_run"].value == second.run_id, key
        assert evaluation.passed == judged[key].passed
        assert evaluation.severity == judged[key].severity
        assert evaluation.metadata["batch"].value.startswith("bronze seq 26-50 ")
        assert "Carried over" in evaluation.description
        assert "carried_over_from_run" not in judged[key].metadata

    # The opposite: one new message. Spark is used, and the row lands once.
    SESSIONS.clear()
    [new_id] = publish(resources, 1, seed=22)
    assert new_id not in event_ids
    one = run_everything(resources, dagster_instance)

    assert one.success
    assert SESSIONS
    assets = materialized(one)
    assert assets[AssetKey(["bronze", "file_events"])]["messages"] == 1
    assert assets[AssetKey(["bronze", "file_events"])]["nothing_new"] is False
    assert assets[FILE_DELETED_KEY]["rows_written"] == 1
    assert assets[file_trashed_events.key]["published"] == 1
    assert all("carried_over_from_run" not in e.metadata for e in evaluations(one).values())
    bronze_rows = table(spark, resources, "bronze/file_events")
    assert bronze_rows.where("seq = 51").count() == 1
    assert bronze_rows.count() == 51
    silver_rows = table(spark, resources, tables.SILVER_FILE_DELETED)
    assert silver_rows.where(f"event_id = '{new_id}'").count() == 1
    assert silver_rows.count() == 26


def orders(**contract) -> JetStreamStream:
    """The declared ORDERS stream of `test_contract_silver.py`."""
    return JetStreamStream(
        stream=StreamModel(name="ORDERS", subjects=["orders.>"]),
        ingests=[IngestModel(name="orders_events", durable="orders-bronze", table="bronze/orders")],
        **contract,
    )


@pytest.fixture
def orders_server(tmp_path) -> Iterator[EmbeddedNatsServer]:
    with EmbeddedNatsServer(store_dir=tmp_path / "nats") as server:
        yield server


def test_a_failed_blocking_check_is_carried_over_without_spark_and_still_holds_what_follows(
    tmp_path, orders_server, spark, dagster_instance
):
    contract = yaml.safe_load(CONTRACT_FILE.read_text())
    contract["events"]["OrderShipped"]["fields"]["data.shippedAt"]["severity"] = "block"
    declared = orders(contract=contract)
    resources = {
        "jetstream": JetStreamResource(servers=orders_server.url),
        "spark": SparkResource(),
        "lakehouse": LakehouseResource(root=str(tmp_path / "lakehouse")),
        "quality": DataQualityResource(),
    }
    provision_and_publish(declared, resources)
    ran = []

    @asset(deps=[SHIPPED_KEY])
    def shipping_report() -> None:
        ran.append(True)

    def run(spark_resource: SparkResource):
        defs = declared.build_defs(ComponentTree.for_test().load_context)
        return materialize(
            [*defs.assets, shipping_report],
            resources={**resources, "spark": spark_resource},
            instance=dagster_instance,
            raise_on_error=False,
        )

    failed = run(SparkResource())
    assert not failed.success

    again = run(NoSpark())

    # It fails again on the blocking check, not on Spark, and the report still waits.
    assert not again.success
    assert ran == []
    assert all(m["nothing_new"] is True for m in materialized(again).values())
    verdict = evaluations(again)[(SHIPPED_KEY, "shipped_at_not_in_future")]
    assert not verdict.passed
    assert verdict.metadata["carried_over_from_run"].value == failed.run_id
    assert verdict.metadata["failing_rows"].value == 2
    errors = failures(again)
    assert errors and all("blocking asset check" in e for e in errors), errors
    assert not any("SparkSession" in e for e in errors)
    assert all("carried_over_from_run" in e.metadata for e in evaluations(again).values())
