"""`jsl tables`: each Delta table a dg project declares, with its version, rows and a sample.

    jsl tables [--project DIR] [--sample N] [--lakehouse-root ROOT]

Loads the project's code location as `dg` does (every asset that names a table in its
`lakehouse/table` metadata: the `JetStreamStream` components' bronze, silver, quarantine and
declared gold tables, and Python assets that set it), then starts Spark and prints, for each
table under the lakehouse root: its rows, Delta version and path, and its first N rows
(default 5; 0 prints none). A table no run has written yet says so. No table is written;
Spark's output goes to a log file under the data directory, whose path is printed.

Exit status: 0; 1 when no declared table is written yet under the root (checked before
Spark starts: a fresh project, or a root that is not the pipeline's), or on a failure inside
Spark; 2 on an error (a bad argument, a broken declaration, a project with no tables).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings
from pathlib import Path

from pipelines.cli.commands import spark_session, written
from pipelines.settings import Settings
from resources.backports import tomllib

PROG = "jsl tables"
DEFAULT_SAMPLE = 5


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds `jsl tables`' options to `parser`."""
    parser.add_argument(
        "--project",
        type=Path,
        metavar="DIR",
        help="the dg project whose tables to show (default: the one of the working directory)",
    )
    parser.add_argument(
        "--sample",
        type=int,
        default=DEFAULT_SAMPLE,
        metavar="N",
        help=f"rows to show of each table (default {DEFAULT_SAMPLE}; 0: none)",
    )
    parser.add_argument(
        "--lakehouse-root", help="where the tables are (default: $LAKEHOUSE_ROOT or the data dir's)"
    )


def project_tables(project: Path) -> list[str]:
    """The tables the project's code location declares (`lakehouse/table` metadata), sorted:
    its `code_location_target_module` (default `<root_module>.definitions`) from the
    `[tool.dg.project]` table of its pyproject.toml, as `dg` loads it.

    Raises:
        ValueError: `project` is not a dg project.
        Exception: whatever loading the code location raises (a broken declaration names its
            file and line).
    """
    from dagster import Definitions

    from resources.lakehouse import declared_tables

    pyproject = project / "pyproject.toml"
    config = tomllib.loads(pyproject.read_text()) if pyproject.is_file() else {}
    dg_project = config.get("tool", {}).get("dg", {}).get("project")
    if not dg_project or "root_module" not in dg_project:
        raise ValueError(
            f"{project} is not a dg project (no [tool.dg.project] root_module in "
            f"{pyproject}); run in your project's folder or pass --project DIR"
        )
    target = dg_project.get("code_location_target_module")
    if str(project) not in sys.path:
        sys.path.insert(0, str(project))  # the code location imports the project's package
    with warnings.catch_warnings():  # Dagster's preview/beta notes are not for this listing
        warnings.simplefilter("ignore")
        defs = importlib.import_module(target or f"{dg_project['root_module']}.definitions").defs
        if not isinstance(defs, Definitions):  # `@dg.definitions def defs(): ...`
            defs = defs()
    return declared_tables(defs.assets or ())


def describe(session, table: str, path: str, sample: int) -> list[str]:
    """Lines describing the Delta table at `path`: its rows and version, then `sample` rows."""
    from pyspark.sql import functions as F

    from pipelines.lakehouse.delta_tables import table_exists, table_version

    if not table_exists(session, path):
        return [f"{table}: not written yet ({path})"]
    frame = session.read.format("delta").load(path)
    lines = [
        f"{table}: {frame.count()} rows (Delta version {table_version(session, path)}, {path})"
    ]
    if sample > 0:
        # A VARIANT (or a struct holding one) is shown as its JSON text.
        readable = [F.to_json(c).alias(c) if "variant" in t else F.col(c) for c, t in frame.dtypes]
        shown = frame.limit(sample).select(*readable).toPandas()
        shown = shown.to_string(index=False, max_colwidth=40)
        lines += ["  " + line for line in shown.split("\n")]
    return lines


def run(args: argparse.Namespace, project: Path) -> int:
    """Prints each table of `project`; returns the exit status."""
    from resources.lakehouse import LakehouseResource

    if args.sample < 0:
        print(
            f"{PROG}: --sample is a number of rows, 0 or more; got {args.sample}", file=sys.stderr
        )
        return 2
    try:
        tables = project_tables(project)
    except Exception as error:  # a broken declaration: its message names the file and line
        print(f"{PROG}: {error}", file=sys.stderr)
        return 2
    if not tables:
        print(
            f"{PROG}: project {project} declares no table; declare a stream with "
            "`dg scaffold defs pipelines.components.JetStreamStream NAME --stream NAME`",
            file=sys.stderr,
        )
        return 2
    settings = Settings.from_env(start=project)
    root = args.lakehouse_root or settings.lakehouse_root
    paths = {table: LakehouseResource(root=root).table_path(table) for table in tables}
    if not any(written(path) for path in paths.values()):
        print(
            f"{PROG}: no table written yet under {root} (the project declares "
            f"{len(tables)}); run the pipeline first (`make demo`, or `dg launch --assets '*'` "
            "in your project), or point --lakehouse-root or LAKEHOUSE_ROOT at its tables",
            file=sys.stderr,
        )
        return 1
    with spark_session(PROG, settings) as session:
        for table, path in paths.items():
            print("\n".join(describe(session, table, path, args.sample)))
    return 0
