"""Run artifacts in the JetStream Object Store: validation results, reports, run manifests.

A run of an asset stores its files as `runs/<run_id>/<asset>/<file>` in the bucket
`lakehouse-artifacts` (`ARTIFACTS` in `pipelines/file_trash/topology.py`), then its manifest
`runs/<run_id>/<asset>/manifest.json`, last, so a manifest exists only once all its files do.
Each object keeps its content type (object header `Content-Type`) and the hex SHA-256 of its
bytes (object metadata `sha256`); `ArtifactStore.get` checks the bytes against it, on top of
the Object Store's own digest check. `jsl artifacts list|get` fetches them back.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import shlex
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from dagster import MetadataValue

from resources.jetstream.buckets import validate_bucket
from resources.jetstream.errors import (
    BucketNotFoundError,
    InvalidArgumentError,
    ObjectCorruptedError,
    ObjectNotFoundError,
)
from resources.jetstream.object_transfer import parse_digest

if TYPE_CHECKING:
    from resources.jetstream import JetStreamClient, ObjectInfo, ObjectStoreBucket

ARTIFACTS_BUCKET = "lakehouse-artifacts"
ARTIFACTS_DESCRIPTION = "Validation reports and run manifests."
MANIFEST_FILE = "manifest.json"
MANIFEST_FORMAT = 1  # the "format" field of manifest.json
JSON_TYPE = "application/json"
HTML_TYPE = "text/html; charset=utf-8"
CONTENT_TYPE_HEADER = "Content-Type"
SHA256_KEY = "sha256"  # object metadata: hex SHA-256 of the bytes
PROVISIONING = (
    "it is created by provisioning (`jsl demo` / `make demo`, `jsl dev` / `make dev`, or "
    "`reconcile(js, FILE_TRASH_TOPOLOGY)`): run one of those, or fix the bucket name"
)

Scalar = str | int | float | bool


def _check_path(kind: str, value: object, *, single: bool = False) -> None:
    if not isinstance(value, str) or not value:
        raise InvalidArgumentError(f"invalid {kind} {value!r}: use a non-empty string")
    parts = value.split("/")
    if single and len(parts) > 1:
        raise InvalidArgumentError(f"invalid {kind} {value!r}: it must not contain '/'")
    for part in parts:
        if part in ("", ".", "..") or not part.isprintable():
            raise InvalidArgumentError(
                f"invalid {kind} {value!r}: each '/'-separated part must be non-empty, not "
                "'.' or '..', and free of control characters"
            )


def artifact_name(run_id: str, asset: str, file: str) -> str:
    """The object name of a run's artifact: `runs/<run_id>/<asset>/<file>`.

    Args:
        run_id: the Dagster run id (one path part).
        asset: the asset key path, e.g. "silver/file_deleted".
        file: the file name, e.g. "validation.json".

    Raises:
        InvalidArgumentError: an empty part, a '.' or '..' part, or a '/' in `run_id`.
    """
    _check_path("run id", run_id, single=True)
    _check_path("asset key path", asset)
    _check_path("artifact file name", file)
    return f"runs/{run_id}/{asset}/{file}"


def run_prefix(run_id: str) -> str:
    """The name prefix of every artifact of one run: `runs/<run_id>/`."""
    _check_path("run id", run_id, single=True)
    return f"runs/{run_id}/"


@dataclass(frozen=True)
class StoredArtifact:
    """One artifact object as stored: where it is, its size, checksum and content type."""

    bucket: str
    name: str
    size: int  # bytes
    sha256: str  # hex, computed over the bytes when they were put
    content_type: str
    description: str = ""

    @classmethod
    def from_info(cls, info: ObjectInfo) -> StoredArtifact:
        """Reads an object's meta; without our `sha256` metadata, the digest gives it."""
        sha256 = info.metadata.get(SHA256_KEY)
        if not sha256:
            raw = parse_digest(info.digest)
            sha256 = raw.hex() if raw is not None else ""
        return cls(
            bucket=info.bucket,
            name=info.name,
            size=info.size,
            sha256=sha256,
            content_type=info.headers.get(CONTENT_TYPE_HEADER) or "application/octet-stream",
            description=info.description or "",
        )

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> StoredArtifact:
        return cls(
            bucket=str(doc["bucket"]),
            name=str(doc["name"]),
            size=int(doc["size"]),
            sha256=str(doc["sha256"]),
            content_type=str(doc["content_type"]),
            description=str(doc.get("description") or ""),
        )


@dataclass(frozen=True)
class TableState:
    """A Delta table after the run: its Delta version and row counts (None if unknown)."""

    table: str
    path: str
    version: int | None
    rows: int | None
    rows_written: int | None = None

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> TableState:
        def number(key: str) -> int | None:
            value = doc.get(key)
            return None if value is None else int(value)

        return cls(
            table=str(doc["table"]),
            path=str(doc["path"]),
            version=number("version"),
            rows=number("rows"),
            rows_written=number("rows_written"),
        )


@dataclass(frozen=True)
class RunManifest:
    """What one run of one asset did: ranges read, table states, check outcomes, artifacts.

    Examples:
        >>> RunManifest(
        ...     run_id="4f1c...", asset="silver/file_deleted", created_at=now,
        ...     ranges={"bronze/file_events": (101, 250)},
        ...     tables=(TableState("silver/file_deleted", "/data/silver/file_deleted", 7, 900),),
        ...     checks={"required_fields_present": True},
        ... ).to_json()
    """

    run_id: str
    asset: str
    created_at: dt.datetime  # timezone-aware
    ranges: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> (first, last)
    tables: tuple[TableState, ...] = ()
    checks: dict[str, bool] = field(default_factory=dict)  # asset check name -> passed
    artifacts: tuple[StoredArtifact, ...] = ()
    extra: dict[str, Scalar] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.created_at, dt.datetime) or self.created_at.tzinfo is None:
            raise InvalidArgumentError(
                f"manifest of run {self.run_id!r}: created_at must be a timezone-aware datetime "
                f"(e.g. datetime.now(timezone.utc)), got {self.created_at!r}"
            )
        ranges = {}
        for key, bounds in self.ranges.items():
            first, last = bounds
            if not all(isinstance(n, int) and not isinstance(n, bool) for n in (first, last)):
                raise InvalidArgumentError(f"range {key!r} must be two ints, got {bounds!r}")
            ranges[key] = (first, last)
        for key, value in self.extra.items():
            if not isinstance(value, Scalar) or (
                isinstance(value, float) and not math.isfinite(value)
            ):
                raise InvalidArgumentError(
                    f"extra {key!r} must be a str, int, bool or finite float, got {value!r}"
                )
        object.__setattr__(self, "ranges", ranges)
        object.__setattr__(self, "tables", tuple(self.tables))
        object.__setattr__(self, "checks", {k: bool(v) for k, v in self.checks.items()})
        object.__setattr__(self, "artifacts", tuple(self.artifacts))

    def to_json(self) -> bytes:
        """The manifest as JSON: sorted keys, ISO 8601 UTC timestamp, a trailing newline."""
        doc = {
            "format": MANIFEST_FORMAT,
            "run_id": self.run_id,
            "asset": self.asset,
            "created_at": self.created_at.astimezone(dt.UTC).isoformat(),
            "ranges": {key: list(bounds) for key, bounds in self.ranges.items()},
            "tables": [asdict(table) for table in self.tables],
            "checks": self.checks,
            "artifacts": [asdict(artifact) for artifact in self.artifacts],
            "extra": self.extra,
        }
        return (json.dumps(doc, sort_keys=True, indent=2, allow_nan=False) + "\n").encode()

    @classmethod
    def from_json(cls, data: bytes | str) -> RunManifest:
        """Reads `to_json`'s output, ignoring unknown fields.

        Raises:
            InvalidArgumentError: not JSON, or not a run manifest (says which field).
        """
        try:
            doc = json.loads(data)
            return cls(
                run_id=str(doc["run_id"]),
                asset=str(doc["asset"]),
                created_at=dt.datetime.fromisoformat(doc["created_at"]),
                ranges={k: (int(v[0]), int(v[1])) for k, v in (doc.get("ranges") or {}).items()},
                tables=tuple(TableState.from_dict(t) for t in doc.get("tables") or ()),
                checks=dict(doc.get("checks") or {}),
                artifacts=tuple(StoredArtifact.from_dict(a) for a in doc.get("artifacts") or ()),
                extra=dict(doc.get("extra") or {}),
            )
        except (ValueError, TypeError, KeyError, IndexError, AttributeError) as error:
            raise InvalidArgumentError(
                f"not a run manifest: {type(error).__name__}: {error}"
            ) from error


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
        _check_path("artifact name", name)
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
        _check_path("artifact name", name)
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
