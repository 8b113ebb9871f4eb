"""A stage with nothing new of its own never holds back the stages after it (issue #11, 3).

Each stage takes what is new *for it*, by its own watermark against its upstream's current
state, whatever else ran before or in the same run: after a run that materialised bronze and
silver only, a run of everything publishes silver's pending rows and computes gold, although
silver itself has nothing new then. Declarative automation picks them up by itself, and a
silver run with nothing new neither holds gold back after a batch that passed its checks nor
lets it through after one that failed a critical check.

Real nats-server, real Spark/Delta and GX, real Dagster runs; the automation conditions are
evaluated by Dagster's own evaluator over what those runs recorded.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator

import pytest
from dagster import AssetKey, AssetSelection, Definitions, evaluate_automation_conditions

from assets.gold import GOLD_KEYS
from pipelines.definitions import (
    ASSETS,
    bronze_file_events,
    defs,
    file_trashed_events,
)
from pipelines.file_trash import tables
from pipelines.file_trash.events import generate_file_deleted_events
from pipelines.file_trash.topology import FILE_TRASH_TOPOLOGY
from pipelines.lakehouse.delta_tables import table_version
from resources.jetstream import EmbeddedNatsServer, JetStreamResource, reconcile
from resources.jetstream.core.messages import MSG_ID_HEADER
from resources.lakehouse import LakehouseResource
from resources.quality import DataQualityResource
from resources.spark import SparkResource

FILE_DELETED_KEY = AssetKey(tables.SILVER_FILE_DELETED.split("/"))
FILE_TRASHED_KEY = AssetKey(tables.SILVER_FILE_TRASHED.split("/"))
QUARANTINE_KEY = AssetKey(tables.SILVER_QUARANTINE.split("/"))
GOLD = set(GOLD_KEYS.values())
EVENTS = file_trashed_events.key
SILVER = {FILE_DELETED_KEY, FILE_TRASHED_KEY, QUARANTINE_KEY}


@pytest.fixture
def server(tmp_path) -> Iterator[EmbeddedNatsServer]:
    """The code location's topology uses FILE_EVENTS on `files.>`: a server of its own."""
    with EmbeddedNatsServer(store_dir=tmp_path / "nats") as server:
        yield server


@pytest.fixture
def resources(tmp_path, server, spark) -> dict[str, object]:
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


def publish(resources, count: int, *, seed: int, negative_every: int = 0) -> None:
    """Publishes `count` FileDeletedEvents; every `negative_every`-th has a negative size."""
    now = dt.datetime.now(dt.timezone.utc)
    messages = []
    for index, event in enumerate(generate_file_deleted_events(count, now=now, seed=seed)):
        payload = json.loads(event.to_json())
        if negative_every and index % negative_every == 0:
            payload["data"]["fileSize"] = -1
        headers = {MSG_ID_HEADER: event.eventId}
        messages.append(("files.deleted", json.dumps(payload).encode(), headers))
    with resources["jetstream"].client() as client:
        client.publish_batch(messages)


def run(resources, instance, selection, *, raise_on_error: bool = True):
    """One in-process run of `selection` (every asset of the code location is in its graph),
    recorded with its asset selection as the daemon's runs are (declarative automation reads
    it: an upstream updated by a run that also targeted an asset does not request it again)."""
    everything = Definitions(assets=ASSETS, resources=resources)
    keys = AssetSelection.from_coercible(selection).resolve(everything.resolve_asset_graph())
    return everything.resolve_implicit_global_asset_job_def().execute_in_process(
        instance=instance, asset_selection=list(keys), raise_on_error=raise_on_error
    )


def materialized(result) -> dict[AssetKey, dict]:
    """Each asset the run materialised, with its metadata values."""
    return {
        event.asset_key: {
            name: value.value for name, value in event.materialization.metadata.items()
        }
        for event in result.get_asset_materialization_events()
    }


def check_evaluations(result) -> dict[tuple[AssetKey, str], object]:
    """Each check the run evaluated, by (asset, check name)."""
    return {(e.asset_key, e.check_name): e for e in result.get_asset_check_evaluations()}


def requested(result) -> set[AssetKey]:
    return {key for key in defs.resolve_all_asset_keys() if result.get_num_requested(key)}


def gold_files(spark, resources) -> int:
    path = resources["lakehouse"].table_path(tables.GOLD_DAILY_BY_USER)
    return spark.read.format("delta").load(path).selectExpr("sum(files)").first()[0]


def test_a_full_run_after_a_silver_only_run_publishes_silvers_pending_rows_and_computes_gold(
    resources, dagster_instance, spark
):
    publish(resources, 60, seed=11)
    first = run(resources, dagster_instance, [bronze_file_events.key, *SILVER])
    assert materialized(first)[FILE_DELETED_KEY]["rows_written"] == 60
    assert EVENTS not in materialized(first)

    # Everything, in one run: bronze and silver have nothing new, the events and gold do.
    everything = run(resources, dagster_instance, "*")

    assets = materialized(everything)
    assert EVENTS in assets, "events/file_trashed was skipped"
    assert (assets[EVENTS]["published"], assets[EVENTS]["duplicates"]) == (60, 0)
    assert assets.keys() >= GOLD
    assert gold_files(spark, resources) == 60
    assert everything.success
    assert assets[FILE_DELETED_KEY]["rows_written"] == 0  # silver ran, and said so
    # ... with the verdicts of the batch it holds, which passed.
    checks = check_evaluations(everything)
    assert checks and all(e.passed for e in checks.values())
    # The published events came back through their own ingest in the same run.
    assert assets[AssetKey(["bronze", "trash_notifications"])]["messages"] == 60


def test_automation_requests_gold_and_the_events_after_silver_runs_alone_even_with_nothing_new(
    resources, dagster_instance
):
    tick = evaluate_automation_conditions(defs=defs, instance=dagster_instance)
    publish(resources, 30, seed=12)
    run(resources, dagster_instance, [bronze_file_events.key])
    run(resources, dagster_instance, list(SILVER))  # 30 new rows, every check passes
    # A second silver run before the next tick: nothing new for silver. It must not make the
    # checks of the batch silver holds look unevaluated, which would hold gold back.
    again = run(resources, dagster_instance, list(SILVER))
    assert materialized(again)[FILE_DELETED_KEY]["rows_written"] == 0

    tick = evaluate_automation_conditions(defs=defs, instance=dagster_instance, cursor=tick.cursor)

    assert GOLD | {EVENTS} <= requested(tick)


def test_a_silver_run_with_nothing_new_keeps_gold_held_after_a_failed_critical_check(
    resources, dagster_instance, spark
):
    tick = evaluate_automation_conditions(defs=defs, instance=dagster_instance)
    publish(resources, 40, seed=13, negative_every=2)  # half negative: file_size_in_range fails
    failed = run(
        resources, dagster_instance, [bronze_file_events.key, *SILVER], raise_on_error=False
    )
    assert not failed.success

    # Everything again, silver with nothing new: gold still waits for a batch that passes.
    everything = run(resources, dagster_instance, "*", raise_on_error=False)
    assert not GOLD & materialized(everything).keys()
    assert EVENTS not in materialized(everything)
    gold_path = resources["lakehouse"].table_path(tables.GOLD_DAILY_BY_USER)
    assert table_version(spark, gold_path) is None
    # Silver says why: the batch it holds failed a blocking check, and nothing came since.
    verdict = check_evaluations(everything)[(FILE_DELETED_KEY, "file_size_in_range")]
    assert not verdict.passed
    assert verdict.metadata["batch"].value.startswith("bronze seq 1-40 ")
    assert materialized(everything)[FILE_DELETED_KEY]["rows_written"] == 0
    assert not everything.success

    tick = evaluate_automation_conditions(defs=defs, instance=dagster_instance, cursor=tick.cursor)
    assert not requested(tick) & (GOLD | {EVENTS})
