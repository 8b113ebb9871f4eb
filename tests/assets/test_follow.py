"""An ingest run tagged `jsl/follow` keeps landing batches while the stream advances.

The file trash's declared ingest and silver (`pipelines.definitions`) run in one Dagster run
on a nats-server of this module's own, real Spark/Delta and real Great Expectations, while
a thread publishes the next burst of events as soon as bronze commits the last one: the
run takes each burst as a batch of its own, reports each, and every event is in bronze
once and in exactly one of silver or quarantine. A run that fails in the middle of a
further batch (after its bronze commit, before the consumer moves; or before its silver
stage) leaves what a failed one-batch run leaves, and the next run finishes it.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Iterator

import pytest
from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetKey,
    DagsterEventType,
    DagsterInstance,
    MaterializeResult,
    materialize,
)

import assets.bronze
import assets.contract_silver
from assets.follow import FOLLOW_TAG, FollowTagError, batch_events, follow_seconds
from pipelines.definitions import bronze_file_events, silver_file_events
from pipelines.file_trash import tables
from pipelines.file_trash.generator import GOOD, generate_event_mix, publish_events
from pipelines.file_trash.topology import BRONZE_FILE_EVENTS, FILE_TRASH_TOPOLOGY
from pipelines.ingest.options import IngestRunOptions
from pipelines.lakehouse.artifacts import ArtifactStore, run_prefix
from pipelines.lakehouse.delta_log import read_table_version
from pipelines.lakehouse.watermarks import WatermarkStore
from pipelines.silver.stage import stage_name
from resources.jetstream import EmbeddedNatsServer, JetStreamResource, reconcile
from resources.lakehouse import LakehouseResource
from resources.quality import DataQualityResource
from resources.spark import SparkResource

BRONZE_KEY = AssetKey(["bronze", "file_events"])
SILVER_KEY = AssetKey(tables.SILVER_FILE_DELETED.split("/"))
BURST = 60  # events per burst


@pytest.fixture
def server(tmp_path) -> Iterator[EmbeddedNatsServer]:
    with EmbeddedNatsServer(store_dir=tmp_path / "nats") as server:
        yield server


@pytest.fixture
def resources(tmp_path, server, spark) -> dict:
    jetstream = JetStreamResource(servers=server.url)
    with jetstream.client() as client:
        reconcile(client, FILE_TRASH_TOPOLOGY)
    return {
        "jetstream": jetstream,
        "spark": SparkResource(),
        "lakehouse": LakehouseResource(root=str(tmp_path / "lakehouse")),
        "quality": DataQualityResource(),
    }


def bursts(count: int) -> list[list]:
    """`count` bursts of the file trash's event mix (a tenth of them bad), in order."""
    now = dt.datetime.now(dt.timezone.utc)
    events = generate_event_mix(BURST * count, bad_share=0.1, now=now, seed=35)
    return [events[i * BURST : (i + 1) * BURST] for i in range(count)]


def publish(resources: dict, events: list) -> None:
    with resources["jetstream"].client() as client:
        assert publish_events(client, events).published == len(events)


class Publisher(threading.Thread):
    """Publishes `later`'s k-th burst as soon as bronze's log shows its k-th commit."""

    def __init__(self, resources: dict, later: list[list]) -> None:
        super().__init__(daemon=True)
        self.resources, self.later = resources, later
        self.path = resources["lakehouse"].table_path(BRONZE_FILE_EVENTS.table)
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            for k, events in enumerate(self.later, 1):
                deadline = time.monotonic() + 300
                while _commits(self.path) < k:
                    assert time.monotonic() < deadline, f"bronze commit {k} never came"
                    time.sleep(0.05)
                publish(self.resources, events)
        except BaseException as error:  # reported by the test
            self.error = error


def _commits(path: str) -> int:
    version = read_table_version(path)
    return 0 if version is None else version + 1


def run(resources: dict, instance: DagsterInstance, *, follow: int | None, **kwargs):
    tags = {} if follow is None else {FOLLOW_TAG: str(follow)}
    return materialize(
        [bronze_file_events, silver_file_events],
        resources=resources,
        instance=instance,
        tags=tags,
        **kwargs,
    )


def materializations(result, key: AssetKey) -> list:
    return [m for m in result.get_asset_materialization_events() if m.asset_key == key]


def check_events(result) -> list:
    return [
        e.event_specific_data
        for e in result.all_events
        if e.event_type == DagsterEventType.ASSET_CHECK_EVALUATION
    ]


def assert_each_event_once(spark, resources: dict, events: list) -> None:
    """Every event in bronze once; each bronze row in exactly one of silver or quarantine;
    the silver watermark at bronze's last sequence."""
    path = resources["lakehouse"].table_path
    bronze = spark.read.format("delta").load(path(BRONZE_FILE_EVENTS.table))
    assert bronze.count() == bronze.select("seq").distinct().count() == len(events)
    good = sum(1 for e in events if e.kind == GOOD)
    deleted = spark.read.format("delta").load(path(tables.SILVER_FILE_DELETED))
    quarantine = spark.read.format("delta").load(path(tables.SILVER_QUARANTINE))
    assert deleted.count() == deleted.select("seq").distinct().count() == good
    assert quarantine.count() == quarantine.select("seq").distinct().count() == len(events) - good
    assert not deleted.select("seq").intersect(quarantine.select("seq")).count()
    with resources["jetstream"].client() as client:
        bucket = client.key_value(BRONZE_FILE_EVENTS.checkpoint_bucket)
        watermark = WatermarkStore(bucket).load(stage_name(BRONZE_FILE_EVENTS.stream))
    assert watermark.position == len(events)


def test_a_following_run_takes_each_burst_as_a_batch_and_reports_each(
    spark, resources, dagster_instance
):
    first, *later = bursts(3)
    publish(resources, first)
    publisher = Publisher(resources, later)
    publisher.start()

    result = run(resources, dagster_instance, follow=600)
    publisher.join(timeout=60)

    assert publisher.error is None and not publisher.is_alive()
    assert result.success
    # Three batches: the run's own materialisation, then two more of bronze and each table.
    bronze = materializations(result, BRONZE_KEY)
    assert [m.materialization.metadata["range_end"].value for m in bronze] == [60, 120, 180]
    batches = [m.materialization.metadata.get("batch_of_run") for m in bronze]
    assert [getattr(b, "value", None) for b in batches] == [None, 2, 3]
    assert len(materializations(result, SILVER_KEY)) == 3
    # Each check judged each batch, on the materialisation of that batch.
    records = dagster_instance.fetch_materializations(SILVER_KEY, limit=10, ascending=True)
    silver_storage = [record.storage_id for record in records.records]
    on_silver = [e for e in check_events(result) if e.asset_key == SILVER_KEY]
    per_check: dict[str, list[int]] = {}
    for evaluation in on_silver:
        target = evaluation.target_materialization_data
        per_check.setdefault(evaluation.check_name, []).append(target.storage_id)
    assert per_check and all(ids == silver_storage for ids in per_check.values()), per_check
    assert_each_event_once(spark, resources, [*first, *later[0], *later[1]])
    # Each batch's reports are stored apart, under the run.
    with resources["jetstream"].client() as client:
        stored = ArtifactStore(client).list(run_prefix(result.run_id))
    names = {artifact.name for artifact in stored}
    assert any("/batch-3/manifest.json" in name for name in names), sorted(names)


def fail_in_second_batch(monkeypatch, where: str) -> None:
    """The run's second landing fails at `where`: an ingest step (`engine.STEPS`), or
    "silver" (after its bronze commit and consumer move, before its silver stage)."""
    calls = {"ingest": 0, "stage": 0}
    ingest, stage = assets.bronze.ingest, assets.contract_silver.run_contract_silver

    def failing_hook(step: str) -> None:
        if step == where:
            raise RuntimeError(f"injected failure at {step}")

    def ingest_failing(*args, options: IngestRunOptions, **kwargs):
        calls["ingest"] += 1
        if calls["ingest"] == 2 and where != "silver":
            options = IngestRunOptions(until=options.until, hook=failing_hook)
        return ingest(*args, options=options, **kwargs)

    def stage_failing(*args, **kwargs):
        calls["stage"] += 1
        if calls["stage"] == 2 and where == "silver":
            raise RuntimeError("injected failure before the second silver stage")
        return stage(*args, **kwargs)

    monkeypatch.setattr(assets.bronze, "ingest", ingest_failing)
    monkeypatch.setattr(assets.contract_silver, "run_contract_silver", stage_failing)


@pytest.mark.parametrize("where", ["committed", "silver"])
def test_a_run_failing_in_a_further_batch_is_finished_by_the_next_run_exactly_once(
    spark, resources, dagster_instance, monkeypatch, where
):
    first, second = bursts(2)
    publish(resources, first)
    publisher = Publisher(resources, [second])
    publisher.start()
    fail_in_second_batch(monkeypatch, where)

    failed = run(resources, dagster_instance, follow=600, raise_on_error=False)
    publisher.join(timeout=60)
    monkeypatch.undo()

    assert publisher.error is None and not publisher.is_alive()
    assert not failed.success
    [failure] = [e for e in failed.all_events if e.event_type == DagsterEventType.STEP_FAILURE]
    assert "injected failure" in str(failure.event_specific_data.error), failure
    assert len(materializations(failed, BRONZE_KEY)) == (2 if where == "silver" else 1)
    again = run(resources, dagster_instance, follow=None)
    assert again.success
    assert_each_event_once(spark, resources, [*first, *second])


class TaggedRun:
    """What `follow_seconds` reads of a run's context before it asks the instance."""

    def __init__(self, value: str) -> None:
        self.run = type("Run", (), {"tags": {FOLLOW_TAG: value}, "run_id": "r"})()


@pytest.mark.parametrize("value", ["soon", "-5", "nan", "inf"])
def test_a_follow_tag_that_is_not_seconds_fails_saying_what_to_give(value):
    with pytest.raises(FollowTagError, match=f"run tag jsl/follow={value!r} is not a number"):
        follow_seconds(TaggedRun(value), BRONZE_KEY)


def test_a_follow_tag_of_zero_takes_one_batch():
    assert follow_seconds(TaggedRun("0"), BRONZE_KEY) == 0


class Instance:
    """The instance of a batch's events: its tables' latest materialisations, none here."""

    def fetch_materializations(self, key, limit):
        return type("Records", (), {"records": []})()


def test_a_failed_blocking_check_is_recorded_before_the_batchs_materialisations():
    context = type("Context", (), {"instance": Instance()})()
    table = MaterializeResult(asset_key=SILVER_KEY)
    blocked = AssetCheckResult(
        asset_key=SILVER_KEY, check_name="b", passed=False, severity=AssetCheckSeverity.ERROR
    )
    warned = AssetCheckResult(
        asset_key=SILVER_KEY, check_name="w", passed=False, severity=AssetCheckSeverity.WARN
    )
    held = AssetCheckResult(asset_key=SILVER_KEY, check_name="h", passed=True)

    events = list(batch_events(context, [table, held, blocked, warned], batch=2))

    assert [type(e).__name__ for e in events] == [
        "AssetCheckEvaluation",
        "AssetMaterialization",
        "AssetCheckEvaluation",
        "AssetCheckEvaluation",
    ]
    assert [getattr(e, "check_name", None) for e in events] == ["b", None, "h", "w"]
    assert events[0].blocking and not events[0].passed
    assert events[1].metadata["batch_of_run"].value == 2
