"""Delta table maintenance: compaction (OPTIMIZE) and VACUUM of every table of the lakehouse.

Bronze grows by one commit per ingest run and silver by one merge per run, so small files
pile up; compaction rewrites them into fewer, larger files (readers get faster, nothing
changes in the data). VACUUM then deletes the files no table version within the retention
still needs. Delta refuses a retention under 7 days unless its safety check is turned off,
because a shorter one can break readers and time travel; this job does not turn it off.

`pipelines/definitions.py` builds the job with every table an asset of the code location
declares (the `lakehouse/table` metadata of bronze, silver, quarantine and gold assets,
declared streams' included) as its default config, so a stream declared in `pipelines/defs/`
is maintained with no edit here, and the launchpad shows the list.

Each table whose writers hold a lease in NATS KV while they write (a bronze table: its
ingest's lease; a silver or quarantine table: its stage's writer lease; the
`lakehouse/writer_lease` metadata) is compacted and vacuumed under that lease too, so that
one Spark driver at a time commits to it: on S3, Delta's default LogStore keeps commits apart
within one driver only (docs/deploy.md). The job waits for a run holding it up to
`lease_wait` seconds, and a table it could not get stops the run with that table named.
"""

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence

from dagster import Config, JobDefinition, MetadataValue, OpExecutionContext, RunConfig, job, op
from pydantic import Field

from pipelines.ingest.lease import MAINTENANCE, LeaseKeeper, acquire_lease
from pipelines.lakehouse.delta_tables import optimize, table_exists, vacuum
from pipelines.silver.writer import writing
from resources.jetstream import JetStreamClient, JetStreamResource
from resources.lakehouse import LakehouseResource
from resources.spark import SparkResource

DEFAULT_RETENTION_HOURS = 7 * 24
MAINTENANCE_JOB = "maintain_delta_tables"


class MaintenanceConfig(Config):
    """Which tables to maintain and how long VACUUM keeps unreferenced files."""

    tables: list[str] = Field(description="Tables (relative to the lakehouse root).")
    retention_hours: float = Field(
        default=DEFAULT_RETENTION_HOURS,
        description="VACUUM keeps files needed by any version newer than this (Delta's "
        "minimum without disabling its safety check is 168 hours).",
    )
    optimize: bool = Field(default=True, description="Compact small files first.")
    vacuum: bool = Field(default=True, description="Then delete unreferenced files.")
    leases: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        description="Table -> the KV lease its writers hold ({bucket, stream, consumer}: an "
        "ingest's; {bucket, stage}: a silver stage's), taken while it is maintained.",
    )
    lease_wait: float = Field(
        default=600.0,
        description="Seconds to wait for a run writing a table (holding its lease).",
    )


@contextlib.contextmanager
def held(
    client: JetStreamClient, lease: Mapping[str, str], *, holder: str, wait: float
) -> Iterator[Callable[[], object]]:
    """Holds a table's writer lease (`MaintenanceConfig.leases`) while the block runs; yields
    the fence to call right before each write."""
    bucket = client.key_value(lease["bucket"])
    if "stage" in lease:
        stage = lease["stage"]
        with writing(bucket, stage, holder=holder, what="Delta maintenance", wait=wait) as writer:
            yield writer.fence
        return
    taken = acquire_lease(
        bucket,
        stream=lease["stream"],
        consumer=lease["consumer"],
        holder=holder,
        ttl=30.0,
        wait=wait,
        work=MAINTENANCE,
    )
    keeper = LeaseKeeper(taken).start()
    try:
        yield keeper.fence
    finally:
        keeper.release()


@op(tags={"kind": "delta"})
def maintain_tables(
    context: OpExecutionContext,
    config: MaintenanceConfig,
    spark: SparkResource,
    lakehouse: LakehouseResource,
    jetstream: JetStreamResource,
) -> None:
    """Runs OPTIMIZE and VACUUM on each table that exists, under its writers' lease where
    it has one, reporting Delta's numbers."""
    tables = config.tables
    context.log.info(f"maintaining {len(tables)} tables: {', '.join(tables)}")
    session = spark.get_session()
    report: dict[str, MetadataValue] = {}
    with contextlib.ExitStack() as stack:
        client = None  # connected for the first table with a lease
        for index, table in enumerate(tables, start=1):
            path = lakehouse.table_path(table)
            if not table_exists(session, path):
                context.log.info(f"[{index}/{len(tables)}] {table}: no table yet, skipped")
                continue
            with contextlib.ExitStack() as holding:
                fence: Callable[[], object] = lambda: None  # noqa: E731
                if table in config.leases:
                    client = client or stack.enter_context(jetstream.client())
                    fence = holding.enter_context(
                        held(
                            client,
                            config.leases[table],
                            holder=context.run_id,
                            wait=config.lease_wait,
                        )
                    )
                metadata = _maintain(session, path, config, fence)
            context.log.info(f"[{index}/{len(tables)}] {table}: maintained")
            report.update({f"{table}/{key}": value for key, value in metadata.items()})
    context.add_output_metadata(report)


def _maintain(
    session, path: str, config: MaintenanceConfig, fence: Callable[[], object]
) -> dict[str, MetadataValue]:
    metadata = {"table_path": MetadataValue.path(path)}
    if config.optimize:
        fence()
        metrics = optimize(session, path)
        metadata["files_removed"] = MetadataValue.int(int(metrics.get("numFilesRemoved", 0)))
        metadata["files_added"] = MetadataValue.int(int(metrics.get("numFilesAdded", 0)))
    if config.vacuum:
        fence()
        metadata["delta_version"] = MetadataValue.int(
            vacuum(session, path, retention_hours=config.retention_hours)
        )
    return metadata


def build_maintenance_job(
    tables: Sequence[str], leases: Mapping[str, Mapping[str, str]] | None = None
) -> JobDefinition:
    """The `maintain_delta_tables` job, maintaining `tables` unless its run config says others.

    Args:
        tables: the default tables, relative to the lakehouse root (e.g. every table the
            code location's assets declare: `resources.lakehouse.declared_tables`).
        leases: the default `MaintenanceConfig.leases` (e.g.
            `resources.lakehouse.declared_writer_leases` of the same assets).
    """
    default = MaintenanceConfig(
        tables=list(tables), leases={t: dict(lease) for t, lease in (leases or {}).items()}
    )

    @job(
        name=MAINTENANCE_JOB,
        description="Compact (OPTIMIZE) and VACUUM every Delta table of the lakehouse.",
        config=RunConfig(ops={"maintain_tables": default}),
    )
    def maintain_delta_tables() -> None:
        maintain_tables()

    return maintain_delta_tables
