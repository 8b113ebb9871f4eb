"""Bronze assets: one per `IngestSpec`, each landing a durable consumer's messages in Delta."""

import logging
from collections.abc import Callable
from dataclasses import dataclass

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    AssetSpec,
    Config,
    DagsterInstance,
    DagsterLogManager,
    MaterializeResult,
    MetadataValue,
    TableColumn,
    TableSchema,
    asset,
)
from pydantic import Field
from pyspark.sql import SparkSession

from assets.liveness import keep_run_alive
from assets.nothing_new import finding_metadata
from pipelines.ingest.bronze import BRONZE_SCHEMA
from pipelines.ingest.engine import IngestResult
from pipelines.ingest.idle import nothing_to_land
from pipelines.ingest.lease import REPLAY_WAIT, RunState, wait_for_lease
from pipelines.ingest.options import IngestRunOptions
from pipelines.ingest.run import ingest
from pipelines.ingest.spec import IngestSpec
from pipelines.lakehouse.delta_tables import table_rows
from resources.jetstream import JetStreamClient, JetStreamResource, StreamSpec
from resources.lakehouse import TABLE_METADATA_KEY, WRITER_LEASE_METADATA_KEY, LakehouseResource
from resources.spark import SparkResource

BRONZE_COLUMN_SCHEMA = TableSchema(
    columns=[
        TableColumn(f.name, f.dataType.simpleString(), constraints=None) for f in BRONZE_SCHEMA
    ]
)


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
            WRITER_LEASE_METADATA_KEY: {
                "bucket": spec.checkpoint_bucket,
                "stream": spec.stream,
                "consumer": spec.durable,
            },
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
        # First thing: from here the run says it is alive, so that its death is seen.
        keep_run_alive(context.instance, context.run.run_id, spec.lease_ttl)
        landed = land(
            client=jetstream.get_client(),
            session=spark.get_session,
            spec=spec,
            path=lakehouse.table_path(spec.table),
            run_id=context.run.run_id,
            until=config.end_seq,
            log=context.log,
            run_state=dagster_run_state(context.instance),
        )
        return MaterializeResult(metadata=landed.metadata)

    return bronze_asset


@dataclass(frozen=True)
class Landed:
    """One landing of an ingest's next range (`land`).

    Attributes:
        result: what the ingest did; None when it found nothing new without Spark.
        metadata: the bronze materialisation's metadata.
    """

    result: IngestResult | None
    metadata: dict[str, MetadataValue]

    @property
    def took_rows(self) -> bool:
        """Whether it landed a range (or found one already committed and moved past it)."""
        return self.result is not None and self.result.start is not None


def dagster_run_state(instance: DagsterInstance) -> RunState:
    """What `instance` knows of a run: its status (`FAILURE`, `STARTED`, ...), or None."""

    def state(run_id: str) -> str | None:
        run = instance.get_run_by_id(run_id)
        return None if run is None else run.status.value

    return state


def land(
    *,
    client: JetStreamClient,
    session: Callable[[], SparkSession],
    spec: IngestSpec,
    path: str,
    run_id: str,
    until: int | None,
    log: logging.Logger | DagsterLogManager,
    run_state: RunState | None = None,
) -> Landed:
    """Lands `spec`'s next range (up to `until`) in its bronze table at `path`, exactly once.

    With nothing new (found without Spark: `pipelines.ingest.idle`), `session` is not called
    and the result is None. Nor is it while another run holds the ingest's lease: the run
    waits for it (up to the ingest's `lease_wait`, up to `lease.REPLAY_WAIT` for a replay
    of the table, or until it lapses, at most `lease_ttl`, if Dagster has the holder's run
    as over: a killed run's) before Spark starts, and fails with `LeaseHeldError` if it
    stays held, saying what `run_state` (Dagster) knows of the holder's run. The bronze
    asset calls it once per run; the contract's silver step of a run that keeps going
    (`assets.follow`) once per further batch.
    """
    checkpoints = client.create_key_value(spec.checkpoint_bucket_spec())
    idle = nothing_to_land(client, spec, path, checkpoints=checkpoints, until=until)
    if idle is not None:
        log.info(idle.finding.describe())
        metadata = ingest_metadata(idle.result, idle.rows, path)
        return Landed(None, {**metadata, **finding_metadata(idle.finding)})
    wait_for_lease(
        checkpoints,
        stream=spec.stream,
        consumer=spec.durable,
        wait=spec.lease_wait,
        run_state=run_state,
        ttl=spec.lease_ttl,
        log=log,
        replay_wait=REPLAY_WAIT,
    )
    spark = session()
    result = ingest(
        client,
        spark,
        spec,
        path,
        checkpoints=checkpoints,
        run_id=run_id,
        options=IngestRunOptions(until=until),
    )
    if result.start is None:
        log.info(f"{spec.stream}/{spec.durable}: nothing new")
    else:
        if result.recovered_from:
            log.warning(
                f"{spec.stream}/{spec.durable}: recovery of range {result.start}-{result.end}, "
                f"which run {result.recovered_from!r} planned and left when it stopped "
                "part-way; this run finishes it, exactly once"
            )
        log.info(
            f"{spec.table}: range {result.start}-{result.end}, {result.messages} messages "
            f"(Delta v{result.delta_version}"
            + ("" if result.written else ", already committed: skipped")
            + f"); consumer {spec.durable!r} ack floor {result.ack_floor}, lag {result.lag}"
        )
    metadata = ingest_metadata(result, table_rows(spark, path), path)
    metadata["nothing_new"] = MetadataValue.bool(result.start is None)
    return Landed(result, metadata)


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
