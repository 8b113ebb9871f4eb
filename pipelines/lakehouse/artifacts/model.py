"""The run manifest model: where a run's artifacts are named, and what a manifest records.

Pure values, no I/O: `artifact_name` and `run_prefix` build the object names
(`runs/<run_id>/<asset>/<file>`), `StoredArtifact` describes one stored object, `TableState`
one Delta table after the run, and `RunManifest` the `manifest.json` a run stores last. The
constants name the bucket, the manifest file and the content types the other modules use.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from resources.jetstream.errors import InvalidArgumentError
from resources.jetstream.objects.transfer import parse_digest

if TYPE_CHECKING:
    from resources.jetstream import ObjectInfo

ARTIFACTS_BUCKET = "lakehouse-artifacts"
ARTIFACTS_DESCRIPTION = "Validation reports and run manifests."
MANIFEST_FILE = "manifest.json"
MANIFEST_FORMAT = 1  # the "format" field of manifest.json
JSON_TYPE = "application/json"
HTML_TYPE = "text/html; charset=utf-8"
CONTENT_TYPE_HEADER = "Content-Type"
SHA256_KEY = "sha256"  # object metadata: hex SHA-256 of the bytes

Scalar = str | int | float | bool


def check_path(kind: str, value: object, *, single: bool = False) -> None:
    """Checks an object name, or with `single` one part of it (no '/'), before any I/O.

    Raises:
        InvalidArgumentError: not a non-empty string, an empty, '.' or '..' part, a control
            character, or (with `single`) a '/'.
    """
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
    check_path("run id", run_id, single=True)
    check_path("asset key path", asset)
    check_path("artifact file name", file)
    return f"runs/{run_id}/{asset}/{file}"


def run_prefix(run_id: str) -> str:
    """The name prefix of every artifact of one run: `runs/<run_id>/`."""
    check_path("run id", run_id, single=True)
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
            "created_at": self.created_at.astimezone(dt.timezone.utc).isoformat(),
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
