"""`jsl`: the project's command line.

- `jsl setup`: check Java, fetch the Delta Lake (and S3A) jars, build the S3 server for tests;
- `jsl demo`: the pipeline end to end on an embedded nats-server;
- `jsl dev`: the Dagster UI and daemon against an embedded nats-server;
- `jsl provision`: reconcile the topology (stream, consumers, buckets) on a server, plan first;
- `jsl generate`: publish realistic (and, on request, bad) file events;
- `jsl artifacts list|get`: the runs' validation reports and manifests in the Object Store;
- `jsl status`: streams, consumers, checkpoints, leases, watermarks, replays (and tables);
- `jsl tables`: each Delta table of the dg project, with its rows and a sample;
- `jsl contract diff`: each stream's contract against its live silver tables;
- `jsl quarantine retry`, `jsl silver rebuild`: judge processed rows again under the current
  contract, each bronze row ending in exactly one of silver or quarantine.

The Makefile calls these; they work the same when called directly from the virtualenv.

Every command but `setup` prints first, on one line, where the local state is: `data: <dir>
(tables: <root>, Dagster home: <dir>)`. The data directory is `$LAKEHOUSE_DATA_DIR`, else
`.data` in the root of the dg project the working directory (or `--project DIR`) is in, else
in the working directory; the Dagster home is `$DAGSTER_HOME` (`jsl demo` and `jsl dev`: their
own, in the data directory), or `none: runs are not kept`. It goes to stderr when stdout
carries data (`--json`, `jsl artifacts get` without `-o`).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from pipelines.cli import demo as demo_module
from pipelines.cli.commands import artifacts as artifacts_command
from pipelines.cli.commands import check_java, project_dir, settings_for
from pipelines.cli.commands import contract as contract_command
from pipelines.cli.commands import generate as generate_command
from pipelines.cli.commands import provision as provision_command
from pipelines.cli.commands import rejudge as rejudge_command
from pipelines.cli.commands import status as status_command
from pipelines.cli.commands import tables as tables_command
from pipelines.settings import Settings
from resources.spark_errors import SparkStageError

# Commands that keep their runs in the data directory's Dagster home (`DAGSTER_HOME` is theirs).
OWN_DAGSTER_HOME = ("demo", "dev")


def setup(args: argparse.Namespace) -> int:
    """Checks Java and resolves the Delta Lake jars once into the jar cache
    (`pipelines/cli/commands/setup.py`), Ivy's and Spark's output in the set-up log."""
    from pipelines.cli.commands import setup as setup_command

    print(f"[setup] Java: {check_java()}", flush=True)
    if args.log is None:
        try:
            args.log = settings_for(args).data_dir / "logs" / "setup.log"
        except ValueError as error:
            print(f"jsl setup: error: {error}", file=sys.stderr)
            return 1
    return setup_command.run(args.log)


def locations(args: argparse.Namespace) -> tuple[Settings, str]:
    """The command's settings and the first line of its output: where its data, tables and
    Dagster home are.

    Raises:
        ValueError: a setting of `pipelines.settings` is invalid.
    """
    settings = settings_for(args)
    if args.command in OWN_DAGSTER_HOME:
        return settings, settings.locations(settings.dagster_home)
    return settings, settings.locations(os.environ.get("DAGSTER_HOME") or None)


def stdout_is_data(args: argparse.Namespace) -> bool:
    """Whether the command's stdout is for a program (JSON, an artifact's bytes)."""
    if getattr(args, "json", False):
        return True
    return args.command == "artifacts" and getattr(args, "output", "") in (None, "-")


@contextlib.contextmanager
def data_dir_pinned(data_dir: Path) -> Iterator[None]:
    """`LAKEHOUSE_DATA_DIR` set to `data_dir` while a command runs, if it is unset: whatever
    the command loads or starts (a project's components, Spark, `dagster` processes) then
    uses the data directory its first line named, not one found again from elsewhere."""
    if os.environ.get("LAKEHOUSE_DATA_DIR"):
        yield
        return
    os.environ["LAKEHOUSE_DATA_DIR"] = str(data_dir)
    try:
        yield
    finally:
        os.environ.pop("LAKEHOUSE_DATA_DIR", None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="jsl", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    setup_parser = commands.add_parser(
        "setup", help="check Java, fetch the Delta Lake jars, build the S3 server (with Go)"
    )
    setup_parser.add_argument(
        "--log",
        type=Path,
        help="where Ivy's and Spark's output goes (appended; default <data dir>/logs/setup.log)",
    )
    demo = commands.add_parser("demo", help="run the pipeline end to end on an embedded server")
    demo.add_argument("--events", type=int, default=1000, help="sample events to publish")
    demo.add_argument(
        "--bad-share",
        type=float,
        default=demo_module.DEFAULT_BAD_SHARE,
        help="share of deliberately bad events (quarantined by silver)",
    )
    demo.add_argument(
        "--s3",
        action="store_true",
        help="keep the tables in an embedded S3 server (SeaweedFS, built by `make setup`)",
    )
    demo.add_argument(
        "--verbose",
        action="store_true",
        help="show Dagster's, Spark's and Ivy's output live (it always goes to the log file)",
    )
    commands.add_parser(
        "dev",
        help="open the Dagster UI against an embedded server (other options go to `dagster dev`)",
    )
    provision = commands.add_parser(
        "provision",
        help="create or update the stream, consumers and buckets on a server (plan first)",
    )
    provision_command.add_arguments(provision)
    generate = commands.add_parser(
        "generate", help="publish good and bad sample file events to FILE_EVENTS"
    )
    generate_command.add_arguments(generate)
    artifacts = commands.add_parser(
        "artifacts", help="list or fetch run artifacts (reports, manifests) from the Object Store"
    )
    artifacts_command.add_arguments(artifacts)
    status = commands.add_parser(
        "status", help="one screen of the pipeline's state (streams, consumers, stages, replays)"
    )
    status_command.add_arguments(status)
    tables = commands.add_parser(
        "tables", help="each Delta table of the dg project: rows, version and a sample (Spark)"
    )
    tables_command.add_arguments(tables)
    contract = commands.add_parser(
        "contract", help="compare each stream's contract with its live silver tables"
    )
    contract_command.add_arguments(contract)
    quarantine = commands.add_parser(
        "quarantine", help="judge quarantined rows again under the current contract"
    )
    rejudge_command.add_quarantine_arguments(quarantine)
    silver = commands.add_parser(
        "silver", help="re-derive silver and quarantine from bronze for a range"
    )
    rejudge_command.add_silver_arguments(silver)
    # `jsl dev` passes what it does not know to `dagster dev` (e.g. `jsl dev -p 3001`).
    args, unknown = parser.parse_known_args(argv)
    if unknown and args.command != "dev":
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")

    if args.command == "setup":
        return setup(args)
    try:
        settings, line = locations(args)
    except ValueError as error:
        print(f"jsl {args.command}: error: {error}", file=sys.stderr)
        return 1
    print(line, file=sys.stderr if stdout_is_data(args) else sys.stdout, flush=True)
    with data_dir_pinned(settings.data_dir):
        try:
            return run_command(args, unknown)
        except SparkStageError as error:  # one line; Spark's own in the file it names
            print(error, file=sys.stderr)
            return 1


def run_command(args: argparse.Namespace, unknown: list[str]) -> int:
    """Runs the parsed command (any but `setup`); returns its exit status."""
    if args.command == "provision":
        return provision_command.run(args)
    if args.command == "generate":
        return generate_command.run(args)
    if args.command == "artifacts":
        return artifacts_command.run(args)
    if args.command == "status":
        return status_command.run(args)
    if args.command == "tables":
        return tables_command.run(args, project_dir(args))
    if args.command == "contract":
        return contract_command.run(args)
    if args.command in ("quarantine", "silver"):
        return rejudge_command.run(args)
    if args.command == "demo":
        if args.events < 1 or not 0 <= args.bad_share <= 1:
            print(
                f"jsl demo: error: --events is 1 or more and --bad-share from 0 to 1; got "
                f"{args.events} and {args.bad_share}",
                file=sys.stderr,
            )
            return 2
        check_java()
        return demo_module.run_demo(
            args.events, bad_share=args.bad_share, verbose=args.verbose, s3=args.s3
        )
    check_java()
    return demo_module.run_dev(extra_args=[a for a in unknown if a != "--"])
