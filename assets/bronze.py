"""Bronze assets: one per `IngestSpec`, each landing a durable consumer's messages in Delta."""

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    AssetSpec,
    Config,
    MaterializeResult,
    MetadataValue,
    TableColumn,
    TableSchema,
    asset,
)
from pydantic import Field

from assets.nothing_new import finding_metadata
from pipelines.ingest.bronze import BRONZE_SCHEMA
from pipelines.ingest.engine import IngestResult
from pipelines.ingest.idle import nothing_to_land
from pipelines.ingest.options import IngestRunOptions
from pipelines.ingest.run import ingest
from pipelines.ingest.spec import IngestSpec
from pipelines.lakehouse.delta_tables import table_exists
from resources.jetstream import JetStreamResource, StreamSpec
from resources.lakehouse import TABLE_METADATA_KEY, LakehouseResource
from resources.spark import SparkResource

BRONZE_COLUMN_SCHEMA = TableSchema(
    columns=[
        TableColumn(f.name, f.dataType.simpleString(), constraints=None) for f in BRONZE_SCHEMA
    ]
)


def count_rows(session, path: str) -> int | None:
    """Rows in the Delta table at `path`, or None if there is no table yet."""
    if not table_exists(session, path):
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
        metadata={"subjects": MetadataValue.text(", ".join(stream.subjects or ()))},
    )


class IngestConfig(Config):
    """Run config of a bronze materialisation (all optional: a plain run takes what is new)."""

    end_seq: int | None = Field(
        default=None,
        ge=1,
        description="The last stream sequence this run may take (a backfill piece's end); "
        "unset: up to the stream's last sequence, within the ingest's per-run limits.",
    )


def bronze_asset_key(spec: IngestSpec, key_prefix: str = "bronze") -> AssetKey:
    """The key of `spec`'s asset: `<key_prefix>/<spec.name>`."""
    return AssetKey([key_prefix, spec.name])


def bronze_run_config(spec: IngestSpec, end_seq: int, key_prefix: str = "bronze") -> dict:
    """Run config that bounds a materialisation of `spec`'s asset at `end_seq`."""
    op_name = "__".join(bronze_asset_key(spec, key_prefix).path)
    return {"ops": {op_name: {"config": {"end_seq": end_seq}}}}


def build_bronze_asset(
    spec: IngestSpec,
    *,
    key_prefix: str = "bronze",
    group_name: str = "bronze",
    upstream: tuple[AssetKey, ...] = (),
) -> AssetsDefinition:
    """Builds the asset landing an ingest's messages in Delta: `<key_prefix>/<spec.name>`.

    Args:
        spec: the ingest.
        key_prefix: the first part of the asset key (and the UI's folder).
        group_name: the asset group.
        upstream: assets that publish what this ingest reads, besides the stream itself
            (lineage, and so that materialising everything runs them first).
    """

    @asset(
        name=spec.name,
        key_prefix=[key_prefix],
        group_name=group_name,
        deps=[stream_asset_key(spec.stream), *upstream],
        kinds={"spark", "delta"},
        description=f"Raw messages of stream {spec.stream} via consumer {spec.durable}, "
        "exactly as published, in Delta.",
        metadata={
            "dagster/column_schema": BRONZE_COLUMN_SCHEMA,
            "stream": spec.stream,
            "consumer": spec.durable,
            TABLE_METADATA_KEY: spec.table,
        },
    )
    def bronze_asset(
        context: AssetExecutionContext,
        config: IngestConfig,
        jetstream: JetStreamResource,
        spark: SparkResource,
        lakehouse: LakehouseResource,
    ) -> MaterializeResult:
        """Lands the consumer's next range in the bronze Delta table, exactly once; with
        nothing new (found without Spark), reports so without starting Spark."""
        client = jetstream.get_client()
        path = lakehouse.table_path(spec.table)
        checkpoints = client.create_key_value(spec.checkpoint_bucket_spec())
        idle = nothing_to_land(client, spec, path, checkpoints=checkpoints, until=config.end_seq)
        if idle is not None:
            context.log.info(idle.finding.describe())
            metadata = ingest_metadata(idle.result, idle.rows, path)
            return MaterializeResult(metadata={**metadata, **finding_metadata(idle.finding)})
        session = spark.get_session()
        result = ingest(
            client,
            session,
            spec,
            path,
            checkpoints=checkpoints,
            run_id=context.run.run_id,
            options=IngestRunOptions(until=config.end_seq),
        )
        if result.start is None:
            context.log.info(f"{spec.stream}/{spec.durable}: nothing new")
        else:
            context.log.info(
                f"{spec.table}: range {result.start}-{result.end}, {result.messages} messages "
                f"(Delta v{result.delta_version}"
                + ("" if result.written else ", already committed: skipped")
                + f"); consumer {spec.durable!r} ack floor {result.ack_floor}, lag {result.lag}"
            )
        metadata = ingest_metadata(result, count_rows(session, path), path)
        metadata["nothing_new"] = MetadataValue.bool(result.start is None)
        return MaterializeResult(metadata=metadata)

    return bronze_asset


def ingest_metadata(result: IngestResult, rows: int | None, path: str) -> dict[str, MetadataValue]:
    """What a bronze materialisation reports (numbers plot over time in the UI); `rows` is
    the table's row count (None: no table, or not known)."""
    metadata = {
        "range_start": MetadataValue.int(result.start or 0),
        "range_end": MetadataValue.int(result.end or 0),
        "messages": MetadataValue.int(result.messages),
        "bytes": MetadataValue.int(result.bytes),
        "lag": MetadataValue.int(result.lag),
        "ack_floor": MetadataValue.int(result.ack_floor),
        "stream_last_seq": MetadataValue.int(result.stream_last_seq),
        "readers": MetadataValue.int(result.readers),
        "duration_seconds": MetadataValue.float(round(result.duration, 3)),
        "committed": MetadataValue.bool(result.written),
        "table_path": MetadataValue.path(path),
    }
    if result.delta_version is not None:
        metadata["delta_version"] = MetadataValue.int(result.delta_version)
    if result.recovered_from:
        metadata["recovered_range_of_run"] = MetadataValue.text(result.recovered_from)
    if result.gap:
        metadata["gap"] = MetadataValue.text(f"{result.gap[0]}-{result.gap[1]}")
        metadata["gap_messages"] = MetadataValue.int(result.gap[1] - result.gap[0] + 1)
    if rows is not None:
        metadata["dagster/row_count"] = MetadataValue.int(rows)
    return metadata
