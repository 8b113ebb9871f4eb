"""`ArtifactStore`: puts and gets run artifacts in a JetStream Object Store bucket.

Every object goes in with its content type and the hex SHA-256 of its bytes, and `get`
checks the bytes against that SHA-256 on the way out. `put_run` stores a run's files, then
its `manifest.json` last. A missing bucket or object comes back as the JetStream error, with
a message that says how to create the bucket or list what is there.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING

from pipelines.lakehouse.artifacts.model import (
    ARTIFACTS_BUCKET,
    CONTENT_TYPE_HEADER,
    JSON_TYPE,
    MANIFEST_FILE,
    SHA256_KEY,
    RunManifest,
    StoredArtifact,
    artifact_name,
    check_path,
)
from resources.jetstream.core.validation import validate_bucket
from resources.jetstream.errors import (
    BucketNotFoundError,
    InvalidArgumentError,
    ObjectCorruptedError,
    ObjectNotFoundError,
)

if TYPE_CHECKING:
    from resources.jetstream import JetStreamClient, ObjectStoreBucket

PROVISIONING = (
    "it is created by provisioning (`jsl demo` / `make demo`, `jsl dev` / `make dev`, or "
    "`reconcile(js, FILE_TRASH_TOPOLOGY)`): run one of those, or fix the bucket name"
)


def _check_content_type(name: str, content_type: object) -> None:
    if not isinstance(content_type, str) or not content_type.strip() or "\n" in content_type:
        raise InvalidArgumentError(
            f"artifact {name!r}: content_type must be a one-line MIME type such as "
            f"'application/json', got {content_type!r}"
        )


class ArtifactStore:
    """Run artifacts in one Object Store bucket, each checked against its stored SHA-256.

    The bucket is bound on first use, so constructing a store does no I/O.

    Examples:
        >>> store = ArtifactStore(jetstream.get_client())
        >>> stored = store.put_run(run_id=context.run_id, asset="silver/file_deleted",
        ...     files={"validation.json": (result_json, JSON_TYPE)}, manifest=manifest)
        >>> context.add_output_metadata(artifact_metadata(stored))
        >>> store.get_manifest(context.run_id, "silver/file_deleted").checks
    """

    def __init__(self, client: JetStreamClient, bucket: str = ARTIFACTS_BUCKET) -> None:
        self.bucket = validate_bucket(bucket)
        self._client = client
        self._objects: ObjectStoreBucket | None = None

    def put(
        self, name: str, data: bytes, *, content_type: str, description: str = ""
    ) -> StoredArtifact:
        """Stores `data` as object `name` with its content type and SHA-256, replacing any.

        Raises:
            InvalidArgumentError: a bad name, content type or data (before any I/O).
            BucketNotFoundError: the bucket does not exist.
        """
        check_path("artifact name", name)
        _check_content_type(name, content_type)
        if not isinstance(data, bytes | bytearray | memoryview):
            raise InvalidArgumentError(f"artifact {name!r}: data must be bytes, got {type(data)!r}")
        data = bytes(data)
        with self._translated(f"put artifact {name!r}", name):
            info = self._bucket().put_bytes(
                name,
                data,
                description=description or None,
                headers={CONTENT_TYPE_HEADER: content_type},
                metadata={SHA256_KEY: hashlib.sha256(data).hexdigest()},
            )
        return StoredArtifact.from_info(info)

    def get(self, name: str) -> bytes:
        """Reads artifact `name`, checked against the SHA-256 it was put with.

        Objects put by other clients (no `sha256` metadata) are checked against the Object
        Store's digest only.

        Raises:
            ObjectNotFoundError: no such artifact (or it was deleted).
            ObjectCorruptedError: the bytes do not match the stored checksum.
            BucketNotFoundError: the bucket does not exist.
        """
        check_path("artifact name", name)
        buffer = bytearray()
        with self._translated(f"get artifact {name!r}", name):
            info = self._bucket().get_stream(name, buffer)
        expected = (info.metadata.get(SHA256_KEY) or "").lower()
        actual = hashlib.sha256(buffer).hexdigest()
        if expected and expected != actual:
            raise ObjectCorruptedError(
                f"artifact {name!r} in object store {self.bucket!r} does not match the sha256 "
                f"it was stored with (stored {expected[:12]}…, read {actual[:12]}…): it was "
                "overwritten without its checksum; put it again from its source (re-run the "
                "asset's materialisation)",
                bucket=self.bucket,
                key=name,
            )
        return bytes(buffer)

    def list(self, prefix: str = "") -> list[StoredArtifact]:
        """The artifacts whose names start with `prefix`, sorted by name (no deleted, no links).

        Raises:
            BucketNotFoundError: the bucket does not exist.
        """
        with self._translated(f"list the artifacts in object store {self.bucket!r}"):
            infos = self._bucket().list()
        found = (i for i in infos if i.name.startswith(prefix) and i.link is None)
        return sorted((StoredArtifact.from_info(i) for i in found), key=lambda a: a.name)

    def put_run(
        self,
        *,
        run_id: str,
        asset: str,
        files: Mapping[str, tuple[bytes, str]],
        manifest: RunManifest,
    ) -> tuple[StoredArtifact, ...]:
        """Stores a run's files, then its manifest listing them (so a manifest means all are in).

        Args:
            run_id: the run; must be the manifest's.
            asset: the asset key path; must be the manifest's.
            files: file name -> (bytes, content type), stored in this order.
            manifest: the run's manifest; the stored files are added to its `artifacts`
                (replacing entries of the same name).

        Returns:
            The stored files in order, then the manifest (`manifest.json`).

        Raises:
            InvalidArgumentError: a bad name or content type, a file named `manifest.json`,
                or a manifest of another run or asset (all before any I/O).
            BucketNotFoundError: the bucket does not exist.
        """
        if (manifest.run_id, manifest.asset) != (run_id, asset):
            raise InvalidArgumentError(
                f"manifest is for run {manifest.run_id!r} asset {manifest.asset!r}, not run "
                f"{run_id!r} asset {asset!r}; build the manifest for this run"
            )
        if MANIFEST_FILE in files:
            raise InvalidArgumentError(
                f"run {run_id!r} asset {asset!r}: {MANIFEST_FILE!r} is written by put_run from "
                "the manifest; rename that file"
            )
        names = {file: artifact_name(run_id, asset, file) for file in files}
        for file, (_, content_type) in files.items():
            _check_content_type(names[file], content_type)
        stored = tuple(
            self.put(names[file], data, content_type=content_type, description=f"{file} of {asset}")
            for file, (data, content_type) in files.items()
        )
        replaced = {artifact.name for artifact in stored}
        kept = tuple(a for a in manifest.artifacts if a.name not in replaced)
        final = replace(manifest, artifacts=kept + stored)
        manifest_artifact = self.put(
            artifact_name(run_id, asset, MANIFEST_FILE),
            final.to_json(),
            content_type=JSON_TYPE,
            description=f"run manifest of {asset}",
        )
        return (*stored, manifest_artifact)

    def get_manifest(self, run_id: str, asset: str) -> RunManifest:
        """Reads the manifest of one run of one asset.

        Raises:
            ObjectNotFoundError: that run stored no manifest for that asset.
            ObjectCorruptedError: the object is not a run manifest.
        """
        name = artifact_name(run_id, asset, MANIFEST_FILE)
        try:
            return RunManifest.from_json(self.get(name))
        except InvalidArgumentError as error:
            raise ObjectCorruptedError(
                f"artifact {name!r} in object store {self.bucket!r} is not a run manifest "
                f"({error}); re-run the asset's materialisation to write it again",
                bucket=self.bucket,
                key=name,
            ) from error

    def _bucket(self) -> ObjectStoreBucket:
        if self._objects is None:
            self._objects = self._client.object_store(self.bucket)
        return self._objects

    @contextmanager
    def _translated(self, what: str, name: str | None = None) -> Iterator[None]:
        """Re-raises a missing bucket or object with what to do about it in this project."""
        try:
            yield
        except BucketNotFoundError as error:
            raise BucketNotFoundError(
                f"cannot {what}: object store {self.bucket!r} (run artifacts) does not exist; "
                f"{PROVISIONING}",
                bucket=self.bucket,
                key=name,
            ) from error
        except ObjectNotFoundError as error:
            raise ObjectNotFoundError(
                f"cannot {what}: object store {self.bucket!r} has no artifact {name!r}; see "
                "what is there with `jsl artifacts list` (or `--run RUN_ID`)",
                bucket=self.bucket,
                key=name,
            ) from error
