"""The downstream-events asset: FilePlacedInTrashEvents published for newly trashed files."""

import datetime as dt

from dagster import (
    AssetExecutionContext,
    MaterializeResult,
    MetadataValue,
    asset,
)

from assets.automation import AFTER_UPSTREAM_CHECKS_AT_MOST_EVERY_MINUTE
from assets.gold import SILVER_FILE_DELETED_KEY
from assets.nothing_new import finding_metadata
from pipelines.file_trash import tables
from pipelines.file_trash.downstream import PublishResult, nothing_to_publish, publish_trashed
from pipelines.file_trash.events import FILE_TRASHED_SUBJECT
from pipelines.file_trash.topology import CHECKPOINTS, FILE_EVENTS
from pipelines.lakehouse.watermarks import WatermarkStore
from resources.jetstream import JetStreamResource
from resources.lakehouse import LakehouseResource
from resources.spark import SparkResource


@asset(
    key=["events", "file_trashed"],
    deps=[SILVER_FILE_DELETED_KEY],
    group_name="events",
    kinds={"nats"},
    description=f"FilePlacedInTrashEvents on {FILE_TRASHED_SUBJECT!r} (stream "
    f"{FILE_EVENTS.name}), one per newly trashed file, msg-id derived from the source event.",
    metadata={"subject": FILE_TRASHED_SUBJECT, "stream": FILE_EVENTS.name},
    automation_condition=AFTER_UPSTREAM_CHECKS_AT_MOST_EVERY_MINUTE,
)
def file_trashed_events(
    context: AssetExecutionContext,
    jetstream: JetStreamResource,
    spark: SparkResource,
    lakehouse: LakehouseResource,
) -> MaterializeResult:
    """Publishes a FilePlacedInTrashEvent for each silver row not yet published for; with
    nothing new (found without Spark), reports so without starting Spark."""
    client = jetstream.get_client()
    watermarks = WatermarkStore(client.key_value(CHECKPOINTS.bucket))
    silver_path = lakehouse.table_path(tables.SILVER_FILE_DELETED)
    idle = nothing_to_publish(watermarks, silver_path)
    if idle is not None:
        result, finding = idle
        context.log.info(finding.describe())
        return MaterializeResult(metadata={**_metadata(result), **finding_metadata(finding)})
    result = publish_trashed(
        client,
        spark.get_session(),
        silver_path,
        watermarks=watermarks,
        now=dt.datetime.now(dt.timezone.utc),
        run_id=context.run.run_id,
    )
    context.log.info(
        f"{FILE_TRASHED_SUBJECT}: {result.published} published, {result.duplicates} dropped "
        f"by the stream as duplicates (stream seq {result.first_seq}-{result.last_seq})"
    )
    nothing_new = {"nothing_new": MetadataValue.bool(result.silver_end is None)}
    return MaterializeResult(metadata={**_metadata(result), **nothing_new})


def _metadata(result: PublishResult) -> dict[str, MetadataValue]:
    """What a publisher run reports: the events published and dropped, and where."""
    metadata = {
        "published": MetadataValue.int(result.published),
        "duplicates": MetadataValue.int(result.duplicates),
    }
    if result.silver_end is not None:
        metadata["silver_range"] = MetadataValue.text(f"{result.silver_start}-{result.silver_end}")
    if result.last_seq is not None:
        metadata["stream_range"] = MetadataValue.text(f"{result.first_seq}-{result.last_seq}")
    return metadata
