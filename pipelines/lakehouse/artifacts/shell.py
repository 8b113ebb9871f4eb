"""The shell command that fetches a stored artifact back: `jsl artifacts get NAME -o FILE`.

Materialisations print it in their metadata so whoever reads a run in the Dagster UI can
copy it into a terminal.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from pipelines.lakehouse.artifacts.model import ARTIFACTS_BUCKET

if TYPE_CHECKING:
    from pipelines.lakehouse.artifacts.model import StoredArtifact


def fetch_command(artifact: StoredArtifact, output: str | None = None) -> str:
    """The shell command that fetches `artifact` into `output` (default: its file name).

    Args:
        artifact: the stored artifact.
        output: the local file to write ('/' becomes '_'); default the name's last part.

    Returns:
        A `jsl artifacts get NAME -o FILE` command line, quoted for a POSIX shell.
    """
    command = ["jsl", "artifacts", "get", artifact.name]
    if artifact.bucket != ARTIFACTS_BUCKET:
        command += ["--bucket", artifact.bucket]
    command += ["-o", (output or artifact.name.rsplit("/", 1)[-1]).replace("/", "_")]
    return shlex.join(command)
