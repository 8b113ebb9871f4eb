"""Project settings that vary by environment, read once when the code location loads.

Nothing here is secret: credentials reach resources through `dagster.EnvVar` instead.

- `LAKEHOUSE_DATA_DIR` (default `<project>/.data`): local state, i.e. the embedded NATS
  store, the demo's Dagster home and, by default, the tables.
- `LAKEHOUSE_ROOT` (default `$LAKEHOUSE_DATA_DIR/lakehouse`): root of the Delta tables, a
  path or a URI.
- `NATS_URL` (default `nats://127.0.0.1:4222`): NATS server(s), comma-separated.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parents[1]
DEFAULT_NATS_URL = "nats://127.0.0.1:4222"


@dataclass(frozen=True)
class Settings:
    """Where local state lives and which NATS server to use."""

    data_dir: Path
    lakehouse_root: str
    nats_url: str

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        data_dir = Path(env.get("LAKEHOUSE_DATA_DIR") or PROJECT_DIR / ".data").resolve()
        return cls(
            data_dir=data_dir,
            lakehouse_root=env.get("LAKEHOUSE_ROOT") or str(data_dir / "lakehouse"),
            nats_url=env.get("NATS_URL") or DEFAULT_NATS_URL,
        )

    @property
    def nats_store_dir(self) -> Path:
        """JetStream store directory of the embedded nats-server."""
        return self.data_dir / "nats"

    @property
    def dagster_home(self) -> Path:
        """DAGSTER_HOME for the demo and `make dev`, so their runs show in the UI."""
        return self.data_dir / "dagster_home"
