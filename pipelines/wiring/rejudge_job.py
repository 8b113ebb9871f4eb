"""`rejudge_<stream>`: the Dagster job of `jsl quarantine retry` and `jsl silver rebuild`.

One op judges the selected, already-processed rows of a declared stream again under its
current contract (`pipelines.silver.rejudge.rejudge`), then reports an `AssetMaterialization`
per table it changed (rows added and removed, moved per rule, the contract version), each
followed by that table's checks carried over from the batch it last took in (as a silver run
with nothing new reports them), and measures the guarantee over the range it judged
(`pipelines.silver.placement`): each bronze row in exactly one table, or the op fails naming
the counts. The declarative automation then requests what follows silver (gold) on its next
tick: a materialisation of silver without its checks would hold gold behind silver's blocking
checks until silver's next batch. `jsl quarantine retry` and `jsl silver rebuild` report the
same events (`rejudge_events`) on the Dagster instance, outside a run.

Launch it from the UI's launchpad, or `dg launch --job rejudge_orders --config-json ...`,
with its config (`RejudgeConfig`): `mode` retry or rebuild and the selection.
"""

# No `from __future__ import annotations`: Dagster reads the op's config class from its
# annotation at definition time.
import datetime as dt
from collections.abc import Mapping
from typing import Literal

from dagster import (
    AssetCheckEvaluation,
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

from assets.contract_silver import carried_over_evaluations
from pipelines.contract import Contract
from pipelines.contract.fingerprint import contract_version, event_type_version
from pipelines.ingest.spec import IngestSpec
from pipelines.lakehouse.watermarks import Watermark, WatermarkStore
from pipelines.silver.evolution import OnSchemaChange
from pipelines.silver.placement import placement
from pipelines.silver.rejudge import RejudgeResult, rejudge
from pipelines.silver.rejudge_intent import Selection
from pipelines.silver.stage import QUARANTINE, stage_name
from resources.backports import fromisoformat
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
            moment = fromisoformat(text)
            return moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)

        return Selection(
            quarantined_only=self.mode == "retry",
            rules=tuple(self.rules),
            event_types=tuple(self.event_types),
            first_seq=self.first_seq,
            last_seq=self.last_seq,
            since=when(self.since),
            until=when(self.until),
        )


def rejudge_events(
    contract: Contract,
    tables: Mapping[str, str],
    paths: Mapping[str, str],
    result: RejudgeResult,
    watermark: Watermark,
    *,
    stream: str,
    mode: str,
    mostly: float,
) -> list[AssetMaterialization | AssetCheckEvaluation]:
    """What a retry or rebuild tells Dagster: per table it changed, an `AssetMaterialization`
    (rows added and removed, rows judged, the contract version; on the quarantine, rows moved
    per rule), then the table's checks as a silver run with nothing new reports them
    (`carried_over_evaluations`).

    Args:
        contract: the stream's contract, as the rejudge read it.
        tables: target (event type name, or QUARANTINE) -> its table.
        paths: target -> its table's path.
        result: what the rejudge did.
        watermark: the stage's watermark (the rejudge does not move it).
        stream: the stream, for the description.
        mode: retry or rebuild, for the description.
        mostly: the silver asset's `mostly`.

    Returns:
        The events, in order; none when no table changed.
    """
    changed = [t for t in tables if result.added.get(t, 0) or result.removed.get(t, 0)]
    checks = carried_over_evaluations(contract, tables, watermark, mostly=mostly, targets=changed)
    moved = {f"moved_{rule}": MetadataValue.int(n) for rule, n in sorted(result.moved.items())}
    events: list[AssetMaterialization | AssetCheckEvaluation] = []
    for target in changed:
        version = (
            contract_version(contract)
            if target == QUARANTINE
            else event_type_version(contract, contract.event_type(target))
        )
        key = tables[target].split("/")
        events.append(
            AssetMaterialization(
                asset_key=key,
                description=f"{mode} of {stream}: rows judged again",
                metadata={
                    "rows_added": MetadataValue.int(result.added.get(target, 0)),
                    "rows_removed": MetadataValue.int(result.removed.get(target, 0)),
                    "rows_judged": MetadataValue.int(result.judged),
                    "contract_version": MetadataValue.text(version),
                    "table_path": MetadataValue.path(paths[target]),
                    **(moved if target == QUARANTINE else {}),
                },
            )
        )
        events += [c for c in checks if c.asset_key.path == key]
    return events


def build_rejudge_job(
    contract: Contract,
    ingest: IngestSpec,
    *,
    quarantine: str,
    policy: Mapping[str, OnSchemaChange],
    mostly: float = 1.0,
) -> JobDefinition:
    """The job that judges `ingest`'s stream's processed rows again under `contract`.

    Args:
        contract: the stream's contract, as declared now.
        ingest: the ingest whose bronze table silver reads.
        quarantine: the quarantine's table.
        policy: event type -> its on_schema_change.
        mostly: the silver asset's `mostly` (for the checks it carries over).
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
        watermarks = WatermarkStore(bucket)
        result = rejudge(
            session,
            watermarks,
            contract,
            stream=stream,
            bronze_path=bronze_path,
            table_paths={n: p for n, p in paths.items() if n != QUARANTINE},
            quarantine_path=paths[QUARANTINE],
            stage=stage_name(stream),
            run_id=context.run.run_id,
            now=dt.datetime.now(dt.timezone.utc),
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
        watermark = watermarks.load(stage_name(stream))
        for event in rejudge_events(
            contract,
            tables,
            paths,
            result,
            watermark,
            stream=stream,
            mode=config.mode,
            mostly=mostly,
        ):
            context.log_event(event)
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
