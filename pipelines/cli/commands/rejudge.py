"""`jsl quarantine retry` and `jsl silver rebuild`: already-processed rows judged again.

    jsl quarantine retry --stream NAME [--rule R ...] [--event-type T ...]
                         [--first-seq N] [--last-seq N] [--since ISO] [--until ISO]
                         [--project DIR] [--nats-url URL | --embedded]
    jsl silver rebuild   --stream NAME [--event-type T ...] [--first-seq N] [--last-seq N]
                         [--since ISO] [--until ISO] [--project DIR] [--nats-url URL | --embedded]

After a contract change (docs/contract-changes.md): `retry` judges the quarantined rows the
options select (none: all of them) under the stream's current contract, and moves those that
pass to their silver table; `rebuild` re-derives silver and quarantine for every row in range
(every row up to silver's watermark without one). Both go through
`pipelines.silver.rejudge.rejudge`: each bronze row ends in exactly one of silver or
quarantine, and a run killed half-way is finished by the next one.

The stream is one declared as a `JetStreamStream` in the dg project (the one the working
directory is in, or `--project DIR`), loaded as `dg check defs` loads it; the tables are under
`LAKEHOUSE_ROOT` (default: the data directory's `lakehouse`, `jsl`'s first line),
the watermark and the rejudge's intent in the ingest's checkpoint bucket on the NATS server
(`--nats-url`, `$NATS_URL`, or `--embedded`). Spark starts as a run's does (`SparkResource`).

The arguments are checked before any work: a stream, a rule (`--rule`) or an event type
(`--event-type`) the project does not declare, a reversed range or a seq below 1 is one line
on stderr naming the ones declared, with exit status 2, before the NATS server or Spark is
asked. No bronze table at the lakehouse root (a fresh project, or LAKEHOUSE_ROOT pointing
elsewhere) is said so, with exit status 1, before Spark starts. Spark's output goes to a log
file under the data directory (`<data dir>/logs/`), whose path is printed.

Done, the command tells Dagster what changed, as the `rejudge_<stream>` job does
(`pipelines.wiring.rejudge_job.rejudge_events`): a materialisation of each table that changed,
with its checks carried over from the batch it last took in, reported on the Dagster instance
outside a run. The automation sensor then requests what follows those tables (gold) on its
next tick. The instance is `$DAGSTER_HOME`'s, else the data directory's (`jsl dev`'s and
`jsl demo`'s) when it has one; with neither, or when the report fails, one line on stderr
says that gold waits for silver's next run or a launch.

Exit status: 0 done, 1 refused (no bronze table, a breaking change, another rejudge under
way, a failure inside Spark), 2 bad input.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import uuid
import warnings
from pathlib import Path

from pipelines.cli.commands import (
    add_server_arguments,
    jetstream_resource,
    project_dir,
    server_url,
    settings_for,
    spark_session,
    written,
)
from pipelines.settings import Settings
from resources.backports import fromisoformat

PROG = {"quarantine": "jsl quarantine retry", "silver": "jsl silver rebuild"}


def _when(text: str) -> dt.datetime:
    try:
        moment = fromisoformat(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 time: {text!r}") from error
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)


def _selection_arguments(parser: argparse.ArgumentParser, *, rules: bool) -> None:
    parser.add_argument("--stream", required=True, help="the declared stream")
    if rules:
        parser.add_argument(
            "--rule", action="append", default=[], help="only rows that broke this rule"
        )
    parser.add_argument(
        "--event-type", action="append", default=[], help="only rows of this event type"
    )
    parser.add_argument("--first-seq", type=int, help="the lowest bronze seq (inclusive)")
    parser.add_argument("--last-seq", type=int, help="the highest bronze seq (inclusive)")
    parser.add_argument(
        "--since", type=_when, help="rows published at or after this time (ISO, default UTC)"
    )
    parser.add_argument("--until", type=_when, help="rows published before this time")
    parser.add_argument(
        "--project",
        type=Path,
        metavar="DIR",
        help="a dg project of your own (default: the one the working directory is in)",
    )
    add_server_arguments(parser)


def add_quarantine_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds `jsl quarantine retry` to `parser` (the `quarantine` subparser)."""
    actions = parser.add_subparsers(dest="action", required=True)
    retry = actions.add_parser(
        "retry", help="judge quarantined rows again under the current contract"
    )
    _selection_arguments(retry, rules=True)


def add_silver_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds `jsl silver rebuild` to `parser` (the `silver` subparser)."""
    actions = parser.add_subparsers(dest="action", required=True)
    rebuild = actions.add_parser(
        "rebuild", help="re-derive silver and quarantine from bronze for a range"
    )
    _selection_arguments(rebuild, rules=False)


def _load(project: Path, stream: str):
    """The stream's silver as the project declares it (loading the project's components)."""
    from dagster.components.core.component_tree import ComponentTree

    from pipelines.components.stream import LOADED

    if str(project) not in sys.path:
        sys.path.insert(0, str(project))
    LOADED.clear()
    with warnings.catch_warnings():  # Dagster's preview/beta notes are not for this command
        warnings.simplefilter("ignore")
        ComponentTree.for_project(project).build_defs()
    if stream not in LOADED:
        known = ", ".join(sorted(LOADED)) or "none"
        raise ValueError(
            f"project {project} declares no stream {stream!r} with a contract; declared: {known}"
        )
    return LOADED[stream]


def run(args: argparse.Namespace) -> int:
    """Runs the retry or the rebuild; prints what moved. Returns the exit status."""
    from pipelines.lakehouse.watermarks import WatermarkStore
    from pipelines.silver.evolution import SchemaChangeError
    from pipelines.silver.rejudge import rejudge
    from pipelines.silver.rejudge_intent import RejudgeError, Selection
    from pipelines.silver.stage import QUARANTINE, stage_name
    from pipelines.silver.writer import SilverWriterError
    from pipelines.wiring.rejudge_job import rejudge_events
    from resources.jetstream.errors import JetStreamError
    from resources.lakehouse import LakehouseResource

    prog = PROG[args.command]
    settings = settings_for(args)
    try:
        selection = Selection(
            quarantined_only=args.command == "quarantine",
            rules=tuple(getattr(args, "rule", ())),
            event_types=tuple(args.event_type),
            first_seq=args.first_seq,
            last_seq=args.last_seq,
            since=args.since,
            until=args.until,
        )
        silver = _load(project_dir(args), args.stream)
        selection.check_names(silver.contract, args.stream)
    except ValueError as error:
        print(f"{prog}: {error}", file=sys.stderr)
        return 2
    lakehouse = LakehouseResource(root=settings.lakehouse_root)
    contract, ingest = silver.contract, silver.ingest
    bronze = lakehouse.table_path(ingest.table)
    if not written(bronze):
        print(
            f"{prog}: no bronze table {ingest.table!r} at {bronze} (tables: "
            f"{settings.lakehouse_root}): nothing to judge; run the ingest first, or set "
            "LAKEHOUSE_ROOT to where the tables are",
            file=sys.stderr,
        )
        return 1
    run_id = f"{args.command}-{uuid.uuid4().hex[:12]}"
    tables = {e.name: e.table for e in contract.event_types}
    tables[QUARANTINE] = silver.quarantine
    paths = {target: lakehouse.table_path(table) for target, table in tables.items()}
    try:
        with (
            server_url(args, create_store=False) as url,
            jetstream_resource(args, url).client() as client,
            spark_session(prog, settings, table_root=settings.lakehouse_root) as spark,
        ):
            watermarks = WatermarkStore(client.create_key_value(ingest.checkpoint_bucket_spec()))
            result = rejudge(
                spark,
                watermarks,
                contract,
                stream=ingest.stream,
                bronze_path=bronze,
                table_paths={n: p for n, p in paths.items() if n != QUARANTINE},
                quarantine_path=paths[QUARANTINE],
                stage=stage_name(ingest.stream),
                run_id=run_id,
                now=dt.datetime.now(dt.timezone.utc),
                selection=selection,
                source_table=ingest.table,
                policy=silver.policy,
                quarantine_name=silver.quarantine,
            )
            try:  # the rows have moved: a failure from here on only keeps Dagster untold
                watermark = watermarks.load(stage_name(ingest.stream))
            except JetStreamError as error:
                watermark, unread = None, error
    except (SchemaChangeError, RejudgeError, SilverWriterError, JetStreamError, OSError) as error:
        print(f"{prog}: {' '.join(str(error).split())}", file=sys.stderr)
        return 1
    except ValueError as error:
        print(f"{prog}: {error}", file=sys.stderr)
        return 2
    print(summary(result, args.stream))
    if watermark is None:
        print(
            f"{prog}: Dagster not told (the stage's watermark could not be read: "
            f"{' '.join(str(unread).split())}): launch what follows silver (gold) to bring it "
            "up to date",
            file=sys.stderr,
        )
        return 0
    mode = "retry" if args.command == "quarantine" else "rebuild"
    events = rejudge_events(
        contract, tables, paths, result, watermark,
        stream=args.stream, mode=mode, mostly=silver.mostly,
    )  # fmt: skip
    if events:
        _tell_dagster(prog, settings, events)
    return 0


def _tell_dagster(prog: str, settings: Settings, events: list) -> None:
    """Reports `events` (`rejudge_events`) on the Dagster instance whose automation follows
    silver: `$DAGSTER_HOME`'s, else the data directory's if it has one. Prints what it did;
    a report that cannot be made is one line on stderr (the rows have moved all the same)."""
    from dagster import AssetMaterialization, DagsterInstance

    tables = ", ".join(
        e.asset_key.to_user_string() for e in events if isinstance(e, AssetMaterialization)
    )
    home = os.environ.get("DAGSTER_HOME")
    if not home and not (settings.dagster_home / "dagster.yaml").is_file():
        print(
            f"{prog}: Dagster not told ($DAGSTER_HOME unset, no Dagster home at "
            f"{settings.dagster_home}): what follows {tables} (gold) waits for silver's next "
            "run; launch it to bring it up to date now, or set DAGSTER_HOME next time",
            file=sys.stderr,
        )
        return
    try:
        instance = (
            DagsterInstance.get()
            if home
            else DagsterInstance.from_config(str(settings.dagster_home))
        )
        with instance:
            for event in events:
                instance.report_runless_asset_event(event)
    except Exception as error:  # a bad dagster.yaml, its storage, whatever: best effort
        print(
            f"{prog}: Dagster not told ({' '.join(str(error).split())}): what follows "
            f"{tables} (gold) waits for silver's next run; launch it to bring it up to date now",
            file=sys.stderr,
        )
        return
    print(
        f"Dagster ({home or settings.dagster_home}): {tables} reported materialised, with their "
        "checks carried over; the automation requests what follows them (gold) on its next tick"
    )


def summary(result, stream: str) -> str:
    """What a rejudge did, in a few lines: rows judged, moved per rule, where they are."""
    lines = []
    if result.resumed:
        lines.append(f"finished an interrupted rejudge first (run {result.run_id})")
    lines.append(
        f"stream {stream}: {result.judged} row(s) judged again, up to seq {result.upto} "
        "(silver's watermark)"
    )
    for rule, rows in sorted(result.moved.items()):
        lines.append(f"  {rows} row(s) that broke {rule} moved to silver")
    lines.append(f"  {result.still_failing} row(s) stay in quarantine, errors as judged now")
    for target, rows in sorted(result.added.items()):
        if rows:
            lines.append(f"  {target or 'quarantine'}: +{rows}")
    for target, rows in sorted(result.removed.items()):
        if rows:
            lines.append(f"  {target or 'quarantine'}: -{rows}")
    return "\n".join(lines)
