"""A local Delta table's current schema, properties and version, read from its `_delta_log`.

Why this exists: the code location compares a table's schema with what the contract declares
while Dagster loads it (`dg check defs`, the webserver, every run worker). Loading must stay
cheap and must work without a JVM, so this module reads the log with the standard library and
pyarrow only: no SparkSession, no `deltalake` package. Spark reads the same log again when a
run starts, and that is where tables on object stores (s3a://, abfss://, gs://, ...) are
compared; here only local paths and `file:` URIs are read.

What it reads (the Delta protocol's log layout, as delta-spark 4.4 writes it):

- the listing of `_delta_log/`: commits `<20-digit version>.json` and complete checkpoints,
  classic (`<v>.checkpoint.parquet`), multi-part (`<v>.checkpoint.<part>.<parts>.parquet`)
  and V2 (`<v>.checkpoint.<uuid>.json|parquet`). The table's version is the highest of them.
  `_last_checkpoint` is not needed: the protocol calls it a hint that may be stale, and the
  listing, which finding the newest commit needs anyway, names every checkpoint;
- the newest `metaData` action: commits are scanned newest first down to the newest
  checkpoint (each commit is newline-delimited JSON actions), and if none of them changed the
  metadata, it comes from that checkpoint (the top-level file of a V2 checkpoint, whose
  sidecars hold only file actions; the parquet rows whose `metaData` is not null).

`TableState.schema` is the table's `schemaString` as Delta stores it, so it keeps Delta's own
field metadata (`delta.typeChanges` after a type widening, `delta.columnMapping.*` under
column mapping) that Spark's `DataFrame.schema` leaves out.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit
from urllib.request import url2pathname

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

LOG_DIR = "_delta_log"

_COMMIT = re.compile(r"(\d{20})\.json")
_CHECKPOINT = re.compile(
    r"(?P<version>\d{20})\.checkpoint"
    r"(?:\.(?P<part>\d{10})\.(?P<parts>\d{10})|\.(?P<uuid>[0-9a-fA-F-]{36}))?"
    r"\.(?P<format>parquet|json)"
)


class TableLogError(Exception):
    """Root of this module's errors: the Delta log of the table at `path` cannot be used."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"cannot read the Delta log of the table at {path!r}: {reason}")
        self.path = path
        self.reason = reason


class UnreadableTableLog(TableLogError):
    """The table is not on a local filesystem, so its log is not read at code-location load."""


class CorruptTableLog(TableLogError):
    """A log file does not parse, or a commit the current state needs is missing."""

    def __init__(self, path: str, reason: str, *, file: str) -> None:
        super().__init__(path, reason)
        self.file = file


@dataclass(frozen=True)
class TableState:
    """What a Delta table's log says at its current version.

    Attributes:
        path: The table's path as given to `read_table_state`.
        version: The table's current version (its newest commit or checkpoint).
        schema: The parsed `schemaString` of the newest `metaData` action,
            `{"type": "struct", "fields": [...]}`: the shape of `StructType.jsonValue()`,
            including Delta's own field metadata.
        properties: The table properties set on it (`metaData.configuration`); protocol
            entries that `SHOW TBLPROPERTIES` adds (`delta.feature.*`,
            `delta.minReaderVersion`) are not among them.
    """

    path: str
    version: int
    schema: dict[str, Any]
    properties: dict[str, str]

    def struct_type(self) -> StructType:
        """The schema as a pyspark `StructType` (imports pyspark on first use).

        Returns:
            `StructType.fromJson(self.schema)`.
        """
        from pyspark.sql.types import StructType

        return StructType.fromJson(self.schema)


@dataclass(frozen=True)
class _Checkpoint:
    version: int
    files: tuple[str, ...]  # file names in `_delta_log`, parts in order


def read_table_state(path: str) -> TableState | None:
    """The current schema, properties and version of the Delta table at `path`.

    Args:
        path: A local path or a `file:` URI (`file:/data/t`, `file:///data/t`).

    Returns:
        The table's state, or None when there is no Delta table at `path` (no directory,
        no `_delta_log` in it, or no commit or checkpoint in that).

    Raises:
        UnreadableTableLog: `path` is a URI of another scheme (s3a://, abfss://, ...).
        CorruptTableLog: a commit or checkpoint does not parse, holds no usable `metaData`,
            or a commit between the newest checkpoint and the current version is missing.
    """
    log_dir = _local_path(path) / LOG_DIR
    try:
        names = os.listdir(log_dir)
    except (FileNotFoundError, NotADirectoryError):
        return None
    commits = {int(m[1]): name for name in names if (m := _COMMIT.fullmatch(name))}
    checkpoint = _newest_checkpoint(names)
    if not commits and checkpoint is None:
        return None
    version = max([*commits, checkpoint.version if checkpoint else -1])
    floor = checkpoint.version if checkpoint else -1

    for v in range(version, floor, -1):
        if v not in commits:
            raise CorruptTableLog(
                path,
                f"commit {v} is missing from {str(log_dir)!r} and "
                f"{f'the newest checkpoint is {floor}' if checkpoint else 'there is no checkpoint'}"
                f", so the table's state at version {version} cannot be rebuilt; the log was "
                "cleaned up or copied incompletely",
                file=str(log_dir / f"{v:020d}.json"),
            )
        file = log_dir / commits[v]
        metadata = _metadata_in_json_actions(path, file, what=f"commit {v}")
        if metadata is not None:
            return _state(path, version, metadata, file)

    if checkpoint is None:
        raise CorruptTableLog(
            path,
            f"no commit from 0 to {version} in {str(log_dir)!r} has a metaData action; "
            "the log is not a Delta table's",
            file=str(log_dir / commits[0]),
        )
    for name in checkpoint.files:
        file = log_dir / name
        if name.endswith(".json"):
            metadata = _metadata_in_json_actions(path, file, what=f"checkpoint {floor}")
        else:
            metadata = _metadata_in_parquet(path, file)
        if metadata is not None:
            return _state(path, version, metadata, file)
    raise CorruptTableLog(
        path,
        f"checkpoint {floor} ({', '.join(checkpoint.files)}) holds no metaData action",
        file=str(log_dir / checkpoint.files[0]),
    )


def _local_path(path: str) -> Path:
    """`path` as a local filesystem path; other schemes raise `UnreadableTableLog`."""
    if not isinstance(path, str) or not path:
        raise ValueError(f"a table path must be a non-empty string, got {path!r}")
    parts = urlsplit(path)
    if not parts.scheme:
        return Path(path)
    if parts.scheme.lower() == "file" and parts.netloc in ("", "localhost"):
        return Path(url2pathname(parts.path))
    raise UnreadableTableLog(
        path,
        f"{parts.scheme}:// is not a local filesystem; the log can only be read here on a "
        "local filesystem (a path or a file: URI), so the table's schema is compared when "
        "the run starts, by Spark",
    )


def _newest_checkpoint(names: list[str]) -> _Checkpoint | None:
    """The newest complete checkpoint in a `_delta_log` listing (all parts present)."""
    single: dict[int, str] = {}
    multi: dict[tuple[int, int], dict[int, str]] = {}
    for name in names:
        match = _CHECKPOINT.fullmatch(name)
        if match is None:
            continue
        version = int(match["version"])
        if match["parts"] is not None:
            if match["format"] == "parquet":
                multi.setdefault((version, int(match["parts"])), {})[int(match["part"])] = name
        elif match["format"] == "parquet" or match["uuid"] is not None:
            # A classic file and a V2 one may share a version; either holds its state.
            single.setdefault(version, name)
    found = [_Checkpoint(v, (name,)) for v, name in single.items()]
    found += [
        _Checkpoint(v, tuple(files[i] for i in range(1, parts + 1)))
        for (v, parts), files in multi.items()
        if set(files) == set(range(1, parts + 1))
    ]
    # The newest; at one version, a single file (one read) over parts.
    return max(found, key=lambda c: (c.version, -len(c.files)), default=None)


def _metadata_in_json_actions(path: str, file: Path, *, what: str) -> dict[str, Any] | None:
    """The last `metaData` action in a newline-delimited JSON actions file, if any."""
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError as error:
        raise CorruptTableLog(
            path, f"{what} ({str(file)!r}) disappeared while it was read", file=str(file)
        ) from error
    except UnicodeDecodeError as error:
        raise CorruptTableLog(
            path, f"{what} ({str(file)!r}) is not UTF-8 text: {error}", file=str(file)
        ) from error
    metadata = None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            action = json.loads(line)
        except json.JSONDecodeError as error:
            raise CorruptTableLog(
                path,
                f"line {number} of {what} ({str(file)!r}) is not JSON ({error.msg}); Delta "
                "writes commits whole, so the file was damaged or written by something else",
                file=str(file),
            ) from error
        if isinstance(action, dict) and "metaData" in action:
            metadata = action["metaData"]
    return metadata


def _metadata_in_parquet(path: str, file: Path) -> dict[str, Any] | None:
    """The `metaData` of a parquet checkpoint (or checkpoint part), None if it has none."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(file)
        if "metaData" not in parquet.schema_arrow.names:
            return None
        column = parquet.read(columns=["metaData"]).column("metaData")
    except (pa.ArrowException, OSError) as error:
        raise CorruptTableLog(
            path, f"checkpoint {str(file)!r} is not readable parquet: {error}", file=str(file)
        ) from error
    rows = column.filter(pc.is_valid(column)).to_pylist()
    return rows[-1] if rows else None


def _state(path: str, version: int, metadata: Any, file: Path) -> TableState:
    """A `TableState` from a `metaData` action (from JSON, or a row of a parquet checkpoint)."""

    def corrupt(reason: str) -> CorruptTableLog:
        return CorruptTableLog(
            path, f"the metaData action in {str(file)!r} {reason}", file=str(file)
        )

    if not isinstance(metadata, dict) or not isinstance(metadata.get("schemaString"), str):
        raise corrupt("has no schemaString")
    try:
        schema = json.loads(metadata["schemaString"])
    except json.JSONDecodeError as error:
        raise corrupt(f"has a schemaString that is not JSON ({error.msg})") from error
    if not isinstance(schema, dict) or schema.get("type") != "struct":
        raise corrupt(f"has a schemaString that is not a struct: {metadata['schemaString']!r}")
    configuration = metadata.get("configuration") or {}
    if isinstance(configuration, list):  # a parquet map arrives as (key, value) pairs
        configuration = dict(configuration)
    if not isinstance(configuration, dict):
        raise corrupt(f"has a configuration that is not a map: {configuration!r}")
    properties = {str(key): str(value) for key, value in configuration.items()}
    return TableState(path=path, version=version, schema=schema, properties=properties)
