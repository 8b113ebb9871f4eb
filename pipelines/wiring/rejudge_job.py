"""`rejudge_<stream>`: the Dagster job of `jsl quarantine retry` and `jsl silver rebuild`.

One op judges the selected, already-processed rows of a declared stream again under its
current contract (`pipelines.silver.rejudge.rejudge`), then reports an `AssetMaterialization`
per table it changed (rows added and removed, moved per rule, the contract version) and
measures the guarantee over the range it judged (`pipelines.silver.placement`): each bronze
row in exactly one table, or the op fails naming the counts.

Launch it from the UI's launchpad, or `dg launch --job rejudge_orders --config-json ...`,
with its config (`RejudgeConfig`): `mode` retry or rebuild and the selection.
"""

# No `from __future__ import annotations`: Dagster reads the op's config class from its
# annotation at definition time.
import datetime as dt
from collections.abc import Mapping
from typing import Literal

from dagster import (
    AssetMaterialization,
    Config,
    Failure,
    JobDefinition,
    MetadataValue,
    OpExecutionContext,
    job,
    op,
)
from pydantic import Field

from pipelines.contract import Contract
from pipelines.contract.fingerprint import contract_version, event_type_version
from pipelines.ingest.spec import IngestSpec
from pipelines.lakehouse.watermarks import WatermarkStore
from pipelines.silver.evolution import OnSchemaChange
from pipelines.silver.placement import placement
from pipelines.silver.rejudge import rejudge
from pipelines.silver.rejudge_intent import Selection
from pipelines.silver.stage import QUARANTINE, stage_name
from resources.jetstream import JetStreamResource
from resources.lakehouse import LakehouseResource
from resources.spark import SparkResource


class RejudgeConfig(Config):
    """Which processed rows to judge again (none of the filters: all of them)."""

    mode: Literal["retry", "rebuild"] = Field(
        default="retry",
        description="retry: the quarantined rows (`jsl quarantine retry`); rebuild: every row "
        "in range, silver and quarantine (`jsl silver rebuild`).",
    )
    rules: list[str] = Field(default_factory=list, description="retry: rows that broke these.")
    event_types: list[str] = Field(default_factory=list, description="Rows of these types.")
    first_seq: int | None = Field(default=None, description="The lowest bronze seq.")
    last_seq: int | None = Field(default=None, description="The highest bronze seq.")
    since: str | None = Field(default=None, description="Published at or after (ISO 8601).")
    until: str | None = Field(default=None, description="Published before (ISO 8601).")

    def selection(self) -> Selection:
        def when(text: str | None) -> dt.datetime | None:
            if text is None:
                return None
            moment = dt.datetime.fromisoformat(text)
            return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)

        return Selection(
            quarantined_only=self.mode == "retry",
            rules=tuple(self.rules),
            event_types=tuple(self.event_types),
            first_seq=self.first_seq,
            last_seq=self.last_seq,
            since=when(self.since),
            until=when(self.until),
        )


def build_rejudge_job(
    contract: Contract,
    ingest: IngestSpec,
    *,
    quarantine: str,
    policy: Mapping[str, OnSchemaChange],
) -> JobDefinition:
    """The job that judges `ingest`'s stream's processed rows again under `contract`.

    Args:
        contract: the stream's contract, as declared now.
        ingest: the ingest whose bronze table silver reads.
        quarantine: the quarantine's table.
        policy: event type -> its on_schema_change.
    """
    stream = ingest.stream
    tables = {e.name: e.table for e in contract.event_types}
    tables[QUARANTINE] = quarantine

    @op(name=f"rejudge_{stream.lower()}_rows", tags={"kind": "spark"})
    def rejudge_rows(
        context: OpExecutionContext,
        config: RejudgeConfig,
        jetstream: JetStreamResource,
        spark: SparkResource,
        lakehouse: LakehouseResource,
    ) -> None:
        """Judges processed rows again; each bronze row ends in exactly one table."""
        session = spark.get_session()
        paths = {target: lakehouse.table_path(table) for target, table in tables.items()}
        bucket = jetstream.get_client().create_key_value(ingest.checkpoint_bucket_spec())
        bronze_path = lakehouse.table_path(ingest.table)
        result = rejudge(
            session,
            WatermarkStore(bucket),
            contract,
            stream=stream,
            bronze_path=bronze_path,
            table_paths={n: p for n, p in paths.items() if n != QUARANTINE},
            quarantine_path=paths[QUARANTINE],
            stage=stage_name(stream),
            run_id=context.run.run_id,
            now=dt.datetime.now(dt.UTC),
            selection=config.selection(),
            source_table=ingest.table,
            policy=policy,
            quarantine_name=quarantine,
        )
        placed = placement(
            session,
            stream=stream,
            bronze_path=bronze_path,
            table_paths=paths,
            first=config.first_seq or 1,
            last=min(config.last_seq or result.upto, result.upto),
        )
        moved = {f"moved_{rule}": MetadataValue.int(n) for rule, n in sorted(result.moved.items())}
        for target, table in tables.items():
            added, removed = result.added.get(target, 0), result.removed.get(target, 0)
            if not (added or removed):
                continue
            version = (
                contract_version(contract)
                if target == QUARANTINE
                else event_type_version(contract, contract.event_type(target))
            )
            context.log_event(
                AssetMaterialization(
                    asset_key=table.split("/"),
                    description=f"{config.mode} of {stream}: rows judged again",
                    metadata={
                        "rows_added": MetadataValue.int(added),
                        "rows_removed": MetadataValue.int(removed),
                        "rows_judged": MetadataValue.int(result.judged),
                        "contract_version": MetadataValue.text(version),
                        "table_path": MetadataValue.path(paths[target]),
                        **(moved if target == QUARANTINE else {}),
                    },
                )
            )
        context.log.info(
            f"{stream}: {result.judged} row(s) judged; moved to silver per rule: "
            f"{dict(sorted(result.moved.items()))}; {result.still_failing} stay quarantined; "
            f"bronze rows {placed.bronze_rows}, missing {placed.missing}, in two tables "
            f"{placed.doubled}"
        )
        if not placed.exact:
            raise Failure(
                f"{stream}: after the {config.mode}, {placed.missing} bronze row(s) are in no "
                f"table and {placed.doubled} in two or more; run the {config.mode} again (it "
                "finishes an interrupted one) and report this if it stays",
                metadata={
                    "missing": MetadataValue.int(placed.missing),
                    "doubled": MetadataValue.int(placed.doubled),
                },
            )

    @job(
        name=f"rejudge_{stream.lower()}",
        description=f"Judge {stream}'s processed rows again under its current contract "
        "(quarantine retry, silver rebuild): docs/contract-changes.md.",
    )
    def rejudge_job() -> None:
        rejudge_rows()

    return rejudge_job
