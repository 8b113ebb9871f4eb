"""The project's Dagster Components (registered for `dg` through the
`dagster_dg_cli.registry_modules` entry point in pyproject.toml)."""

from pipelines.components.stream import JetStreamStream

__all__ = ["JetStreamStream"]
