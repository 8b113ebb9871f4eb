"""Silver assets generated from a stream's event contract: one per event type, plus quarantine.

`build_contract_silver_asset` turns a contract and the ingest whose bronze table it reads into
one multi-asset (`pipelines.silver.stage.run_contract_silver` does the work): an asset per
event type's table (key = its table, `silver/orders_placed`), one for the quarantine
(`quarantine/<stream lower>`), and the tables' asset checks: one per rule with a check of
its own (`Rule.own_check`: the built-in rules, and the rules someone named or gave a
severity) and table it applies to, named after the rule (`parseable_json` and
`known_event_type` on the quarantine), and one `field_rules` check per event type's table
for its other rules, so that a contract of hundreds of rules has a few checks per table.

A rule Great Expectations can check (required fields, a unique event id, every constraint)
gets its verdict from the event type's generated suite (`pipelines.silver.expectations`): it
passes when every expectation tagged with the rule holds on at least `mostly` of the batch's
rows. A `field_rules` check passes when each of its rules does; its metadata counts the rows
that break any of them (`failing_rows`), its rules and the failed ones, and tables the rules
that flagged rows (`rule_failures`). The others (`parseable_json`, `known_event_type`,
`field_types_valid`, `no_unknown_fields`) are about the message, not a column: they pass
when at least `mostly` of the rows they judged (the event type's, or the whole batch's on
the quarantine) do not break them. `quarantine` and `warn` rules warn, `block` rules are
blocking errors (the assets after that table do not run). Every check's metadata has the
rows the stage flagged (`failing_rows`), the rows judged (`rows_checked`), `mostly` and, for
GX, the expectations and their unexpected rows. Each batch's validation results, HTML
reports and run manifest go to the artifacts Object Store (`pipelines.silver.artifacts`);
the tables' metadata names them and the command to fetch each, the `contract_version` the
batch's rows record and, when the run changed a table's schema to follow the contract,
`schema_changes` (docs/contract-changes.md).

A run with nothing new reports its tables (nothing written, `nothing_new: true`) and the
checks with the verdicts recorded with the watermark by the batch the tables last took in,
each marked as carried over (`carried_over_from_run`, the run that judged that batch, and a
description saying so), not as a new judgement. It finds that it has nothing new before
starting Spark (`pipelines.silver.stage.nothing_to_process`: the watermark against the
bronze table's Delta log), and then reports everything from the Delta logs, without Spark.
The checks are reported again, not left out, although Dagster would let the step leave them
out: a blocking check without a result does not hold the next step of the run (Dagster
proceeds "without gating on it"), and declarative automation's
`all_deps_blocking_checks_passed` counts only the checks of the latest materialisation, so
leaving them out would let gold take a batch that failed a blocking check, and hold it
after one that passed (docs/lakehouse.md, "A stage with nothing new"). A retry or rebuild
that changes a table (`pipelines.wiring.rejudge_job`) reports its checks carried over the same
way (`carried_over_evaluations`), for the same reason.
"""

import datetime as dt
import time
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from dagster import (
    AssetCheckEvaluation,
    AssetCheckKey,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    AssetMaterialization,
    AssetsDefinition,
    AssetSpec,
    AutomationCondition,
    MaterializeResult,
    MetadataValue,
    TableSchema,
    multi_asset,
)

from assets.artifact_metadata import artifact_metadata
from assets.bronze import dagster_run_state, land
from assets.follow import FOLLOW_TAG, batch_events, failed_blocking, follow_seconds
from assets.liveness import keep_run_alive
from assets.nothing_new import finding_metadata
from assets.table_schema import declared_schema, table_schema
from pipelines.contract import Contract
from pipelines.contract.rules import FIELD_RULES, SCHEMA_VALID
from pipelines.ingest.spec import IngestSpec
from pipelines.lakehouse.artifacts import ARTIFACTS_BUCKET, StoredArtifact
from pipelines.lakehouse.delta_log import TableFiles
from pipelines.lakehouse.delta_tables import MergeOutcome, table_rows, table_version
from pipelines.lakehouse.watermarks import Watermark, WatermarkConflictError, WatermarkStore
from pipelines.silver.artifacts import store_silver_artifacts
from pipelines.silver.evolution import OnSchemaChange
from pipelines.silver.expectations import recorded_outcomes
from pipelines.silver.schema import QUARANTINE_SCHEMA, silver_schema
from pipelines.silver.stage import (
    QUARANTINE,
    ContractSilverResult,
    IdleSilver,
    Policy,
    RuleCheck,
    nothing_to_process,
    quarantine_table,
    recorded_checked,
    recorded_failures,
    rule_checks,
    run_contract_silver,
    stage_name,
    within_mostly,
)
from resources.jetstream import JetStreamClient, JetStreamResource
from resources.jetstream.errors import JetStreamError
from resources.lakehouse import TABLE_METADATA_KEY, WRITER_LEASE_METADATA_KEY, LakehouseResource
from resources.quality import DataQualityResource
from resources.spark import SparkResource
from resources.spark_errors import one_line_spark_errors

# Runs of the stage in one step: another run moving the watermark first makes it go again.
STAGE_ATTEMPTS = 3
# The rule names a `field_rules` check's description lists, and its metadata's table rows.
_NAMES_SHOWN = 8
_RULES_SHOWN = 50


@dataclass(frozen=True)
class _SilverSettings:
    """What a silver multi-asset's runs read, write and store, fixed when it is built."""

    contract: Contract
    ingest: IngestSpec  # the ingest whose bronze table silver reads
    tables: dict[str, str]  # event type name (or QUARANTINE) -> its table
    mostly: float
    policy: Policy
    artifacts_bucket: str | None
    bronze_key: AssetKey  # the asset of `ingest`'s bronze table

    @property
    def stream(self) -> str:
        """The stream whose bronze rows silver reads."""
        return self.ingest.stream

    @property
    def quarantine(self) -> str:
        """The quarantine's table."""
        return self.tables[QUARANTINE]

    @property
    def keys(self) -> dict[str, AssetKey]:
        """Event type name (or QUARANTINE) -> its table's asset key (the table's path, split)."""
        return {target: AssetKey(table.split("/")) for target, table in self.tables.items()}


def build_contract_silver_asset(
    contract: Contract,
    ingest: IngestSpec,
    *,
    bronze_key: AssetKey,
    quarantine: str | None = None,
    group_name: str = "silver",
    mostly: float = 1.0,
    artifacts_bucket: str | None = ARTIFACTS_BUCKET,
    automation_condition: AutomationCondition | None = None,
    policy: Policy = OnSchemaChange.EVOLVE,
) -> AssetsDefinition:
    """The contract's silver multi-asset, reading `ingest`'s bronze table.

    Args:
        contract: the stream's event contract.
        ingest: the ingest whose bronze table silver reads (its stream, table, and checkpoint
            bucket, which holds the stage's watermark).
        bronze_key: the bronze asset's key (the upstream of every silver table).
        quarantine: the quarantine table; default `quarantine_table(ingest.stream)`.
        group_name: the assets' group.
        mostly: the share of a batch's rows each Great Expectations expectation needs, in
            (0, 1]; 1.0 fails a check on any row that breaks its rule.
        artifacts_bucket: the Object Store bucket for each batch's validation results,
            reports and run manifest; None stores none. A missing bucket is logged as a
            warning (the batch is in its tables by then), not an error.
        automation_condition: every silver table's condition (e.g. `AFTER_UPSTREAM_COMMITS`,
            to follow each bronze commit); None: only runs someone launches.
        policy: what a run does when the contract and a live table differ
            (`pipelines.silver.evolution`): one policy, or event type name -> policy.

    Returns:
        The multi-asset `silver_<stream lower>` (resources jetstream, spark, lakehouse,
        quality).

    Raises:
        ValueError: `mostly` is out of range.
    """
    if not 0 < mostly <= 1:
        raise ValueError(f"mostly must be in (0, 1], got {mostly!r}; e.g. 0.99 for 99% of rows")
    silver = _SilverSettings(
        contract=contract,
        ingest=ingest,
        tables=_silver_tables(contract, quarantine or quarantine_table(ingest.stream)),
        mostly=mostly,
        policy=policy,
        artifacts_bucket=artifacts_bucket,
        bronze_key=bronze_key,
    )
    specs = _table_specs(silver, bronze_key, group_name, automation_condition)
    checks = rule_checks(contract)
    return _silver_multi_asset(silver, checks, specs, _check_specs(checks, silver.keys))


def _silver_tables(contract: Contract, quarantine: str) -> dict[str, str]:
    """Each event type's table by its name, then the quarantine's table (key QUARANTINE)."""
    tables = {e.name: e.table for e in contract.event_types}
    tables[QUARANTINE] = quarantine
    return tables


def _table_specs(
    silver: _SilverSettings,
    bronze_key: AssetKey,
    group_name: str,
    automation_condition: AutomationCondition | None,
) -> list[AssetSpec]:
    """The `AssetSpec` of each event type's table, then the quarantine's, each on bronze."""
    keys, stream = silver.keys, silver.stream
    lease = {"bucket": silver.ingest.checkpoint_bucket, "stage": stage_name(stream)}
    specs = [
        AssetSpec(
            keys[e.name],
            deps=[bronze_key],
            description=e.description or f"Valid {e.name} events of {stream}, typed.",
            group_name=group_name,
            kinds={"spark", "delta"},
            automation_condition=automation_condition,
            metadata={
                "dagster/column_schema": declared_schema(e),
                "event_type": e.name,
                TABLE_METADATA_KEY: e.table,
                WRITER_LEASE_METADATA_KEY: lease,
            },
        )
        for e in silver.contract.event_types
    ]
    specs.append(
        AssetSpec(
            keys[QUARANTINE],
            deps=[bronze_key],
            description=f"{stream}'s bronze rows that break a quarantine rule, with the rules.",
            group_name=group_name,
            kinds={"spark", "delta"},
            automation_condition=automation_condition,
            metadata={
                "dagster/column_schema": table_schema(QUARANTINE_SCHEMA),
                TABLE_METADATA_KEY: silver.quarantine,
                WRITER_LEASE_METADATA_KEY: lease,
            },
        )
    )
    return specs


def _check_specs(checks: list[RuleCheck], keys: dict[str, AssetKey]) -> list[AssetCheckSpec]:
    """One `AssetCheckSpec` per check, named after its rule (or `field_rules`); blocking for
    `block` rules."""
    return [
        AssetCheckSpec(
            name=check.name,
            asset=keys[check.target],
            description=_described(check),
            blocking=check.blocking,
        )
        for check in checks
    ]


def _described(check: RuleCheck) -> str:
    """A check's description: its rule's, or what `field_rules` covers."""
    if check.name != FIELD_RULES:
        (rule,) = check.rules
        return f"[{rule.severity.value}] {rule.description}"
    names = [rule.name for rule in check.rules]
    shown = ", ".join(names[:_NAMES_SHOWN]) + (", ..." if len(names) > _NAMES_SHOWN else "")
    return (
        f"[quarantine] Each of the {len(names)} field rules of this table no one named "
        f"({shown}) holds on at least `mostly` of the batch's rows; the rules that failed, "
        "with their rows, are in the metadata. A rule gets a check of its own with "
        "`rule: <its name>` (`x-jsl-rule`) or a severity other than quarantine."
    )


def _silver_multi_asset(
    silver: _SilverSettings,
    checks: list[RuleCheck],
    specs: list[AssetSpec],
    check_specs: list[AssetCheckSpec],
) -> AssetsDefinition:
    """The multi-asset `silver_<stream lower>` of `specs` and `check_specs`, not subsettable."""

    @multi_asset(
        name=f"silver_{silver.stream.lower()}",
        specs=specs,
        check_specs=check_specs,
        # One batch feeds every table, so the tables are materialised together: automation
        # then requests all of them in one run. With subsets it could request one table and
        # then, while that run went, the others in a second run that lost the race for the
        # watermark (bench/freshness.py saw this at a 5 s automation interval).
        can_subset=False,
    )
    def contract_silver(
        context: AssetExecutionContext,
        jetstream: JetStreamResource,
        spark: SparkResource,
        lakehouse: LakehouseResource,
        quality: DataQualityResource,
    ):
        """Parses, checks, de-duplicates and routes new bronze rows by the event contract;
        with nothing new (found without Spark), reports so without starting Spark. A run
        tagged `jsl/follow` then keeps landing and taking new batches (`assets.follow`)."""
        seconds = follow_seconds(context, silver.bronze_key)  # a bad tag fails before a write
        keep_run_alive(context.instance, context.run.run_id, silver.ingest.lease_ttl)
        client = jetstream.get_client()
        idle = _nothing_to_process(silver, client, lakehouse)
        if idle is not None:
            first = list(_report_idle(silver, checks, context, lakehouse, idle))
        else:
            session = spark.get_session()
            first = _materialise(silver, checks, context, client, session, lakehouse, quality)
        yield from first
        if seconds and not _stops_on(context, first):
            yield from _follow(silver, checks, context, client, spark, lakehouse, quality, seconds)

    return contract_silver


def _follow(
    silver: _SilverSettings,
    checks: list[RuleCheck],
    context: AssetExecutionContext,
    client: JetStreamClient,
    spark: SparkResource,
    lakehouse: LakehouseResource,
    quality: DataQualityResource,
    seconds: float,
) -> Iterator[AssetMaterialization | AssetCheckEvaluation]:
    """Further batches, bronze then silver, while the stream has new messages; none starts
    after `seconds` (`assets.follow`)."""
    started = time.monotonic()
    batch = 1
    while (spent := time.monotonic() - started) < seconds:
        landed = land(
            client=client,
            session=spark.get_session,
            spec=silver.ingest,
            path=lakehouse.table_path(silver.ingest.table),
            run_id=context.run.run_id,
            until=None,
            log=context.log,
            run_state=dagster_run_state(context.instance),
        )
        if not landed.took_rows:
            context.log.info(f"{silver.stream}: nothing new after batch {batch}; the run ends")
            return
        batch += 1
        context.log.info(
            f"{silver.stream}: batch {batch} of this run ({spent:.0f} of {seconds:g} s "
            f"followed, run tag {FOLLOW_TAG})"
        )
        bronze = {**landed.metadata, "batch_of_run": MetadataValue.int(batch)}
        yield AssetMaterialization(asset_key=silver.bronze_key, metadata=bronze)
        session = spark.get_session()
        results = _materialise(
            silver, checks, context, client, session, lakehouse, quality, batch=batch
        )
        yield from batch_events(context, results, batch)
        if _stops_on(context, results):
            return
    context.log.info(f"{silver.stream}: {seconds:g} s followed, {batch} batches; the run ends")


def _stops_on(context: AssetExecutionContext, results: list) -> bool:
    """Whether a batch's `results` end the loop: a blocking check failed (logged)."""
    failed = failed_blocking(results)
    if failed:
        context.log.warning(
            f"blocking check(s) {', '.join(failed)} failed: no further batch in this run"
        )
    return bool(failed)


def _materialise(
    silver: _SilverSettings,
    checks: list[RuleCheck],
    context: AssetExecutionContext,
    client: JetStreamClient,
    session,
    lakehouse: LakehouseResource,
    quality: DataQualityResource,
    batch: int = 1,
) -> list[MaterializeResult | AssetCheckResult]:
    """Every table's `MaterializeResult`, then the selected checks' results, of one stage run
    (the run's `batch`th)."""
    now = dt.datetime.now(dt.timezone.utc)
    paths = {target: lakehouse.table_path(table) for target, table in silver.tables.items()}
    watermarks = WatermarkStore(client.create_key_value(silver.ingest.checkpoint_bucket_spec()))
    result = _run_stage(silver, context, session, watermarks, lakehouse, quality, paths, now)
    context.log.info(_summary(silver.ingest.table, result))
    verdicts = list(_check_results(checks, silver.keys, result, silver.mostly))
    stored = _store_artifacts(silver, context, client, paths, result, verdicts, batch)
    results: list[MaterializeResult | AssetCheckResult] = []
    for target, key in silver.keys.items():  # every table: the asset is not subsettable
        table = _table_now(session, silver.contract, target, paths[target], result)
        results.append(
            _materialization(silver.contract, target, key, paths[target], result, stored, table)
        )
    wanted = context.selected_asset_check_keys
    results += [v for v in verdicts if AssetCheckKey(v.asset_key, v.check_name) in wanted]
    return results


def _nothing_to_process(
    silver: _SilverSettings, client: JetStreamClient, lakehouse: LakehouseResource
) -> IdleSilver | None:
    """The stage's finding of nothing new, from its watermark and the Delta logs (no
    Spark); None: something may be new, or the logs are not readable here."""
    paths = {target: lakehouse.table_path(table) for target, table in silver.tables.items()}
    return nothing_to_process(
        WatermarkStore(client.create_key_value(silver.ingest.checkpoint_bucket_spec())),
        stream=silver.stream,
        bronze_path=lakehouse.table_path(silver.ingest.table),
        table_paths={name: path for name, path in paths.items() if name != QUARANTINE},
        quarantine_path=paths[QUARANTINE],
        stage=stage_name(silver.stream),
    )


def _report_idle(
    silver: _SilverSettings,
    checks: list[RuleCheck],
    context: AssetExecutionContext,
    lakehouse: LakehouseResource,
    idle: IdleSilver,
) -> Iterator[MaterializeResult | AssetCheckResult]:
    """Every table's `MaterializeResult` of a run with nothing new, each from its Delta log,
    then the selected checks carried over from the batch the tables last took in."""
    context.log.info(idle.finding.describe())
    context.log.info(_summary(silver.ingest.table, idle.result))
    found = finding_metadata(idle.finding)
    for target, key in silver.keys.items():
        path = lakehouse.table_path(silver.tables[target])
        table = _logged_table(silver.contract, target, idle.tables[target])
        yield _materialization(silver.contract, target, key, path, idle.result, (), table, found)
    wanted = context.selected_asset_check_keys
    verdicts = _check_results(checks, silver.keys, idle.result, silver.mostly)
    yield from (v for v in verdicts if AssetCheckKey(v.asset_key, v.check_name) in wanted)


def _run_stage(
    silver: _SilverSettings,
    context: AssetExecutionContext,
    session,
    watermarks: WatermarkStore,
    lakehouse: LakehouseResource,
    quality: DataQualityResource,
    paths: dict[str, str],
    now: dt.datetime,
) -> ContractSilverResult:
    """The stage's result on the new bronze rows, run again if another moved the watermark."""
    for attempt in range(1, STAGE_ATTEMPTS + 1):
        try:
            with one_line_spark_errors(stage_name(silver.stream)):
                return run_contract_silver(
                    session,
                    watermarks,
                    silver.contract,
                    stream=silver.stream,
                    bronze_path=lakehouse.table_path(silver.ingest.table),
                    table_paths={name: paths[name] for name in silver.tables if name != QUARANTINE},
                    quarantine_path=paths[QUARANTINE],
                    stage=stage_name(silver.stream),
                    run_id=context.run.run_id,
                    now=now,
                    source_table=silver.ingest.table,
                    validate=lambda frame, suite: quality.validate_dataframe(
                        frame,
                        suite,
                        evaluated_at=now,
                        meta={"run_id": context.run.run_id},
                        cache=False,  # the stage's frames are projections of a checkpoint
                    ),
                    mostly=silver.mostly,
                    policy=silver.policy,
                    quarantine_name=silver.quarantine,
                )
        except WatermarkConflictError as error:
            # Another run of this stage (an automation run beside the ingest run's silver)
            # moved the watermark first. What this run merged is in the tables once
            # (insert-only merges); go again from where that run stopped, so the rows it did
            # not read are not left waiting for the next bronze commit.
            if attempt == STAGE_ATTEMPTS:
                raise
            context.log.warning(
                f"{error}; running the stage again ({attempt + 1} of {STAGE_ATTEMPTS})"
            )


def _store_artifacts(
    silver: _SilverSettings,
    context: AssetExecutionContext,
    client: JetStreamClient,
    paths: dict[str, str],
    result: ContractSilverResult,
    verdicts: list[AssetCheckResult],
    batch: int = 1,
) -> tuple[StoredArtifact, ...]:
    """The batch's stored artifacts: none if nothing was new, no bucket, or storing failed."""
    if not result.processed or silver.artifacts_bucket is None:
        return ()
    try:
        return store_silver_artifacts(
            client,
            bucket=silver.artifacts_bucket,
            run_id=context.run.run_id,
            stream=silver.stream,
            source_table=silver.ingest.table,
            result=result,
            tables={target: (silver.tables[target], paths[target]) for target in silver.tables},
            checks={f"{v.asset_key.to_user_string()}:{v.check_name}": v.passed for v in verdicts},
            batch=batch,
        )
    except JetStreamError as error:
        # The tables and the watermark have moved: report the batch and checks anyway.
        context.log.warning(f"artifacts of this run were not stored: {error}")
        return ()


def _check_results(
    checks: list[RuleCheck],
    keys: dict[str, AssetKey],
    result: ContractSilverResult,
    mostly: float,
) -> Iterator[AssetCheckResult]:
    """One `AssetCheckResult` per check with a verdict: from the batch's GX outcomes
    for the rules GX checks, else from the stage's failing rows (the check holds when at
    least `mostly` of the rows it judged do not break its rule); as recorded with the
    watermark when nothing was new. A `field_rules` check holds when each of its rules does."""
    failures, expectations, checked, keywords, examples = _verdict_inputs(result)
    for check in checks:
        counted = failures.get(check.target, {})
        judged = [rule for rule in check.rules if rule.name in counted]
        if not judged:
            continue  # never processed a batch, or a rule added since: no verdict
        rows = checked.get(check.target)
        gx = expectations.get(check.target, {})
        verdicts = {
            rule.name: _verdict(counted[rule.name], rows, gx.get(rule.name), mostly)
            for rule in judged
        }
        # None: a `field_rules` recorded before it was counted (its rules' verdicts hold).
        failing = counted.get(check.name)
        extra = _example_metadata(check, examples)
        if check.name == SCHEMA_VALID and keywords is not None:  # None: not recorded then
            extra.update(_keyword_metadata(keywords.get(check.target, {})))
        yield _check_result(
            check, keys, result, failing=failing, rows=rows, verdicts=verdicts, mostly=mostly,
            extra=extra,
        )  # fmt: skip


def carried_over_evaluations(
    contract: Contract,
    tables: Mapping[str, str],
    watermark: Watermark,
    *,
    mostly: float,
    targets: Collection[str],
) -> list[AssetCheckEvaluation]:
    """The checks of `targets`' tables as a silver run with nothing new reports them: the
    verdicts recorded with `watermark` by the batch the tables last took in, marked as
    carried over.

    A retry or rebuild that changed a table reports them with its materialisation: gold's
    `all_deps_blocking_checks_passed` counts only the checks of a table's latest
    materialisation, so without them gold would wait for silver's next batch, and with them
    it finds the blocking checks as they were before.

    Args:
        contract: the stream's contract (its checks are the silver asset's).
        tables: check target (event type name, or QUARANTINE) -> its table.
        watermark: the stage's watermark.
        mostly: the silver asset's `mostly`.
        targets: the check targets whose checks to report.

    Returns:
        One evaluation per check of `targets` with a recorded verdict (a rule added since
        the batch has none, as in a run with nothing new).
    """
    keys = {target: AssetKey(table.split("/")) for target, table in tables.items()}
    checks = [check for check in rule_checks(contract) if check.target in targets]
    blocking = {(keys[c.target], c.name): c.blocking for c in checks}
    nothing = MergeOutcome(0, None)
    idle = ContractSilverResult(None, None, None, 0, {}, nothing, watermark=watermark)
    return [
        AssetCheckEvaluation(
            asset_key=result.asset_key,
            check_name=result.check_name,
            passed=result.passed,
            metadata=result.metadata,
            severity=result.severity,
            description=result.description,
            blocking=blocking[result.asset_key, result.check_name],
        )
        for result in _check_results(checks, keys, idle, mostly)
    ]


def _keyword_metadata(failed: dict[str, dict]) -> dict[str, MetadataValue]:
    """`schema_valid`'s table of the schema keywords the batch's rows failed (most first,
    as `pipelines.silver.schema_verdicts.schema_failures` kept them), with an example."""
    if not failed:
        return {"schema_failures": MetadataValue.md("no keyword of the schema failed")}
    lines = ["| keyword in the schema | failing rows | example |", "|---|---|---|"]
    for at, found in failed.items():
        place, example = (str(text).replace("|", "\\|") for text in (at, found["example"]))
        lines.append(f"| `{place}` | {found['rows']} | {example} |")
    return {"schema_failures": MetadataValue.md("\n".join(lines))}


@dataclass(frozen=True)
class _Verdict:
    """One rule's verdict on a batch: from its GX outcome (`gx`), else its failing rows."""

    passed: bool
    failing: int
    gx: dict | None


def _verdict(failing: int, rows: int | None, gx: dict | None, mostly: float) -> _Verdict:
    if gx is not None:
        return _Verdict(bool(gx["passed"]), failing, gx)
    if rows is None:  # recorded before the rows checked were: any failing row fails
        return _Verdict(failing == 0, failing, None)
    return _Verdict(within_mostly(failing, rows, mostly), failing, None)


class _Inputs(NamedTuple):
    """What the checks' verdicts are made of: the batch's, or as recorded with the watermark."""

    failures: dict  # check target -> rule -> failing rows
    expectations: dict  # check target -> rule -> GX outcome
    checked: dict  # check target -> rows judged
    keywords: dict | None  # failed schema keywords (None: a batch recorded before they were)
    examples: dict  # rule -> the first row breaking it ({}: none, or not recorded then)


def _verdict_inputs(result: ContractSilverResult) -> _Inputs:
    """The inputs of the checks' verdicts: the batch's, or recorded."""
    if result.processed:
        return _Inputs(
            result.failures,
            result.expectations,
            result.checked,
            result.schema_failures,
            result.rule_examples,
        )
    details = result.watermark.details if result.watermark else {}
    failures = recorded_failures(result.watermark) or {}
    keywords = details.get("schema_failures")
    keywords = keywords if isinstance(keywords, dict) else None  # recorded before they were
    examples = details.get("rule_examples")
    return _Inputs(
        failures,
        recorded_outcomes(details),
        recorded_checked(result.watermark),
        keywords,
        examples if isinstance(examples, dict) else {},
    )


def _check_result(
    check: RuleCheck,
    keys: dict[str, AssetKey],
    result: ContractSilverResult,
    *,
    failing: int | None,
    rows: int | None,
    verdicts: dict[str, _Verdict],
    mostly: float,
    extra: dict[str, MetadataValue],
) -> AssetCheckResult:
    """`check`'s `AssetCheckResult`: it holds when the verdict of every rule it judged does.

    `failing_rows` is the rows breaking any of its rules; `unexpected_rows` the sum of its
    rules' GX counts (a row breaking two counts twice); `extra` is more metadata."""
    gx = [v.gx for v in verdicts.values() if v.gx is not None]
    sources = ["great_expectations"] * bool(gx) + ["failing_rows"] * (len(gx) < len(verdicts))
    metadata = {
        "mostly": MetadataValue.float(mostly),
        "severity": MetadataValue.text(
            ", ".join(sorted({rule.severity.value for rule in check.rules}))
        ),
        "batch": MetadataValue.text(_batch(result)),
        "verdict_from": MetadataValue.text(" and ".join(sources)),
    }
    if failing is not None:
        metadata["failing_rows"] = MetadataValue.int(failing)
    if gx:
        names = [name for outcome in gx for name in outcome["expectations"]]
        more = [f"{len(names) - _RULES_SHOWN} more"] if len(names) > _RULES_SHOWN else []
        metadata["expectations"] = MetadataValue.text(", ".join(names[:_RULES_SHOWN] + more))
        metadata["unexpected_rows"] = MetadataValue.int(sum(int(o["unexpected"]) for o in gx))
    if rows is not None:
        metadata["rows_checked"] = MetadataValue.int(rows)
    if check.name == FIELD_RULES:
        metadata.update(_shared_metadata(verdicts, len(check.rules)))
    metadata.update(extra)
    description = _described(check)
    judged_in = _carried_over_from(result)
    if judged_in is not None:
        metadata["carried_over_from_run"] = MetadataValue.text(judged_in)
        description = (
            f"Carried over, not judged again: the verdict on {_batch(result)}, the batch "
            f"run {judged_in} judged and the table last took in. {description}"
        )
    return AssetCheckResult(
        asset_key=keys[check.target],
        check_name=check.name,
        passed=all(v.passed for v in verdicts.values()),
        severity=AssetCheckSeverity.ERROR if check.blocking else AssetCheckSeverity.WARN,
        description=description,
        metadata=metadata,
    )


def _example_metadata(check: RuleCheck, examples: dict) -> dict[str, MetadataValue]:
    """`example`: the first row of the batch that broke the check's rule (its seq and what
    it broke, as the quarantine says it); for `field_rules`, `rule_examples`: one per rule
    that flagged rows (`pipelines.silver.schema_verdicts.rule_examples`). A table's check
    takes its event type's rows; the quarantine's, every row."""
    events = [examples.get(check.target)] if check.target != QUARANTINE else examples.values()
    found: dict[str, dict] = {}
    for by_rule in events:
        for rule in check.rules:
            row = by_rule.get(rule.name) if isinstance(by_rule, dict) else None
            earlier = found.get(rule.name)
            if isinstance(row, dict) and (earlier is None or row["seq"] < earlier["seq"]):
                found[rule.name] = row
    if not found:
        return {}
    if check.name != FIELD_RULES:
        row = next(iter(found.values()))
        return {"example": MetadataValue.text(f"seq {row['seq']}: {row['example']}")}
    lines = ["| rule | first row (seq) | what it broke |", "|---|---|---|"]
    for name, row in sorted(found.items(), key=lambda item: item[1]["seq"])[:_RULES_SHOWN]:
        broke = str(row["example"]).replace("|", "\\|")
        lines.append(f"| {name} | {row['seq']} | {broke} |")
    return {"rule_examples": MetadataValue.md("\n".join(lines))}


def _shared_metadata(verdicts: dict[str, _Verdict], rules: int) -> dict[str, MetadataValue]:
    """A `field_rules` check's own metadata: its `rules`, those the batch judged (a rule
    added since a carried-over batch was not), the failed ones, and a table of the rules
    that flagged rows (most first)."""
    flagged = sorted(
        ((name, v) for name, v in verdicts.items() if v.failing or not v.passed),
        key=lambda item: (-item[1].failing, item[0]),
    )
    lines = ["| rule | failing rows | GX unexpected | holds |", "|---|---|---|---|"]
    for name, v in flagged[:_RULES_SHOWN]:
        unexpected = "" if v.gx is None else str(int(v.gx["unexpected"]))
        lines.append(f"| {name} | {v.failing} | {unexpected} | {'yes' if v.passed else 'no'} |")
    if len(flagged) > _RULES_SHOWN:
        lines.append(f"\n{len(flagged) - _RULES_SHOWN} more rules flagged rows")
    return {
        "rules": MetadataValue.int(rules),
        "rules_judged": MetadataValue.int(len(verdicts)),
        "rules_failed": MetadataValue.int(sum(not v.passed for v in verdicts.values())),
        "rule_failures": MetadataValue.md("\n".join(lines) if flagged else "no rule flagged a row"),
    }


def _carried_over_from(result: ContractSilverResult) -> str | None:
    """The run whose verdicts a run with nothing new reports again (None: a new batch)."""
    if result.processed or result.watermark is None:
        return None
    return result.watermark.run_id


def _batch(result: ContractSilverResult) -> str:
    """The batch `result`'s verdicts judge: this run's, or the one the tables last took in."""
    if result.processed:
        return f"bronze seq {result.bronze_start}-{result.bronze_end}"
    watermark = result.watermark
    if watermark is None or watermark.run_id is None:
        return "none"
    start = watermark.details.get("bronze_start", "?")
    return f"bronze seq {start}-{watermark.position} (run {watermark.run_id}), unchanged since"


def _summary(bronze: str, result: ContractSilverResult) -> str:
    if not result.processed:
        position = result.watermark.position if result.watermark else 0
        return f"{bronze}: no rows after the silver watermark {position}: nothing written"
    written = ", ".join(f"{n} {name}" for name, n in _written(result).items())
    return (
        f"{bronze} seq {result.bronze_start}-{result.bronze_end}: {result.rows_in} rows -> "
        f"{written}; quarantined by rule {result.quarantined_by_rule}"
    )


def _written(result: ContractSilverResult) -> dict[str, int]:
    written = {name: merge.inserted for name, merge in result.tables.items()}
    written["quarantine"] = result.quarantine.inserted
    return written


@dataclass(frozen=True)
class _TableNow:
    """A silver table as its materialisation reports it: version, rows and columns."""

    version: int | None  # None: no table
    rows: int | None  # None: not known
    column_schema: TableSchema | None  # an event type's table's (None for the quarantine)


def _table_now(
    session, contract: Contract, target: str, path: str, result: ContractSilverResult
) -> _TableNow:
    """The table after a stage run: the version the stage read right after its merge (no
    second read of the log); when it merged nothing, the version it read before its merges;
    in a run with nothing new, the table's latest. The row count is of the latest version,
    from a local table's log (`table_rows`: no Spark job); the columns are the contract's,
    with Spark resolving the type of a derived column declared without one."""
    merge = result.quarantine if target == QUARANTINE else result.tables[target]
    version = merge.version if merge.version is not None else table_version(session, path)
    rows = None if version is None else table_rows(session, path)
    schema = None
    if target != QUARANTINE:
        event = contract.event_type(target)
        if all(d.type is not None for d in event.derived):
            schema = declared_schema(event)
        else:
            schema = table_schema(silver_schema(event, session))
    return _TableNow(version, rows, schema)


def _logged_table(contract: Contract, target: str, files: TableFiles | None) -> _TableNow:
    """The table as its Delta log says (a run with nothing new): its version, and its rows
    from the files' statistics; the columns the contract declares."""
    schema = None if target == QUARANTINE else declared_schema(contract.event_type(target))
    if files is None:
        return _TableNow(None, None, schema)
    return _TableNow(files.version, files.rows, schema)


def _materialization(
    contract: Contract,
    target: str,
    key: AssetKey,
    path: str,
    result: ContractSilverResult,
    stored: tuple[StoredArtifact, ...],
    table: _TableNow,
    extra: dict[str, MetadataValue] | None = None,
) -> MaterializeResult:
    """A table's `MaterializeResult` after a stage run, with `extra` metadata."""
    merge = result.quarantine if target == QUARANTINE else result.tables[target]
    metadata = {
        "rows_in": MetadataValue.int(result.rows_in),
        "rows_written": MetadataValue.int(merge.inserted),
        "table_path": MetadataValue.path(path),
        "bronze_range": MetadataValue.text(_batch(result)),
        "nothing_new": MetadataValue.bool(not result.processed),
        **artifact_metadata(stored),
    }
    if table.version is not None:
        metadata["delta_version"] = MetadataValue.int(table.version)
    if table.version is not None and table.rows is not None:
        metadata["dagster/row_count"] = MetadataValue.int(table.rows)
    version_text = result.contract_versions.get(target)
    if version_text:
        metadata["contract_version"] = MetadataValue.text(version_text)
    events = {e.table for e in contract.event_types}
    table_name = contract.event_type(target).table if target != QUARANTINE else None
    changed = [
        c.describe()
        for c in result.schema_changes
        if c.table == table_name or (target == QUARANTINE and c.table not in events)
    ]
    if changed:
        metadata["schema_changes"] = MetadataValue.md("\n".join(f"- {c}" for c in changed))
    if target == QUARANTINE:
        for rule, rows in sorted(result.quarantined_by_rule.items()):
            metadata[f"quarantined_{rule}"] = MetadataValue.int(rows)
    elif table.column_schema is not None:
        metadata["dagster/column_schema"] = table.column_schema
    return MaterializeResult(asset_key=key, metadata={**metadata, **(extra or {})})
