"""Dagster asset metadata for stored artifacts: where each one is, its size, how to fetch it.

An asset that stored artifacts passes `artifact_metadata(stored)` to
`context.add_output_metadata` (or `MaterializeResult(metadata=...)`), and the Dagster UI
shows the entries on the materialisation.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from dagster import MetadataValue

from pipelines.lakehouse.artifacts.shell import fetch_command

if TYPE_CHECKING:
    from pipelines.lakehouse.artifacts.model import StoredArtifact


def artifact_metadata(artifacts: Iterable[StoredArtifact]) -> dict[str, MetadataValue]:
    """Asset metadata naming stored artifacts, their sizes, and the commands to fetch them.

    Each artifact gives `artifact/<file>` ("<bucket>/<name>") and `artifact/<file>/bytes`
    (`<file>` is the name's last part, or the whole name if two would clash); a text
    `artifacts_fetch` holds one `jsl artifacts get` command per line.
    """
    artifacts = tuple(artifacts)
    labels = [artifact.name.rsplit("/", 1)[-1] for artifact in artifacts]
    if len(set(labels)) < len(labels):
        labels = [artifact.name for artifact in artifacts]
    metadata: dict[str, MetadataValue] = {}
    for label, artifact in zip(labels, artifacts, strict=True):
        metadata[f"artifact/{label}"] = MetadataValue.text(f"{artifact.bucket}/{artifact.name}")
        metadata[f"artifact/{label}/bytes"] = MetadataValue.int(artifact.size)
    if artifacts:
        commands = (fetch_command(a, label) for label, a in zip(labels, artifacts, strict=True))
        metadata["artifacts_fetch"] = MetadataValue.text("\n".join(commands))
    return metadata
