"""Bronze assets: one per `IngestSpec`, each landing a durable consumer's messages in Delta."""

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    AssetSpec,
    MaterializeResult,
    MetadataValue,
    TableColumn,
    TableSchema,
    asset,
)

from pipelines.ingest.bronze import BRONZE_SCHEMA
from pipelines.ingest.engine import ingest_pending
from pipelines.ingest.spec import IngestSpec
from resources.jetstream import JetStreamResource, StreamSpec
from resources.jetstream.metadata import consumer_metadata
from resources.lakehouse import LakehouseResource
from resources.spark import SparkResource

BRONZE_COLUMN_SCHEMA = TableSchema(
    columns=[
        TableColumn(f.name, f.dataType.simpleString(), constraints=None) for f in BRONZE_SCHEMA
    ]
)


def count_rows(session, path: str) -> int | None:
    """Rows in the Delta table at `path`, or None if there is no table yet."""
    from delta.tables import DeltaTable

    if not DeltaTable.isDeltaTable(session, path):
        return None
    return session.read.format("delta").load(path).count()


def stream_asset_key(stream: str) -> AssetKey:
    """The key of the external asset standing for a JetStream stream."""
    return AssetKey(["jetstream", stream])


def build_stream_asset_spec(stream: StreamSpec) -> AssetSpec:
    """An external asset for a stream, so lineage in the UI starts at JetStream."""
    return AssetSpec(
        key=stream_asset_key(stream.name),
        description=stream.description or f"JetStream stream {stream.name}",
        group_name="jetstream",
        kinds={"nats"},
        metadata={"subjects": MetadataValue.text(", ".join(stream.subjects))},
    )


def build_bronze_asset(spec: IngestSpec) -> AssetsDefinition:
    """Builds the bronze asset for an ingest: `bronze/<spec.name>`."""

    @asset(
        name=spec.name,
        key_prefix=["bronze"],
        group_name="bronze",
        deps=[stream_asset_key(spec.stream)],
        kinds={"spark", "delta"},
        description=f"Raw messages of stream {spec.stream} via consumer {spec.durable}, "
        "exactly as published, in Delta.",
        metadata={
            "dagster/column_schema": BRONZE_COLUMN_SCHEMA,
            "stream": spec.stream,
            "consumer": spec.durable,
        },
    )
    def bronze_asset(
        context: AssetExecutionContext,
        jetstream: JetStreamResource,
        spark: SparkResource,
        lakehouse: LakehouseResource,
    ) -> MaterializeResult:
        """Lands the consumer's pending messages in the bronze Delta table."""
        client = jetstream.get_client()
        session = spark.get_session()
        path = lakehouse.table_path(spec.table)

        def progress(messages: int, version: int) -> None:
            context.log.info(f"{spec.table}: {messages} messages committed (Delta v{version})")

        result = ingest_pending(
            client, session, spec, path, run_id=context.run.run_id, on_commit=progress
        )
        rows = count_rows(session, path)
        consumer = client.consumers.info(spec.stream, spec.durable)
        metadata = {
            "messages": MetadataValue.int(result.messages),
            "bytes": MetadataValue.int(result.bytes),
            "first_seq": MetadataValue.int(result.first_seq or 0),
            "last_seq": MetadataValue.int(result.last_seq or 0),
            "commits": MetadataValue.int(result.commits),
            "duration_seconds": MetadataValue.float(round(result.duration, 3)),
            "stream_last_seq": MetadataValue.int(result.stream_last_seq),
            "table_path": MetadataValue.path(path),
            **consumer_metadata(consumer),
        }
        if result.delta_version is not None:
            metadata["delta_version"] = MetadataValue.int(result.delta_version)
        if rows is not None:
            metadata["dagster/row_count"] = MetadataValue.int(rows)
        context.log.info(
            f"{spec.table}: {result.messages} new messages (seq {result.first_seq}-"
            f"{result.last_seq}); consumer {spec.durable!r} ack floor "
            f"{consumer.ack_floor_stream_seq}, lag {consumer.num_pending}"
        )
        return MaterializeResult(metadata=metadata)

    return bronze_asset
