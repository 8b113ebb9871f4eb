"""Where the local state lives, without Dagster: the data directory and the line that names it.

The local state (the embedded NATS store, the demo's Dagster home, Spark's warehouse and
metastore and, by default, the tables) is kept in one data directory: `LAKEHOUSE_DATA_DIR`,
else `.data` in the root of the dg project being run, found from the working directory as
`dg` finds it (`dg_project_root`), else `.data` in the working directory. Never under the
installed package: deleting a virtualenv must not delete a lakehouse. `pipelines.settings`,
`SparkResource` and `LakehouseResource` all read it from here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

DATA_DIR_NAME = ".data"
NO_DAGSTER_HOME = "none: runs are not kept"


def dg_project_root(start: Path | str | None = None) -> Path:
    """The root of the dg project that `start` (default: the working directory) is in, as `dg`
    finds it: the nearest folder, `start` or an ancestor, holding a `dg.toml` or a
    `pyproject.toml` with a `[tool.dg]` table (dagster_shared's `discover_config_file`, what
    `dg launch` and `dg dev` use); `start` itself when there is none.

    `dg dev` runs its code servers and their runs in that root, and `dg launch` runs in the
    working directory, so a run and the `jsl` commands started in the project agree on it.
    """
    from dagster_shared.utils.config import discover_config_file

    folder = Path(start if start is not None else Path.cwd()).absolute()
    found = discover_config_file(folder)
    return found.parent if found is not None else folder


def default_data_dir(
    environ: Mapping[str, str] | None = None, start: Path | str | None = None
) -> Path:
    """`LAKEHOUSE_DATA_DIR`, else `<dg project root>/.data` (`dg_project_root(start)`), else
    `<working directory>/.data`; resolved to an absolute path.

    Args:
        environ: the environment (default: the process's).
        start: where to look for the dg project (default: the working directory).
    """
    env = os.environ if environ is None else environ
    if env.get("LAKEHOUSE_DATA_DIR"):
        return Path(env["LAKEHOUSE_DATA_DIR"]).resolve()
    return (dg_project_root(start) / DATA_DIR_NAME).resolve()


def locations_line(data_dir: Path | str, tables: str, dagster_home: Path | str | None) -> str:
    """The one line that says where a command's or a run's state goes, e.g.
    `data: /p/.data (tables: /p/.data/lakehouse, Dagster home: none: runs are not kept)`.

    Args:
        data_dir: the data directory.
        tables: the tables' root (a path or a URI).
        dagster_home: the Dagster instance's folder; None when runs are not kept.
    """
    home = str(dagster_home) if dagster_home else NO_DAGSTER_HOME
    return f"data: {data_dir} (tables: {tables}, Dagster home: {home})"
