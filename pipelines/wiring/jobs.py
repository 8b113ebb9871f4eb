"""Jobs that are not plain asset materialisations: replays of past ranges."""

from dagster import (
    AssetMaterialization,
    Config,
    JobDefinition,
    MetadataValue,
    OpExecutionContext,
    job,
    op,
)
from pydantic import Field

from assets.bronze import dagster_run_state
from pipelines.ingest.lease import REPLAY, REPLAY_WAIT, wait_for_lease
from pipelines.ingest.replay import replay_range, resolve_time_window
from pipelines.ingest.spec import IngestSpec
from resources.backports import fromisoformat
from resources.jetstream import JetStreamResource
from resources.jetstream.errors import InvalidArgumentError
from resources.lakehouse import LakehouseResource
from resources.spark import SparkResource


class ReplayConfig(Config):
    """A range to replay: stream sequences, or a time window (ISO-8601, with a time zone)."""

    start_seq: int | None = Field(default=None, description="First stream sequence to replay.")
    end_seq: int | None = Field(default=None, description="Last stream sequence to replay.")
    start_time: str | None = Field(
        default=None, description="Replay messages stored at or after this time."
    )
    end_time: str | None = Field(default=None, description="... and before this time.")
    lease_wait: float = Field(
        default=REPLAY_WAIT,
        ge=0,
        description="Seconds to wait for the ingest's lease while a run of the ingest (or "
        "another replay) writes the table; the replay fails, writing nothing, after that.",
    )


def build_replay_job(spec: IngestSpec) -> JobDefinition:
    """A job that re-ingests a past range of `spec`'s stream into its bronze table.

    The replay holds the ingest's lease while it writes (`pipelines.ingest.replay`); it
    looks at the lease before Spark starts, so a replay behind a held lease waits (up to
    its `lease_wait`) or fails without starting a JVM.
    """

    @op(name=f"replay_{spec.name}_range", tags={"kind": "spark"})
    def replay(
        context: OpExecutionContext,
        config: ReplayConfig,
        jetstream: JetStreamResource,
        spark: SparkResource,
        lakehouse: LakehouseResource,
    ) -> None:
        """Replaces a range of the bronze table with what the stream holds for it."""
        client = jetstream.get_client()
        if config.start_seq is not None and config.end_seq is not None:
            bounds = (config.start_seq, config.end_seq)
        elif config.start_time and config.end_time:
            bounds = resolve_time_window(
                client,
                spec.stream,
                fromisoformat(config.start_time),
                fromisoformat(config.end_time),
            )
            if bounds is None:
                context.log.info(f"{spec.stream} stored nothing in that window: nothing to do")
                return
        else:
            raise InvalidArgumentError(
                f"replay of {spec.stream!r}: give start_seq and end_seq, or start_time and end_time"
            )
        path = lakehouse.table_path(spec.table)
        checkpoints = client.create_key_value(spec.checkpoint_bucket_spec())
        wait_for_lease(
            checkpoints,
            stream=spec.stream,
            consumer=spec.durable,
            wait=config.lease_wait,
            run_state=dagster_run_state(context.instance),
            ttl=spec.lease_ttl,
            log=context.log,
            work=REPLAY,
        )
        result = replay_range(
            client,
            spark.get_session(),
            spec,
            path,
            start=bounds[0],
            end=bounds[1],
            run_id=context.run.run_id,
            checkpoints=checkpoints,
            lease_wait=config.lease_wait,
        )
        context.log_event(
            AssetMaterialization(
                asset_key=["bronze", spec.name],
                description=f"replay of {spec.stream} {result.start}-{result.end}",
                metadata={
                    "replay_start": MetadataValue.int(result.start),
                    "replay_end": MetadataValue.int(result.end),
                    "messages": MetadataValue.int(result.messages),
                    "bytes": MetadataValue.int(result.bytes),
                    "delta_version": MetadataValue.int(result.delta_version),
                    "duration_seconds": MetadataValue.float(round(result.duration, 3)),
                    "table_path": MetadataValue.path(path),
                },
            )
        )

    @job(name=f"replay_{spec.name}", description=f"Replay a past range of {spec.stream}.")
    def replay_job() -> None:
        replay()

    return replay_job
