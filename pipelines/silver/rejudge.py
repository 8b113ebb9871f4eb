"""Judging already-processed bronze rows again under the current contract, each row moved once.

When a contract changes (a rule loosened, an event type added, a field made required), rows
the silver stage placed under the old one may belong elsewhere: `jsl quarantine retry`
judges the quarantined rows again, `jsl silver rebuild` every row of a seq range. Both keep
the stage's invariant: each bronze row with seq <= the stage's watermark is in exactly one of
the silver tables or the quarantine.

0. The run takes the stage's writer lease (`pipelines.silver.writer`), waiting for a stage
   run or another rejudge writing the tables, and holds it to the end.
1. A rejudge pending for the stage (its intent still in KV, `rejudge_intent`) is finished
   first, from the versions it pinned; one still running makes this run fail, writing
   nothing.
2. The tables are made to fit the contract as the stage does (`evolution.prepare_tables`;
   a rebuild goes ahead of a field made required while rows lack it). The intent is
   recorded: the selection, the watermark position (`upto`: later rows are the next stage
   run's), the bronze version and every table's version, the run id and clock.
3. The rows to judge, S (`rejudge_rows`): a retry's quarantine rows matching the selection,
   a rebuild's bronze rows in range, read at the pinned versions; a resumed rejudge adds
   every row it had written since them.
4. S's bronze rows are parsed and routed by the current contract (`parse_events`, `route`),
   `event_id_unique` judged against the pinned tables' keys outside S.
5. Phase A: each table upserts the rows routed to it (`rejudge_writes`: MERGE on (stream,
   seq), a changed row updated, a new one inserted). Phase B: each table deletes the rows of
   S routed elsewhere. Every insert comes before every delete, so a crash between two
   writes leaves a row in two tables at worst, never in none, and the next run converges
   (step 1).
6. The intent is deleted.

Every frame is read at a pinned version, so Spark computing one again after a write gives
the same rows, and a resumed run judges the same S. S parsed, the prior keys and S judged
are computed once each and kept (`localCheckpoint`), so the writes do not make Spark judge S
again.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.contract import Contract
from pipelines.contract.fingerprint import contract_version
from pipelines.lakehouse.delta_tables import table_version
from pipelines.lakehouse.watermarks import WatermarkStore
from pipelines.silver.duplicates import colliding_keys, event_keys
from pipelines.silver.evolution import (
    ChangeKind,
    ColumnChange,
    OnSchemaChange,
    SchemaChangeError,
    TablePlan,
    prepare_tables,
)
from pipelines.silver.parse import parse_events
from pipelines.silver.rejudge_intent import (
    Clock,
    Intent,
    IntentClaim,
    PinnedTable,
    Selection,
    begin,
    kept,
    refuse_while_held,
    take_over,
    utc_now,
)
from pipelines.silver.rejudge_rows import KEY, Table, read_at, rows_to_judge
from pipelines.silver.rejudge_writes import MERGE_WRITES, TableWrites
from pipelines.silver.route import judge, split
from pipelines.silver.stage import (
    QUARANTINE,
    Policy,
    check_table_paths,
    quarantine_table,
    table_plans,
)
from pipelines.silver.writer import DEFAULT_WAIT, writing


@dataclass(frozen=True)
class RejudgeResult:
    """What a rejudge did (counted from its judgement against the pinned tables, so a
    resumed run reports what the interrupted one would have).

    Attributes:
        judged: the rows of S.
        routed: target (event type, or QUARANTINE) -> rows of S there now.
        moved: rule -> rows that left the quarantine for silver having broken it.
        still_failing: rows of S in quarantine before and after (their errors as judged now).
        removed: target -> rows of S that were there and are not any more.
        added: target -> rows of S that are there now and were not.
        upto: the stage's watermark position: rows after it were not judged.
        bronze_version: the bronze version read (None: no bronze table).
        run_id: the run stamped on the rows written (an interrupted run's, when resumed).
        resumed: an interrupted rejudge was finished first.
    """

    judged: int
    routed: dict[str, int]
    moved: dict[str, int]
    still_failing: int
    removed: dict[str, int]
    added: dict[str, int]
    upto: int
    bronze_version: int | None
    run_id: str
    resumed: bool = False


@dataclass
class _Tally:
    """S as judged: where its rows go and where they were at the pinned versions."""

    judged: int = 0
    seqs: tuple[int, int] = (0, 0)
    routed: Counter = field(default_factory=Counter)  # target -> rows
    leaving: Counter = field(default_factory=Counter)  # path -> rows there routed elsewhere
    stale: Counter = field(default_factory=Counter)  # path -> as `leaving`, in the tables now
    added: Counter = field(default_factory=Counter)  # target -> rows not there before
    moved: Counter = field(default_factory=Counter)  # old rule -> rows quarantine -> silver
    still_failing: int = 0


def _made_required(change: ColumnChange) -> bool:
    """Whether `change` is a field made required while rows of the table lack it."""
    made = (change.old, change.new) == ("optional", "required")
    return change.kind is ChangeKind.BREAKING and made


def _relaxed(plan: TablePlan, columns: set[str]) -> TablePlan:
    """`plan` with `columns` not required: the table records them as required only once
    no row of it lacks them (the stage's next run finds that and records it)."""
    if plan.event is None or not columns:
        return plan
    fields = tuple(
        replace(f, required=False) if f.column in columns else f for f in plan.event.fields
    )
    return replace(plan, event=replace(plan.event, fields=fields))


@dataclass(frozen=True)
class _Job:
    """What one call knows: the session, the current contract and its tables."""

    spark: SparkSession
    contract: Contract
    stream: str
    plans: dict[str, TablePlan]  # target -> its table (each event type, then QUARANTINE)
    bronze_path: str
    writes: Mapping[str, TableWrites]

    @property
    def paths(self) -> dict[str, str]:
        return {target: plan.path for target, plan in self.plans.items()}

    def prepare(self, selection: Selection) -> dict[str, int]:
        """Makes every table fit the contract as the stage does (`prepare_tables`); returns
        target -> its version. A rebuild goes ahead of a field made required while rows of
        its table lack it: moving those rows to quarantine is what a rebuild is for.

        Raises:
            SchemaChangeError: a change the tables' policy refuses; nothing was written.
        """
        plans = list(self.plans.values())
        try:
            ready = prepare_tables(self.spark, plans, stream=self.stream)
        except SchemaChangeError as error:
            required = [c for c in error.changes if _made_required(c)]
            if selection.quarantined_only or len(required) < len(error.changes):
                raise
            plans = [_relaxed(p, {c.column for c in required if c.table == p.name}) for p in plans]
            ready = prepare_tables(self.spark, plans, stream=self.stream)
        return {target: ready[plan.name][0] for target, plan in self.plans.items()}

    def tables(self, intent: Intent) -> list[Table]:
        """The current tables, then those of the intent no longer among them."""
        pinned = {t.path: t.version for t in intent.tables}
        found = [
            Table(target, plan.path, plan.schema, pinned.get(plan.path))
            for target, plan in self.plans.items()
        ]
        current = {plan.path for plan in self.plans.values()}
        found.extend(
            Table(t.target, t.path, None, t.version) for t in intent.tables if t.path not in current
        )
        return found


def _check_arguments(
    contract: Contract,
    stream: str,
    table_paths: Mapping[str, str],
    stage: str,
    run_id: str,
    now: dt.datetime,
    selection: Selection,
    lease_ttl: float,
) -> None:
    check_table_paths(contract, table_paths)
    if now.utcoffset() is None or not run_id or not stage:
        raise ValueError(
            f"now must be timezone-aware, run_id and stage non-empty: {now!r}, {run_id!r}, "
            f"{stage!r}"
        )
    if not isinstance(selection, Selection):
        raise ValueError(f"selection must be a Selection, got {selection!r}")
    selection.check_names(contract, stream)
    if not lease_ttl > 0:
        raise ValueError(f"lease_ttl must be > 0 seconds, got {lease_ttl!r}")


def rejudge(
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
    selection: Selection,
    source_table: str | None = None,
    policy: Policy = OnSchemaChange.EVOLVE,
    quarantine_name: str | None = None,
    writes: Mapping[str, TableWrites] | None = None,
    lease_ttl: float = 30.0,
    writer_wait: float = DEFAULT_WAIT,
    clock: Clock = utc_now,
) -> RejudgeResult:
    """Judges the selected, already-processed bronze rows again under `contract`.

    Args:
        spark: the session.
        watermarks: the stage's watermark store; its bucket holds the intent.
        contract: the stream's event contract as it is now.
        stream: the stream whose bronze rows to judge.
        bronze_path: the bronze Delta table.
        table_paths: event type name -> its silver Delta table.
        quarantine_path: the quarantine Delta table.
        stage: the silver stage's watermark name (`pipelines.silver.stage.stage_name`).
        run_id: stamped on the rows written, and the intent's holder.
        now: stamped on the rows written (processed_at, quarantined_at); timezone-aware.
        selection: which rows to judge.
        source_table: the bronze table's name, recorded on quarantined rows.
        policy: the tables' schema-change policy, as the stage's (`run_contract_silver`).
        quarantine_name: the quarantine table's name in reports; default
            `quarantine_table(stream)`.
        writes: target (event type, or QUARANTINE) -> how its table is written
            (`rejudge_writes.TableWrites`); MERGE where not given.
        lease_ttl: seconds the intent's lease lasts from its last renewal (before each write,
            and every third of it while the run lives): a run killed mid-way holds off
            others until then. The stage's writer lease (`pipelines.silver.writer`) has
            the same TTL.
        writer_wait: seconds to wait for a stage run (or another rejudge) writing the
            stage's tables before stopping with nothing written.
        clock: the current time, for the leases.

    Returns:
        What moved where. An interrupted rejudge with the same selection and watermark
        position is finished and its result returned (its run id and clock on the rows):
        the request would judge the same rows again the same way.

    Raises:
        ValueError: arguments that do not fit (before any I/O: a rule or an event type the
            contract lacks, ...), or a pending intent of another stream for `stage`.
        SchemaChangeError: the contract no longer fits a table in a way `policy` does not
            apply (nothing is written).
        RejudgeInProgressError: another run is rejudging the stage; nothing was written.
        SilverBusyError: a stage run (or another rejudge) wrote the stage's tables for all
            of `writer_wait`; nothing was written.
        RejudgeLostError: this run's lease expired and another run took over; it finishes.
    """
    _check_arguments(contract, stream, table_paths, stage, run_id, now, selection, lease_ttl)
    # The stage's writer lease, held throughout: no stage run or other rejudge writes the
    # tables meanwhile (the intent below is recorded, taken over and finished under it).
    what = "quarantine retry" if selection.quarantined_only else "silver rebuild"
    refuse_while_held(watermarks.bucket, stage, clock)  # at once, not after the wait
    with writing(
        watermarks.bucket,
        stage,
        holder=run_id,
        what=what,
        ttl=lease_ttl,
        wait=writer_wait,
        clock=clock,
    ) as writer:
        plans = table_plans(
            contract,
            spark,
            table_paths=table_paths,
            quarantine_path=quarantine_path,
            quarantine_name=quarantine_name or quarantine_table(stream),
            policy=policy,
        )
        job = _Job(spark, contract, stream, plans, bronze_path, writes or {})
        bucket = watermarks.bucket
        pending = take_over(bucket, stage, holder=run_id, ttl=lease_ttl, clock=clock)
        if pending is not None:
            if pending.intent.stream != stream:
                pending.abandon()
                raise ValueError(
                    f"stage {stage!r} has a pending rejudge of stream {pending.intent.stream!r}, "
                    f"not {stream!r}: run it with that stream"
                )
            finished = replace(_run(job, pending, resume=True), resumed=True)
            same = pending.intent.selection == selection
            if same and pending.intent.upto == watermarks.load(stage).position:
                return finished
        upto = watermarks.load(stage).position
        bronze_version = table_version(spark, bronze_path)
        if bronze_version is None or upto == 0:
            nothing = dict.fromkeys(plans, 0)
            return RejudgeResult(
                0, nothing, {}, 0, {}, {}, upto, bronze_version, run_id, pending is not None
            )
        writer.fence()
        versions = job.prepare(selection)
        pinned = tuple(PinnedTable(t, plans[t].path, versions[t]) for t in plans)
        intent = Intent(
            stage, stream, selection, run_id, now, upto, bronze_version, pinned, source_table,
            contract_version(contract), run_id,
        )  # fmt: skip
        claim = begin(bucket, intent, ttl=lease_ttl, clock=clock)
        result = _run(job, claim, resume=False)
        return replace(result, resumed=pending is not None)


def _run(job: _Job, claim: IntentClaim, *, resume: bool) -> RejudgeResult:
    """Executes a claimed intent, then deletes it; on any failure gives the lease up,
    keeping the intent for the next run. A resumed intent's tables are made to fit the
    contract first, unless the intent was recorded under the same contract and tables."""
    intent = claim.intent
    try:
        with kept(claim):
            same = set(job.paths.values()) == {t.path for t in intent.tables}
            if resume and not (same and intent.contract_version == contract_version(job.contract)):
                job.prepare(intent.selection)
            result = _execute(job, claim, resume=resume)
    except BaseException:
        claim.abandon()
        raise
    claim.finish()
    return result


def _tally(
    routed: DataFrame,
    was: DataFrame,
    now: DataFrame | None,
    tables: list[Table],
    paths: dict[str, str],
) -> _Tally:
    """Counts S by where it goes, where it was at the pinned versions and where it is now
    (`now`; None: where it was), in one aggregate."""

    def paths_of(located: DataFrame, name: str) -> DataFrame:
        return located.groupBy(*KEY).agg(
            F.array_sort(F.collect_set("path")).alias(name),
            F.first("failed_rules", ignorenulls=True).alias(f"{name}_rules"),
        )

    joined = routed.join(paths_of(was, "was"), KEY, "left")
    columns = ["target", "was", "was_rules"]
    if now is not None:
        joined = joined.join(paths_of(now, "now").drop("now_rules"), KEY, "left")
        columns.append("now")
    groups = (
        joined.groupBy(*columns)
        .agg(
            F.count(F.lit(1)).alias("rows"), F.min("seq").alias("first"), F.max("seq").alias("last")
        )
        .collect()
    )
    quarantines = {t.path for t in tables if t.target == QUARANTINE}
    tally = _Tally()
    if groups:
        tally.seqs = (min(g["first"] for g in groups), max(g["last"] for g in groups))
    for group in groups:
        n, target, was_in = group["rows"], group["target"], set(group["was"] or ())
        now_in = set(group["now"] or ()) if "now" in columns else was_in
        tally.judged += n
        tally.routed[target] += n
        going = paths[target]
        for path in was_in - {going}:
            tally.leaving[path] += n
        for path in now_in - {going}:
            tally.stale[path] += n
        if going not in was_in:
            tally.added[target] += n
        if was_in & quarantines:
            if target == QUARANTINE:
                tally.still_failing += n
            else:
                for rule in group["was_rules"] or ():
                    tally.moved[rule] += n
    return tally


def _execute(job: _Job, claim: IntentClaim, *, resume: bool) -> RejudgeResult:
    intent = claim.intent
    spark, contract = job.spark, job.contract
    tables = job.tables(intent)
    rows, was, now = rows_to_judge(spark, contract, intent, tables, job.bronze_path, resume=resume)
    # Computed once and kept (`localCheckpoint`), not cached: the writes below change the
    # tables these frames read (the quarantine a retry takes its rows from, the tables
    # `prior` reads at their pinned versions), and a write drops every cached frame built
    # on a table it changes, so Spark would parse, judge and route S again for each write.
    # A checkpointed frame reads no table.
    parsed = parse_events(rows, contract).localCheckpoint()
    pinned = {
        t.target: read_at(spark, t.path, t.pinned)
        for t in tables
        if t.schema is not None and t.pinned is not None
    }
    quarantine = pinned.pop(QUARANTINE, None)
    prior = colliding_keys(F.broadcast(event_keys(parsed, contract)), contract, pinned, quarantine)
    # S's own rows are in the batch as judged now, not as their old keys say.
    prior = prior.join(parsed.select(*KEY), KEY, "left_anti").localCheckpoint()
    judged = judge(parsed, contract, prior, run_id=intent.run_id, now=intent.now)
    # Kept too: every output is a projection of it.
    batch = split(
        judged.localCheckpoint(), contract, now=intent.now, source_table=intent.source_table
    )
    outputs = {**batch.tables, QUARANTINE: batch.quarantine}
    routed = None
    for target, frame in outputs.items():
        keyed = frame.select(*KEY, F.lit(target).alias("target"))
        routed = keyed if routed is None else routed.unionByName(keyed)
    tally = _tally(routed, was, now, tables, job.paths)
    for target, frame in outputs.items():  # phase A: every insert and update
        if tally.routed[target]:
            claim.fence()
            writes = job.writes.get(target, MERGE_WRITES)
            writes.upsert(spark, frame, job.plans[target].path, tally.seqs)
    for table in tables:  # phase B: every delete
        if tally.stale[table.path]:
            staying = [t for t, path in job.paths.items() if path == table.path]
            gone = routed.where(~F.col("target").isin(*staying)) if staying else routed
            claim.fence()
            writes = job.writes.get(table.target, MERGE_WRITES)
            writes.delete(spark, gone.select(*KEY), table.path, tally.seqs)
    removed: Counter = Counter()
    for table in tables:
        removed[table.target] += tally.leaving[table.path]
    return RejudgeResult(
        tally.judged,
        {target: tally.routed[target] for target in job.paths},
        dict(tally.moved),
        tally.still_failing,
        {target: n for target, n in removed.items() if n},
        dict(tally.added),
        intent.upto,
        intent.bronze_version,
        intent.run_id,
    )
