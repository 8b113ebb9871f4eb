"""`jsl contract diff`: each declared stream's contract against its live silver tables.

    jsl contract diff [--project DIR]

Loads every `JetStreamStream` component of the dg project (the one the working directory is
in, or `--project DIR`) as `dg check defs` does, and prints, per stream, each difference
between its contract and its silver and quarantine tables: the table, the column, the old and
new types, the kind of change (additive, widening, rename, breaking) and what the next run
will do about it under the stream's `on_schema_change`. Nothing is written and no Spark
starts: the tables are read from their Delta logs (`pipelines.silver.drift`), under the root
`jsl`'s first line names.

A stream none of whose silver tables is written yet under the root says so ("no silver tables
yet at <root>"), apart from one whose tables fit ("the tables fit the contract").

Exit status: 0 when the next run can go (no difference, only differences it applies, or no
table yet: the run creates them), 1 when it would refuse one (a breaking change, or any
change under `freeze`), 2 on an error.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from pipelines.cli.commands import project_dir, settings_for

PROG = "jsl contract"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the `contract` subcommands to `parser`."""
    actions = parser.add_subparsers(dest="action", required=True)
    diff = actions.add_parser(
        "diff", help="compare each stream's contract with its live silver tables"
    )
    diff.add_argument(
        "--project",
        type=Path,
        metavar="DIR",
        help="a dg project of your own (default: the one the working directory is in)",
    )


def run(args: argparse.Namespace) -> int:
    """Prints the differences; returns the exit status."""
    from dagster.components.core.component_tree import ComponentTree

    from pipelines.components import JetStreamStream
    from pipelines.silver.drift import REPORTS

    project = project_dir(args)
    if str(project) not in sys.path:
        sys.path.insert(0, str(project))
    REPORTS.clear()
    try:
        with warnings.catch_warnings():  # Dagster's preview/beta notes are not for this report
            warnings.simplefilter("ignore")
            tree = ComponentTree.for_project(project)
            tree.build_defs()
        streams = [c.stream.name for c in tree.get_all_components(JetStreamStream)]
    except Exception as error:  # a broken declaration: its message names the file and line
        print(f"{PROG}: {error}", file=sys.stderr)
        return 2
    root = settings_for(args).lakehouse_root
    refused = 0
    for stream in streams:
        report = REPORTS.get(stream)
        if report is None:
            print(f"stream {stream}: no contract")
            continue
        lines = report.lines()
        if not lines and not report.policy:  # no table compared: none written yet
            lines = [f"stream {stream}: no silver tables yet at {root}; the first run creates them"]
        print("\n".join(lines) if lines else f"stream {stream}: the tables fit the contract")
        refused += len(report.refused)
    if refused:
        print(
            f"{refused} change(s) would be refused: the next silver run stops before writing. "
            "docs/contract-changes.md says what to do for each kind."
        )
        return 1
    return 0
