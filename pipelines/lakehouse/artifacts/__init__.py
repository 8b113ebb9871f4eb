"""Run artifacts in the JetStream Object Store: validation results, reports, run manifests.

A run of an asset stores its files as `runs/<run_id>/<asset>/<file>` in the bucket
`lakehouse-artifacts` (`ARTIFACTS` in `pipelines/file_trash/topology.py`), then its manifest
`runs/<run_id>/<asset>/manifest.json`, last, so a manifest exists only once all its files do.
Each object keeps its content type (object header `Content-Type`) and the hex SHA-256 of its
bytes (object metadata `sha256`); `ArtifactStore.get` checks the bytes against it, on top of
the Object Store's own digest check. `jsl artifacts list|get` fetches them back.

Import from here; the modules are `model` (names, `StoredArtifact`, `TableState`,
`RunManifest`), `store` (`ArtifactStore`) and `shell` (`fetch_command`). What an asset shows of
them in the Dagster UI is `assets/artifact_metadata.py`'s (this package imports no Dagster).
"""

from pipelines.lakehouse.artifacts.model import (
    ARTIFACTS_BUCKET,
    ARTIFACTS_DESCRIPTION,
    CONTENT_TYPE_HEADER,
    HTML_TYPE,
    JSON_TYPE,
    MANIFEST_FILE,
    MANIFEST_FORMAT,
    SHA256_KEY,
    RunManifest,
    Scalar,
    StoredArtifact,
    TableState,
    artifact_name,
    run_prefix,
)
from pipelines.lakehouse.artifacts.shell import fetch_command
from pipelines.lakehouse.artifacts.store import PROVISIONING, ArtifactStore

__all__ = [
    "ARTIFACTS_BUCKET",
    "ARTIFACTS_DESCRIPTION",
    "CONTENT_TYPE_HEADER",
    "HTML_TYPE",
    "JSON_TYPE",
    "MANIFEST_FILE",
    "MANIFEST_FORMAT",
    "PROVISIONING",
    "SHA256_KEY",
    "ArtifactStore",
    "RunManifest",
    "Scalar",
    "StoredArtifact",
    "TableState",
    "artifact_name",
    "fetch_command",
    "run_prefix",
]
