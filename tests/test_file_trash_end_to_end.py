"""The file trash lakehouse end to end, on a real nats-server, real Spark/Delta, real GX.

A known mix of 200 events (180 good, 20 bad of seven kinds) goes through every asset of the
code location, and every table's exact row count is checked, with the asset checks, the
artifacts in the Object Store, the downstream events, and that running again over the same
data changes nothing.

The code location's topology uses stream FILE_EVENTS on `files.>`, so these tests run their
own nats-server instead of the session's.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator

import pytest
from dagster import AssetKey, DagsterInstance, materialize

from assets.gold import SILVER_FILE_DELETED_KEY
from pipelines.definitions import (
    audit_log,
    bronze_file_events,
    file_trashed_events,
    gold_file_trash,
    silver_file_events,
    trash_notifications,
)
from pipelines.file_trash import tables
from pipelines.file_trash.downstream import STAGE as PUBLISHER_STAGE
from pipelines.file_trash.events import FileDeletedEvent, generate_file_deleted_events
from pipelines.file_trash.generator import generate_event_mix, publish_events, summarize
from pipelines.file_trash.topology import (
    AUDIT_LOG,
    BRONZE_FILE_EVENTS,
    CHECKPOINTS,
    FILE_TRASH_TOPOLOGY,
    TRASH_NOTIFICATIONS,
)
from pipelines.lakehouse.artifacts import ArtifactStore
from pipelines.lakehouse.delta_tables import table_version
from pipelines.lakehouse.watermarks import watermark_key
from resources.jetstream import EmbeddedNatsServer, JetStreamResource, reconcile
from resources.jetstream.core.messages import MSG_ID_HEADER
from resources.lakehouse import LakehouseResource
from resources.quality import DataQualityResource
from resources.spark import SparkResource

INGESTS = [bronze_file_events, audit_log]
LAKEHOUSE = [silver_file_events, gold_file_trash, file_trashed_events, trash_notifications]
ALL_TABLES = (
    BRONZE_FILE_EVENTS.table,
    AUDIT_LOG.table,
    TRASH_NOTIFICATIONS.table,
    *tables.SILVER_TABLES,
    *tables.GOLD_TABLES,
)
# The contract keeps deleted files 30 days (expires_at): with a 31-day horizon, every file of
# the mix is in gold/expiring_files.
RUN_CONFIG = {"ops": {"gold_file_trash": {"config": {"expiring_within_days": 31}}}}


@pytest.fixture
def server(tmp_path) -> Iterator[EmbeddedNatsServer]:
    with EmbeddedNatsServer(store_dir=tmp_path / "nats") as server:
        yield server


@pytest.fixture
def lakehouse(tmp_path, server, spark):
    """The code location's resources, pointed at this test's server and table root."""
    jetstream = JetStreamResource(servers=server.url)
    with jetstream.client() as client:
        reconcile(client, FILE_TRASH_TOPOLOGY)
    return {
        "jetstream": jetstream,
        "spark": SparkResource(),
        "lakehouse": LakehouseResource(root=str(tmp_path / "lakehouse")),
        "quality": DataQualityResource(),
    }


class Pipeline:
    """Runs the assets the way the deployment does: the ingests, then what follows them."""

    def __init__(self, resources, instance: DagsterInstance) -> None:
        self.resources = resources
        self.instance = instance

    def ingest(self):
        return materialize(INGESTS, resources=self.resources, instance=self.instance)

    def lakehouse(self, *, raise_on_error: bool = True):
        return materialize(
            LAKEHOUSE,
            resources=self.resources,
            instance=self.instance,
            run_config=RUN_CONFIG,
            raise_on_error=raise_on_error,
        )

    def path(self, table: str) -> str:
        return self.resources["lakehouse"].table_path(table)

    def rows(self, spark, table: str) -> int:
        return spark.read.format("delta").load(self.path(table)).count()

    def counts(self, spark) -> dict[str, int]:
        return {table: self.rows(spark, table) for table in ALL_TABLES}

    def versions(self, spark) -> dict[str, int | None]:
        return {table: table_version(spark, self.path(table)) for table in ALL_TABLES}


@pytest.fixture
def pipeline(lakehouse, dagster_instance) -> Pipeline:
    return Pipeline(lakehouse, dagster_instance)


def check_evaluations(result) -> dict[str, object]:
    return {e.check_name: e for e in result.get_asset_check_evaluations()}


def test_a_known_mix_lands_with_exact_counts_checks_artifacts_and_no_change_on_rerun(
    pipeline, spark
):
    now = dt.datetime.now(dt.timezone.utc)
    events = generate_event_mix(200, bad_share=0.1, now=now, seed=7)
    kinds = summarize(events)
    assert kinds == {
        "good": 180,
        "malformed_json": 3,
        "missing_field": 3,
        "wrong_type": 3,
        "negative_size": 3,
        "unknown_event_type": 3,
        "duplicate_event_id": 3,
        "future_deleted_at": 2,
    }
    good_bytes = sum(json.loads(e.payload)["data"]["fileSize"] for e in events if e.kind == "good")
    jetstream = pipeline.resources["jetstream"]
    with jetstream.client() as client:
        assert publish_events(client, events).published == 200

    # Run 1: everything lands once; the bad events are quarantined, rule by rule.
    pipeline.ingest()
    result = pipeline.lakehouse()
    assert pipeline.counts(spark) == {
        "bronze/file_events": 200,
        "audit/audit_log": 200,
        "bronze/trash_notifications": 180,  # the FilePlacedInTrashEvents just published
        "silver/file_deleted": 180,
        "silver/file_trashed": 0,  # they reach bronze on the next ingest
        "silver/quarantine": 20,
        "gold/daily_trash_by_user": pytest.approx(0, abs=1e9),  # checked below
        "gold/daily_trash_by_mime_type": pytest.approx(0, abs=1e9),
        "gold/expiring_files": 180,
    }
    quarantine = spark.read.format("delta").load(pipeline.path(tables.SILVER_QUARANTINE))
    by_rule = {
        row["rule"]: row["n"]
        for row in quarantine.selectExpr("explode(failed_rules) AS rule")
        .groupBy("rule")
        .count()
        .withColumnRenamed("count", "n")
        .collect()
    }
    assert by_rule == {
        "parseable_json": 3,
        "required_fields_present": 3,
        "field_types_valid": 3,
        "file_size_in_range": 3,
        "known_event_type": 3,
        "event_id_unique": 3,
        "deleted_at_not_in_future": 2,
    }
    assert quarantine.where("size(failed_rules) != 1").count() == 0
    # Nothing is lost: the quarantine keeps the raw payloads, byte for byte.
    bad = {e.payload for e in events if e.kind != "good"}
    assert {bytes(r["payload"]) for r in quarantine.select("payload").collect()} == bad

    by_user = spark.read.format("delta").load(pipeline.path(tables.GOLD_DAILY_BY_USER))
    totals = by_user.selectExpr("sum(files) AS files", "sum(bytes) AS bytes").first()
    assert (totals["files"], totals["bytes"]) == (180, good_bytes)
    by_mime = spark.read.format("delta").load(pipeline.path(tables.GOLD_DAILY_BY_MIME_TYPE))
    assert by_mime.selectExpr("sum(files)").first()[0] == 180

    # The asset checks, one per named rule, `field_rules` for deleted_at_not_in_future (the
    # one rule no one named or gave a severity): every one passed (the bad rows are a small
    # share, below the declaration's check_mostly, and were quarantined), with the mix's counts.
    checks = check_evaluations(result)
    assert checks and all(e.passed for e in checks.values()), {
        name: e.passed for name, e in checks.items()
    }
    assert checks["file_size_in_range"].metadata["unexpected_rows"].value == 3
    assert checks["field_rules"].metadata["unexpected_rows"].value == 2
    assert (
        "| deleted_at_not_in_future | 2 | 2 | yes |"
        in checks["field_rules"].metadata["rule_failures"].value
    )
    assert checks["parseable_json"].metadata["failing_rows"].value == 3
    # Each check that flagged rows shows the first such row (its seq, what it broke).
    example = checks["parseable_json"].metadata["example"].value
    assert example.startswith("seq ") and "parseable_json: " in example
    assert "| deleted_at_not_in_future | " in checks["field_rules"].metadata["rule_examples"].value
    assert checks["known_event_type"].metadata["failing_rows"].value == 3

    # The artifacts: validation results, reports and a manifest naming what was written.
    run_id = result.run_id
    with jetstream.client() as client:
        store = ArtifactStore(client)
        names = {a.name.rsplit("/", 1)[1] for a in store.list(f"runs/{run_id}/")}
        assert {"manifest.json", "validation-FileDeletedEvent.json"} <= names
        assert any(name.endswith(".html") for name in names)
        manifest = store.get_manifest(run_id, "silver/file_events")
        assert manifest.ranges == {"bronze/file_events": (1, 200)}
        written = {t.table: t.rows_written for t in manifest.tables}
        assert written == {
            "silver/file_deleted": 180,
            "silver/file_trashed": 0,
            "silver/quarantine": 20,
        }
        for artifact in manifest.artifacts:
            assert len(store.get(artifact.name)) == artifact.size
        # The downstream events were published once each; publishing the same rows again
        # (the watermark lost) is absorbed by the stream as duplicates.
        client.key_value(CHECKPOINTS.bucket).purge(watermark_key(PUBLISHER_STAGE))
    republished = materialize(
        [file_trashed_events], resources=pipeline.resources, instance=pipeline.instance
    )
    metadata = republished.asset_materializations_for_node("events__file_trashed")[0].metadata
    assert (metadata["published"].value, metadata["duplicates"].value) == (0, 180)

    # Run 2: the FilePlacedInTrashEvents come back through bronze into silver/file_trashed.
    pipeline.ingest()
    pipeline.lakehouse()
    settled = pipeline.counts(spark)
    assert {table: settled[table] for table in ALL_TABLES[:6]} == {
        "bronze/file_events": 380,
        "audit/audit_log": 380,
        "bronze/trash_notifications": 180,
        "silver/file_deleted": 180,
        "silver/file_trashed": 180,
        "silver/quarantine": 20,
    }

    # Run 3 over the same data changes nothing: no table gets a new version.
    versions = pipeline.versions(spark)
    pipeline.ingest()
    pipeline.lakehouse()
    assert pipeline.versions(spark) == versions
    assert pipeline.counts(spark) == settled


def test_a_failed_critical_check_keeps_gold_from_materialising(pipeline, spark):
    now = dt.datetime.now(dt.timezone.utc)
    events: list[FileDeletedEvent] = list(generate_file_deleted_events(40, now=now, seed=3))
    messages = []
    for index, event in enumerate(events):
        payload = json.loads(event.to_json())
        if index % 2:  # half of the batch has a negative size: far beyond `mostly`
            payload["data"]["fileSize"] = -1
        messages.append(
            ("files.deleted", json.dumps(payload).encode(), {MSG_ID_HEADER: event.eventId})
        )
    with pipeline.resources["jetstream"].client() as client:
        client.publish_batch(messages)

    pipeline.ingest()
    result = pipeline.lakehouse(raise_on_error=False)

    assert not result.success
    checks = check_evaluations(result)
    assert not checks["file_size_in_range"].passed
    assert checks["file_size_in_range"].metadata["unexpected_rows"].value == 20
    materialized = {e.asset_key for e in result.get_asset_materialization_events() if e.asset_key}
    assert SILVER_FILE_DELETED_KEY in materialized  # the valid half is in silver ...
    assert AssetKey(["gold", "daily_trash_by_user"]) not in materialized  # ... gold is not
    assert table_version(spark, pipeline.path(tables.GOLD_DAILY_BY_USER)) is None
    quarantine = spark.read.format("delta").load(pipeline.path(tables.SILVER_QUARANTINE))
    assert quarantine.count() == 20  # the rows that broke the rule are kept, not dropped
