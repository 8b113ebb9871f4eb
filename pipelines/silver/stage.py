"""The contract-driven silver stage: new bronze rows -> silver tables and quarantine, once.

One run, usable without Dagster (`assets/contract_silver.py` is a thin wrapper), for any
stream with a contract (the file trash's FILE_EVENTS among them):

1. take the stage's writer lease (`pipelines.silver.writer`: one run writes the stream's
   silver tables at a time, held to the end), and load the stage's watermark (the highest
   bronze sequence processed) from a KV bucket (and stop if a retry or rebuild of the stage
   is under way or was interrupted, `pipelines.silver.rejudge`);
2. take the stream's bronze rows after it, from one pinned version of the bronze table, and
   bring every table to the contract before writing a row (create it, or evolve it as the
   policy allows; a refused change stops the run: `pipelines.silver.evolution`);
3. parse and route them by the contract (`parse_events`, `route`), judging `event_id_unique`
   against the prior rows whose key is among the batch's (`colliding_keys`);
4. count each rule's failing rows and the rows each check judges, for the asset checks,
   and the rows each table receives, in one aggregate over the routed batch
   (`routed_counts`), and, given a `validate`, run each event type's Great Expectations
   suite on its candidates (`pipelines.silver.expectations`);
5. merge each event type's rows into its table and the rest into quarantine, keyed on the
   bronze row (stream, seq) with an insert-only MERGE bounded to the batch's seqs (a table
   that receives no rows is not merged into);
6. move the watermark to the batch's last sequence (compare-and-set), recording the batch's
   first sequence, the rules' failure counts and the suites' outcomes per rule.

A crash before step 6 makes the next run take the same rows again; the merges insert nothing
twice. A run with nothing new writes nothing and returns the watermark, whose recorded
counts still describe what the tables hold. `nothing_to_process` finds that before any
Spark work, from the watermark and the bronze table's Delta log (its files' largest `seq`),
so that a run with nothing new needs no SparkSession.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.contract import Contract, Rule
from pipelines.contract.fingerprint import contract_version, event_type_version
from pipelines.contract.rules import FIELD_RULES, KNOWN_EVENT_TYPE, PARSEABLE_JSON
from pipelines.ingest.bronze import BRONZE_SCHEMA
from pipelines.lakehouse.delta_log import TableFiles
from pipelines.lakehouse.delta_tables import MergeOutcome, merge_new_rows, table_version
from pipelines.lakehouse.nothing_new import CannotTell, NothingNew, largest, table_files
from pipelines.lakehouse.watermarks import Watermark, WatermarkStore
from pipelines.silver.duplicates import colliding_keys, event_keys
from pipelines.silver.evolution import ColumnChange, OnSchemaChange, TablePlan, prepare_tables
from pipelines.silver.expectations import contract_suite, expectation_frame, rule_outcomes
from pipelines.silver.parse import parse_events
from pipelines.silver.rejudge_intent import refuse_while_pending
from pipelines.silver.route import SilverBatch, judge, routed_counts, split
from pipelines.silver.rule_columns import silver_rules
from pipelines.silver.schema import QUARANTINE_SCHEMA, silver_schema
from pipelines.silver.schema_verdicts import rule_examples, schema_failures
from pipelines.silver.writer import DEFAULT_WAIT, writing
from resources.quality import QualitySuite, ValidationReport

# Runs a suite on a frame: `DataQualityResource.validate_dataframe` with the run's settings.
# The frames are projections of the judged batch's checkpoint: caching them saves nothing.
Validate = Callable[[DataFrame, QualitySuite], ValidationReport]

# The check target of rules a row of no declared event type breaks: the quarantine table.
QUARANTINE = ""
_UNTYPED_RULES = (PARSEABLE_JSON, KNOWN_EVENT_TYPE)


def quarantine_table(stream: str) -> str:
    """A stream's default quarantine table: `quarantine/<stream lower>`."""
    return f"quarantine/{stream.lower()}"


def stage_name(stream: str) -> str:
    """The watermark stage of a stream's silver (KV key `stage.silver.<stream lower>` in its
    bronze ingest's checkpoint bucket)."""
    return f"silver.{stream.lower()}"


@dataclass(frozen=True)
class RuleCheck:
    """One asset check of a table (an event type's, or the quarantine's: `QUARANTINE`): a
    rule with a check of its own (`Rule.own_check`), or `field_rules`, the table's other
    rules."""

    target: str  # the event type's name, or QUARANTINE
    name: str  # the rule's name, or FIELD_RULES
    rules: tuple[Rule, ...]

    @property
    def blocking(self) -> bool:
        return any(rule.severity.blocks for rule in self.rules)


def rule_checks(contract: Contract) -> list[RuleCheck]:
    """The stage's checks: each rule with a check of its own on every event type it applies
    to (`parseable_json` and `known_event_type`, broken by rows of no declared type, on the
    quarantine table), then per event type one `field_rules` check of its other rules."""
    found, shared = [], {}
    for rule in silver_rules(contract):
        if rule.name in _UNTYPED_RULES:
            found.append(RuleCheck(QUARANTINE, rule.name, (rule,)))
        elif rule.own_check:
            found.extend(RuleCheck(name, rule.name, (rule,)) for name in rule.applies_to)
        else:
            for name in rule.applies_to:
                shared.setdefault(name, []).append(rule)
    found += [RuleCheck(name, FIELD_RULES, tuple(rules)) for name, rules in shared.items()]
    return found


@dataclass(frozen=True)
class ContractSilverResult:
    """What one run did.

    Attributes:
        tables: event type name -> what was merged into its table.
        quarantined_by_rule: rule -> rows of this batch quarantined having broken it.
        failures: check target (event type, or QUARANTINE) -> rule -> failing rows of this
            batch (every rule of every check of `rule_checks`; under `field_rules`, the rows
            that break any rule of that check); as recorded when nothing was new.
        checked: check target -> the batch's rows its checks judged (an event type's rows,
            or every row for QUARANTINE's); as recorded when nothing was new.
        reports: event type -> its Great Expectations report (validated batches only).
        expectations: event type -> rule -> its expectations' outcome (`rule_outcomes`);
            as recorded when nothing was new.
        schema_changes: what this run changed in its tables' schemas to follow the contract
            (`pipelines.silver.evolution`), before writing any row.
        contract_versions: check target -> the `contract_version` its rows of this batch
            record.
        schema_failures: event type -> the JSON Schema keywords its rows of this batch
            failed, with their rows and an example (`schema_failures`, for `schema_valid`);
            as recorded when nothing was new.
        rule_examples: event type -> rule -> the first row of this batch breaking it, its
            seq and error (`rule_examples`, for every rule's check); as recorded when
            nothing was new.
    """

    bronze_start: int | None  # None: nothing new
    bronze_end: int | None
    bronze_version: int | None
    rows_in: int
    tables: dict[str, MergeOutcome]
    quarantine: MergeOutcome
    quarantined_by_rule: dict[str, int] = field(default_factory=dict)
    failures: dict[str, dict[str, int]] = field(default_factory=dict)
    watermark: Watermark | None = None
    reports: dict[str, ValidationReport] = field(default_factory=dict)
    expectations: dict[str, dict[str, dict]] = field(default_factory=dict)
    checked: dict[str, int] = field(default_factory=dict)
    schema_changes: tuple[ColumnChange, ...] = ()
    contract_versions: dict[str, str] = field(default_factory=dict)
    schema_failures: dict[str, dict[str, dict]] = field(default_factory=dict)
    rule_examples: dict[str, dict[str, dict]] = field(default_factory=dict)

    @property
    def processed(self) -> bool:
        return self.bronze_start is not None


def recorded_failures(watermark: Watermark | None) -> dict[str, dict[str, int]] | None:
    """The failure counts of the batch that last moved `watermark` (None: none recorded)."""
    recorded = None if watermark is None else watermark.details.get("failures")
    if not isinstance(recorded, dict):
        return None
    return {
        str(target): {str(rule): int(count) for rule, count in counts.items()}
        for target, counts in recorded.items()
        if isinstance(counts, dict)
    }


def recorded_checked(watermark: Watermark | None) -> dict[str, int]:
    """The rows each check target judged in the batch that last moved `watermark` (empty:
    none recorded, as by a batch before this was recorded)."""
    recorded = None if watermark is None else watermark.details.get("checked")
    if not isinstance(recorded, dict):
        return {}
    return {str(target): int(rows) for target, rows in recorded.items()}


def within_mostly(failing: int, checked: int, mostly: float) -> bool:
    """Whether a check holds on at least `mostly` of the `checked` rows when `failing` of
    them break it (as Great Expectations' `mostly`: no rows checked passes)."""
    return checked == 0 or (checked - failing) >= mostly * checked


Policy = OnSchemaChange | Mapping[str, OnSchemaChange]


def table_plans(
    contract: Contract,
    spark: SparkSession,
    *,
    table_paths: Mapping[str, str],
    quarantine_path: str,
    quarantine_name: str,
    policy: Policy = OnSchemaChange.EVOLVE,
) -> dict[str, TablePlan]:
    """Every table the stage writes, keyed as `ContractSilverResult.tables` (and QUARANTINE),
    with the schema and `contract_version` the contract gives it and its schema-change
    policy (`policy`: one for all, or event type name -> policy, EVOLVE where not named)."""

    def policy_of(name: str) -> OnSchemaChange:
        if isinstance(policy, OnSchemaChange | str):
            return OnSchemaChange(policy)
        return OnSchemaChange(policy.get(name, OnSchemaChange.EVOLVE))

    plans = {
        e.name: TablePlan(
            e.table,
            table_paths[e.name],
            silver_schema(e, spark),
            e,
            event_type_version(contract, e),
            policy_of(e.name),
        )
        for e in contract.event_types
    }
    plans[QUARANTINE] = TablePlan(
        quarantine_name,
        quarantine_path,
        QUARANTINE_SCHEMA,
        None,
        contract_version(contract),
        OnSchemaChange.EVOLVE,  # the quarantine's columns are the stage's own
    )
    return plans


def check_table_paths(contract: Contract, table_paths: Mapping[str, str]) -> None:
    """Raises ValueError unless `table_paths` names exactly the contract's event types."""
    names = {e.name for e in contract.event_types}
    if set(table_paths) != names:
        raise ValueError(
            f"table_paths must name every event type of the contract and no other: got "
            f"{sorted(table_paths)!r}, the contract's are {sorted(names)!r}"
        )


def run_contract_silver(
    spark: SparkSession,
    watermarks: WatermarkStore,
    contract: Contract,
    *,
    stream: str,
    bronze_path: str,
    table_paths: Mapping[str, str],
    quarantine_path: str,
    stage: str,
    run_id: str,
    now: dt.datetime,
    source_table: str | None = None,
    validate: Validate | None = None,
    mostly: float = 1.0,
    policy: Policy = OnSchemaChange.EVOLVE,
    quarantine_name: str | None = None,
    writer_wait: float = DEFAULT_WAIT,
) -> ContractSilverResult:
    """Processes the stream's bronze rows the stage has not processed yet.

    Args:
        spark: the session.
        watermarks: the KV store of stage watermarks (e.g. the ingest's checkpoint bucket).
        contract: the stream's event contract.
        stream: the stream whose bronze rows to take.
        bronze_path: the bronze Delta table.
        table_paths: event type name -> its silver Delta table.
        quarantine_path: the quarantine Delta table.
        stage: the watermark's stage name (key `stage.<stage>`).
        run_id: recorded on every row written and on the watermark.
        now: the clock (processed_at, quarantined_at); timezone-aware.
        source_table: the bronze table's name, recorded on quarantined rows.
        validate: runs a Great Expectations suite on a frame; None: no suites, the checks
            come from the failure counts alone.
        mostly: the share of rows each expectation needs, in (0, 1].
        policy: what to do when the contract and a live table differ (`OnSchemaChange`),
            for every event type or per event type name (EVOLVE where not named).
        quarantine_name: the quarantine table's name in reports; default
            `quarantine_table(stream)`.
        writer_wait: seconds to wait for another run writing the stage's tables (its
            writer lease, `pipelines.silver.writer`) before stopping.

    Returns:
        What was read, written, quarantined and counted.

    Raises:
        ValueError: `table_paths` does not name exactly the contract's event types, `now` is
            naive or `run_id` empty.
        SchemaChangeError: the contract no longer fits a table in a way `policy` does not
            apply (nothing is written, the watermark stays).
        RejudgeInProgressError: a retry or rebuild of the stage is under way or was
            interrupted (`pipelines.silver.rejudge`); nothing is written.
        SilverBusyError: another run wrote the stage's tables for all of `writer_wait`;
            nothing is written.
        WatermarkConflictError: another run moved the watermark meanwhile (run again).
    """
    check_table_paths(contract, table_paths)
    if now.tzinfo is None or not run_id:
        raise ValueError(f"now must be timezone-aware and run_id non-empty: {now!r}, {run_id!r}")
    # The stage's writer lease, held from before the watermark is read to after it moves:
    # no other run writes these tables meanwhile, and no retry or rebuild begins. A rejudge
    # holds it while it runs: the stage stops at once then, rather than after the wait.
    refuse_while_pending(watermarks.bucket, stage)
    with writing(
        watermarks.bucket, stage, holder=run_id, what="silver stage run", wait=writer_wait
    ) as writer:
        watermark = watermarks.load(stage)
        refuse_while_pending(watermarks.bucket, stage)
        version = table_version(spark, bronze_path)
        nothing = MergeOutcome(0, None)
        empty = {name: nothing for name in table_paths}
        idle = ContractSilverResult(None, None, version, 0, empty, nothing, watermark=watermark)
        if version is None:
            return idle
        rows = (
            spark.read.format("delta")
            .option("versionAsOf", version)
            .load(bronze_path)
            .where((F.col("stream") == stream) & (F.col("seq") > watermark.position))
            .select(*BRONZE_SCHEMA.fieldNames())
        )
        first, last, count = rows.agg(F.min("seq"), F.max("seq"), F.count("*")).first()
        if not count:
            return idle
        # Every table the stage writes: each event type's (in the contract's order), then
        # the quarantine (key QUARANTINE). Each table's log is read here (creating the table
        # if missing), then again only after a merge into it. The counts that let a merge be
        # skipped are of frames that give the same rows when Spark computes them again
        # (`merge_new_rows`' `count`).
        plans = table_plans(
            contract,
            spark,
            table_paths=table_paths,
            quarantine_path=quarantine_path,
            quarantine_name=quarantine_name or quarantine_table(stream),
            policy=policy,
        )
        paths = {target: plan.path for target, plan in plans.items()}
        schemas = {target: plan.schema for target, plan in plans.items()}
        # Each table made to fit the contract (created, or evolved) before any row is
        # written; a change the policy refuses stops the run here, with nothing written.
        writer.fence()
        ready = prepare_tables(spark, list(plans.values()), stream=stream)
        versions = {target: ready[plan.name][0] for target, plan in plans.items()}
        changes = tuple(c for plan in plans.values() for c in ready[plan.name][1])
        tables = {target: spark.read.format("delta").load(path) for target, path in paths.items()}
        quarantined_before = tables.pop(QUARANTINE)
        # The parsed rows, the prior keys and the judged batch are computed once each and kept
        # (`localCheckpoint`): every later job reads them, none reads a table again. Cached
        # frames would not do: a merge drops every cached frame built on the table it writes,
        # and the judged batch is built on the prior keys, which read the silver tables, so
        # each merge would have Spark judge the batch again from the bronze read on. A
        # checkpoint is one request and needs no release: Spark frees it once nothing refers to
        # its frame (docs/silver.md).
        parsed = parse_events(rows, contract).localCheckpoint()
        keys = F.broadcast(event_keys(parsed, contract))
        prior = colliding_keys(keys, contract, tables, quarantined_before).localCheckpoint()
        judged = judge(parsed, contract, prior, run_id=run_id, now=now).localCheckpoint()
        # Every frame below is a projection of the judged batch.
        batch = split(judged, contract, now=now, source_table=source_table)
        counts = _count(contract, batch, count)
        failed_keywords = schema_failures(batch.judged, contract)
        broken = any(n for failing in counts.failures.values() for n in failing.values())
        examples = rule_examples(batch.judged, contract) if broken else {}
        reports = (
            {} if validate is None else _validate(contract, batch.candidates, validate, mostly)
        )
        expectations = {name: rule_outcomes(report) for name, report in reports.items()}
        incoming = {**batch.tables, QUARANTINE: batch.quarantine}
        merged = {}
        for target, path in paths.items():
            writer.fence()
            merged[target] = merge_new_rows(
                spark,
                incoming[target],
                path,
                schemas[target],
                seqs=(first, last),
                count=counts.merging[target],
                version=versions[target],
            )
        quarantined = merged.pop(QUARANTINE)
        saved = watermarks.save(
            watermark.advanced(
                last,
                run_id=run_id,
                now=now,
                bronze_version=version,
                bronze_start=first,
                failures=counts.failures,
                checked=counts.checked,
                expectations=expectations,
                schema_failures=failed_keywords,
                rule_examples=examples,
            )
        )
        return ContractSilverResult(
            first,
            last,
            version,
            count,
            merged,
            quarantined,
            counts.quarantined_by_rule,
            counts.failures,
            saved,
            reports,
            expectations,
            counts.checked,
            changes,
            {target: plan.fingerprint for target, plan in plans.items()},
            failed_keywords,
            examples,
        )


@dataclass(frozen=True)
class IdleSilver:
    """A silver run with nothing new, found without Spark (`nothing_to_process`).

    Attributes:
        result: what `run_contract_silver` returns with nothing new: no batch, the watermark.
        finding: the positions compared.
        tables: check target (event type name, or QUARANTINE) -> its table's live files now,
            from its Delta log (None: no table yet).
    """

    result: ContractSilverResult
    finding: NothingNew
    tables: dict[str, TableFiles | None]


def nothing_to_process(
    watermarks: WatermarkStore,
    *,
    stream: str,
    bronze_path: str,
    table_paths: Mapping[str, str],
    quarantine_path: str,
    stage: str,
) -> IdleSilver | None:
    """What a run of the stage would find when no bronze row is past its watermark, read
    from the KV watermark and the Delta logs alone; None when a row may be, or when the logs
    cannot be read here (a table off the local filesystem): run `run_contract_silver` then.

    The bronze table's files record their largest `seq` (Delta's statistics): when none is
    past the watermark, the stage's read after it would find no row. Arguments as
    `run_contract_silver`'s.

    Raises:
        RejudgeInProgressError: a retry or rebuild of the stage is under way or was
            interrupted, as `run_contract_silver` raises.
    """
    watermark = watermarks.load(stage)
    refuse_while_pending(watermarks.bucket, stage)
    paths = {**table_paths, QUARANTINE: quarantine_path}
    try:
        bronze = table_files(bronze_path, ("seq",))
        newest = largest(bronze, "seq")
        if newest is not None and newest > watermark.position:
            return None
        tables = {target: table_files(path) for target, path in paths.items()}
    except CannotTell:
        return None
    version = None if bronze is None else bronze.version
    nothing = MergeOutcome(0, None)
    empty = {name: nothing for name in table_paths}
    result = ContractSilverResult(None, None, version, 0, empty, nothing, watermark=watermark)
    held = (
        "no bronze table yet" if bronze is None else f"bronze v{version} holds up to seq {newest}"
    )
    finding = NothingNew(
        stage,
        (
            ("bronze_version", version),
            ("bronze_max_seq", newest),
            ("watermark", watermark.position),
        ),
        f"{held}, the silver watermark is at {watermark.position} ({stream})",
    )
    return IdleSilver(result, finding, tables)


def _validate(
    contract: Contract, candidates: Mapping[str, DataFrame], validate: Validate, mostly: float
) -> dict[str, ValidationReport]:
    """Each event type's suite on its candidates (types without a checkable rule skipped)."""
    reports = {}
    for event in contract.event_types:
        suite = contract_suite(contract, event, mostly=mostly)
        if suite is not None:
            frame = expectation_frame(candidates[event.name], contract, event)
            reports[event.name] = validate(frame, suite)
    return reports


@dataclass(frozen=True)
class _Counts:
    """What the stage counts in a batch, in one aggregate (`routed_counts`)."""

    failures: dict[str, dict[str, int]]  # check target -> rule -> failing rows
    checked: dict[str, int]  # check target -> the rows its checks judge
    merging: dict[str, int]  # event type, or QUARANTINE -> the rows its table receives
    quarantined_by_rule: dict[str, int]  # rule -> quarantined rows breaking it (if any)


def _count(contract: Contract, batch: SilverBatch, rows: int) -> _Counts:
    """Failing rows per rule of each check of `rule_checks`, by target, and for a
    `field_rules` check the rows that break any of its rules; the rows each target's
    checks judge (an event type's candidates, or all `rows` of the batch for the
    quarantine's); the rows each table receives; the quarantined rows per broken rule."""
    judged, untyped = routed_counts(batch, contract)
    checked = {name: counts.rows for name, counts in judged.items()}
    checked[QUARANTINE] = rows
    merging = {name: counts.kept for name, counts in judged.items()}
    merging[QUARANTINE] = untyped.rows
    found: dict[str, dict[str, int]] = {}
    for check in rule_checks(contract):
        counts = untyped if check.target == QUARANTINE else judged[check.target]
        failing = found.setdefault(check.target, {})
        failing.update((rule.name, counts.failing[rule.name]) for rule in check.rules)
        if check.name == FIELD_RULES:
            failing[FIELD_RULES] = counts.shared
    by_rule = {rule: n for rule, n in untyped.failing.items() if n}
    return _Counts(found, checked, merging, by_rule)
