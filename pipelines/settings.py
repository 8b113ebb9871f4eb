"""Project settings that vary by environment, read once when the code location loads.

Nothing here is secret: credentials reach resources through `dagster.EnvVar` instead.

- `LAKEHOUSE_DATA_DIR` (default `<project>/.data`): local state, i.e. the embedded NATS
  store, the demo's Dagster home and, by default, the tables.
- `LAKEHOUSE_ROOT` (default `$LAKEHOUSE_DATA_DIR/lakehouse`): root of the Delta tables, a
  path or a URI.
- `NATS_URL` (default `nats://127.0.0.1:4222`): NATS server(s), comma-separated.
- `JSL_NATS_REPLICAS` (default unset): replicas of the file trash topology's stream and
  buckets (3 on a three-node JetStream cluster). Unset leaves them undeclared: created with
  the server's default (1), and an existing stream or bucket keeps what it has.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parents[1]
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
    def from_env(cls, environ: dict[str, str] | None = None) -> Settings:
        """Reads the settings from `environ` (default: the process environment).

        Raises:
            ValueError: `JSL_NATS_REPLICAS` is set but not a number from 1 to 5, or
                `JSL_AUTOMATION_INTERVAL_SECONDS` is set but not a whole number of seconds
                from 1.
        """
        env = os.environ if environ is None else environ
        data_dir = Path(env.get("LAKEHOUSE_DATA_DIR") or PROJECT_DIR / ".data").resolve()
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
