"""Project settings that vary by environment, read once when the code location loads.

Nothing here is secret: credentials reach resources through `dagster.EnvVar` instead.

- `LAKEHOUSE_DATA_DIR` (default `<dg project root>/.data`): local state, i.e. the embedded
  NATS store, the demo's Dagster home, Spark's warehouse and metastore and, by default, the
  tables. The dg project root is the nearest folder, from the working directory up, with a
  `pyproject.toml` that has a `[tool.dg]` table (or a `dg.toml`): the project `dg launch` and
  `dg dev` load, whose folder `dg dev` runs its code servers and runs in. With none, the
  working directory. Never a folder of the installed package, so that deleting a virtualenv
  deletes no tables (`resources.data_dir.default_data_dir`).
- `LAKEHOUSE_ROOT` (default `$LAKEHOUSE_DATA_DIR/lakehouse`): root of the Delta tables, a
  path or a URI.
- `NATS_URL` (default `nats://127.0.0.1:4222`): NATS server(s), comma-separated.
- `JSL_NATS_REPLICAS` (default unset): replicas of the file trash topology's stream and
  buckets (3 on a three-node JetStream cluster). Unset leaves them undeclared: created with
  the server's default (1), and an existing stream or bucket keeps what it has.
- `JSL_AUTOMATION_INTERVAL_SECONDS` (default 5): the automation sensor's minimum interval.

`jsl` prints where the data, the tables and the Dagster home are as the first line of every
command that touches them (`Settings.locations`), and each run logs the same line when its
`LakehouseResource` is set up.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from resources.data_dir import default_data_dir, locations_line

# The folder the project's packages are imported from: this repository's checkout, or the
# virtualenv's site-packages when the package is installed. Only for what ships with the code
# (contracts, `pipelines/defs`) and, in a checkout, the repository's files; never for state.
SOURCE_DIR = Path(__file__).resolve().parents[1]
# Its former name, still read by tests and tools that find the repository's files with it.
PROJECT_DIR = SOURCE_DIR

DEFAULT_NATS_URL = "nats://127.0.0.1:4222"
DEFAULT_AUTOMATION_INTERVAL = 5


@dataclass(frozen=True)
class Settings:
    """Where local state lives and which NATS server to use."""

    data_dir: Path
    lakehouse_root: str
    nats_url: str
    nats_replicas: int | None = None
    automation_interval_seconds: int = DEFAULT_AUTOMATION_INTERVAL

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, *, start: Path | str | None = None
    ) -> Settings:
        """Reads the settings from `environ` (default: the process environment).

        Args:
            environ: the environment (default: the process's).
            start: where to look for the dg project whose `.data` is the default data
                directory (default: the working directory); `jsl`'s `--project DIR`.

        Raises:
            ValueError: `JSL_NATS_REPLICAS` is set but not a number from 1 to 5, or
                `JSL_AUTOMATION_INTERVAL_SECONDS` is set but not a whole number of seconds
                from 1.
        """
        env = os.environ if environ is None else environ
        data_dir = default_data_dir(env, start)
        return cls(
            data_dir=data_dir,
            lakehouse_root=env.get("LAKEHOUSE_ROOT") or str(data_dir / "lakehouse"),
            nats_url=env.get("NATS_URL") or DEFAULT_NATS_URL,
            nats_replicas=_replicas(env.get("JSL_NATS_REPLICAS")),
            automation_interval_seconds=_interval(env.get("JSL_AUTOMATION_INTERVAL_SECONDS")),
        )

    @property
    def nats_store_dir(self) -> Path:
        """JetStream store directory of the embedded nats-server."""
        return self.data_dir / "nats"

    @property
    def dagster_home(self) -> Path:
        """DAGSTER_HOME for the demo and `make dev`, so their runs show in the UI."""
        return self.data_dir / "dagster_home"

    def locations(self, dagster_home: Path | str | None) -> str:
        """The line `jsl` prints first: `data: <data_dir> (tables: <root>, Dagster home: ...)`.

        Args:
            dagster_home: the Dagster home the command's runs use; None when runs are not
                kept (`none: runs are not kept`).
        """
        return locations_line(self.data_dir, self.lakehouse_root, dagster_home)


def _replicas(value: str | None) -> int | None:
    if not value or not value.strip():
        return None
    if not value.strip().isdigit() or not 1 <= int(value) <= 5:
        raise ValueError(
            f"JSL_NATS_REPLICAS must be a number from 1 to 5 (3 on a three-node JetStream "
            f"cluster), or unset for the server's default; got {value!r}"
        )
    return int(value)


def _interval(value: str | None) -> int:
    if not value or not value.strip():
        return DEFAULT_AUTOMATION_INTERVAL
    if not value.strip().isdigit() or int(value) < 1:
        raise ValueError(
            "JSL_AUTOMATION_INTERVAL_SECONDS must be a whole number of seconds from 1 (the "
            f"daemon evaluates at most every 5), or unset for {DEFAULT_AUTOMATION_INTERVAL}; "
            f"got {value!r}"
        )
    return int(value)
