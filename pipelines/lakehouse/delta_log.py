"""A local Delta table's current schema, properties, version, live files and commits, read
from its `_delta_log`.

Why this exists: the code location compares a table's schema with what the contract declares
while Dagster loads it (`dg check defs`, the webserver, every run worker). Loading must stay
cheap and must work without a JVM, so this module reads the log with the standard library and
pyarrow only: no SparkSession, no `deltalake` package. Local paths and `file:` URIs are read
from the disk; `s3a://` (and `s3://`) tables through the S3 API, with pyarrow's
`S3FileSystem` on the endpoint S3A is given in `JSL_SPARK_CONF` (`spark.hadoop.fs.s3a.endpoint`,
AWS's own without one) and the AWS chain's credentials (`resources/object_store/s3.py`). Spark
reads the same log again when a run starts, and that is where tables on other object stores
(abfss://, gs://, ...) are compared. For the same reason each stage
decides from here whether it has anything new before it starts Spark
(`pipelines.lakehouse.nothing_new`): `read_table_files` replays the log's file actions for
the live files' row count and a column's largest value (their statistics), `read_commits`
gives the last commits' operation, `userMetadata` and whether they changed anything, and
`read_table_version` the version from the listing alone (what `delta_tables.table_version`
asks first of a local table, instead of a Spark request).

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

import contextlib
import functools
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

LOG_DIR = "_delta_log"
S3_SCHEMES = ("s3a", "s3")
SPARK_CONF_ENV = "JSL_SPARK_CONF"  # where S3A's endpoint is set: `spark.hadoop.fs.s3a.*`
SIDECARS_DIR = "_sidecars"  # a V2 checkpoint's sidecar files, under LOG_DIR

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
    """The table is on a filesystem this module does not read (abfss://, gs://, ...), so its
    log is read by Spark when a run starts."""


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
        table_id: The table's id (`metaData.id`, what `DESCRIBE DETAIL` calls `id`): a
            table recreated at the same path has another.
    """

    path: str
    version: int
    schema: dict[str, Any]
    properties: dict[str, str]
    table_id: str | None = None

    def struct_type(self) -> StructType:
        """The schema as a pyspark `StructType` (imports pyspark on first use).

        Returns:
            `StructType.fromJson(self.schema)`.
        """
        from pyspark.sql.types import StructType

        return StructType.fromJson(self.schema)


@dataclass(frozen=True)
class _StorePath:
    """A file or folder in an object store, with as much of `Path` as this module uses."""

    filesystem: Any  # a pyarrow.fs.FileSystem
    key: str  # `bucket/key`, as pyarrow names it
    uri: str  # as the table's path names it, for messages

    def __truediv__(self, name: str) -> _StorePath:
        return _StorePath(self.filesystem, f"{self.key}/{name}", f"{self.uri}/{name}")

    def __str__(self) -> str:
        return self.uri

    def read_text(self, encoding: str) -> str:
        try:
            with self.filesystem.open_input_stream(self.key) as stream:
                return stream.read().decode(encoding)
        except FileNotFoundError:
            raise
        except OSError as error:
            raise self._unreachable(error) from error

    def names(self) -> list[str]:
        """The names in this folder ([] when there is none: object stores have no folders)."""
        from pyarrow import fs

        try:
            listed = self.filesystem.get_file_info(fs.FileSelector(self.key, allow_not_found=True))
        except OSError as error:
            raise self._unreachable(error) from error
        return [info.base_name for info in listed]

    def _unreachable(self, error: OSError) -> UnreadableTableLog:
        """The store refused or failed a request: Spark, which runs next, says it again if it
        is more than a moment's."""
        return UnreadableTableLog(self.uri, f"the object store answered: {error}")


_Location = Path | _StorePath


@dataclass(frozen=True)
class _Checkpoint:
    version: int
    files: tuple[str, ...]  # file names in `_delta_log`, parts in order


def read_table_state(path: str) -> TableState | None:
    """The current schema, properties and version of the Delta table at `path`.

    Args:
        path: A local path, a `file:` URI (`file:/data/t`, `file:///data/t`) or an `s3a://`
            (`s3://`) URI.

    Returns:
        The table's state, or None when there is no Delta table at `path` (no directory,
        no `_delta_log` in it, or no commit or checkpoint in that).

    Raises:
        UnreadableTableLog: `path` is a URI of another scheme (abfss://, gs://, ...).
        CorruptTableLog: a commit or checkpoint does not parse, holds no usable `metaData`,
            or a commit between the newest checkpoint and the current version is missing.
    """
    log = _list_log(path)
    return None if log is None else _state_of(log)


def read_table_version(path: str) -> int | None:
    """The current version of the Delta table at `path`, from its log's listing alone (the
    highest commit or complete checkpoint): what `DESCRIBE HISTORY` gives, no file read.

    Returns:
        The version, or None when there is no Delta table at `path`.

    Raises:
        UnreadableTableLog: `path` is a URI of another scheme (abfss://, gs://, ...).
    """
    log = _list_log(path)
    return None if log is None else log.version


@dataclass(frozen=True)
class _Log:
    """A listing of a table's `_delta_log`: its commits, newest checkpoint and version."""

    path: str  # the table's path as given
    directory: _Location
    commits: dict[int, str]  # version -> file name
    checkpoint: _Checkpoint | None
    version: int

    @property
    def floor(self) -> int:
        """The newest checkpoint's version (-1: none), below which commits are not needed."""
        return self.checkpoint.version if self.checkpoint else -1

    def commit_file(self, version: int) -> _Location:
        """The commit file of `version`, which the current state needs."""
        if version not in self.commits:
            raise CorruptTableLog(
                self.path,
                f"commit {version} is missing from {str(self.directory)!r} and "
                + (
                    f"the newest checkpoint is {self.floor}"
                    if self.checkpoint
                    else "there is no checkpoint"
                )
                + f", so the table's state at version {self.version} cannot be rebuilt; the "
                "log was cleaned up or copied incompletely",
                file=str(self.directory / f"{version:020d}.json"),
            )
        return self.directory / self.commits[version]


def _list_log(path: str) -> _Log | None:
    """The table's log listing, or None when there is no Delta table at `path`."""
    log_dir = _location(path) / LOG_DIR
    if isinstance(log_dir, _StorePath):
        names = log_dir.names()
    else:
        try:
            names = os.listdir(log_dir)
        except (FileNotFoundError, NotADirectoryError):
            return None
    commits = {int(m[1]): name for name in names if (m := _COMMIT.fullmatch(name))}
    checkpoint = _newest_checkpoint(names)
    if not commits and checkpoint is None:
        return None
    version = max([*commits, checkpoint.version if checkpoint else -1])
    return _Log(path, log_dir, commits, checkpoint, version)


def _state_of(log: _Log) -> TableState:
    """The table's state at the listing's version: from the newest `metaData` action."""
    path, log_dir, checkpoint, floor = log.path, log.directory, log.checkpoint, log.floor
    for v in range(log.version, floor, -1):
        file = log.commit_file(v)
        metadata = _metadata_in_json_actions(path, file, what=f"commit {v}")
        if metadata is not None:
            return _state(path, log.version, metadata, file)

    if checkpoint is None:
        raise CorruptTableLog(
            path,
            f"no commit from 0 to {log.version} in {str(log_dir)!r} has a metaData action; "
            "the log is not a Delta table's",
            file=str(log_dir / log.commits[0]),
        )
    for name in checkpoint.files:
        file = log_dir / name
        if name.endswith(".json"):
            metadata = _metadata_in_json_actions(path, file, what=f"checkpoint {floor}")
        else:
            metadata = _metadata_in_parquet(path, file)
        if metadata is not None:
            return _state(path, log.version, metadata, file)
    raise CorruptTableLog(
        path,
        f"checkpoint {floor} ({', '.join(checkpoint.files)}) holds no metaData action",
        file=str(log_dir / checkpoint.files[0]),
    )


def _location(path: str) -> _Location:
    """Where the table at `path` is: a local path, or a folder in S3; other schemes raise
    `UnreadableTableLog`."""
    if not isinstance(path, str) or not path:
        raise ValueError(f"a table path must be a non-empty string, got {path!r}")
    parts = urlsplit(path)
    if not parts.scheme:
        return Path(path)
    if parts.scheme.lower() == "file" and parts.netloc in ("", "localhost"):
        return Path(url2pathname(parts.path))
    if parts.scheme.lower() in S3_SCHEMES and parts.netloc:
        key = f"{parts.netloc}/{unquote(parts.path).strip('/')}".rstrip("/")
        return _StorePath(_s3_filesystem(os.environ.get(SPARK_CONF_ENV, "")), key, path)
    raise UnreadableTableLog(
        path,
        f"{parts.scheme}:// is not a filesystem read here (a path, a file: URI, s3a:// and "
        "s3:// are), so the table's schema is compared when the run starts, by Spark",
    )


@functools.lru_cache(maxsize=4)
def _s3_filesystem(spark_conf: str) -> Any:
    """pyarrow's S3 filesystem on the endpoint S3A is given in `JSL_SPARK_CONF` (one per
    value of it)."""
    from resources.object_store.s3 import S3Endpoint, s3_filesystem

    try:
        conf = json.loads(spark_conf) if spark_conf.strip() else {}
    except json.JSONDecodeError:
        conf = {}  # SparkSettings.resolve says what is wrong with it, when a run starts
    return s3_filesystem(S3Endpoint.from_spark_conf(conf if isinstance(conf, dict) else {}))


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


def _metadata_in_json_actions(path: str, file: _Location, *, what: str) -> dict[str, Any] | None:
    """The last `metaData` action in a newline-delimited JSON actions file, if any."""
    metadata = None
    for action in _json_actions(path, file, what):
        if "metaData" in action:
            metadata = action["metaData"]
    return metadata


def _metadata_in_parquet(path: str, file: _Location) -> dict[str, Any] | None:
    """The `metaData` of a parquet checkpoint (or checkpoint part), None if it has none."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        with _opened(file) as source:
            parquet = pq.ParquetFile(source)
            if "metaData" not in parquet.schema_arrow.names:
                return None
            column = parquet.read(columns=["metaData"]).column("metaData")
    except (pa.ArrowException, OSError) as error:
        raise CorruptTableLog(
            path, f"checkpoint {str(file)!r} is not readable parquet: {error}", file=str(file)
        ) from error
    rows = column.filter(pc.is_valid(column)).to_pylist()
    return rows[-1] if rows else None


def _state(path: str, version: int, metadata: Any, file: _Location) -> TableState:
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
    table_id = metadata.get("id")
    return TableState(
        path=path,
        version=version,
        schema=schema,
        properties=properties,
        table_id=None if table_id is None else str(table_id),
    )


@dataclass(frozen=True)
class TableFiles:
    """What a Delta table's log says about the data files of its current version.

    Attributes:
        path: The table's path as given to `read_table_files`.
        version: The table's current version.
        table_id: The table's id (`metaData.id`).
        files: The live data files.
        rows: The rows in them: each file's `numRecords` statistic, less the rows its
            deletion vector removes; None when a file has no `numRecords`.
        maxima: Column -> the largest value the live files' statistics record for it (None:
            no live file, so no value); a requested column is missing when a file has no
            statistic for it. A bound, not the value: a file's maximum may be that of a row
            its deletion vector removed.
    """

    path: str
    version: int
    table_id: str | None
    files: int
    rows: int | None
    maxima: dict[str, Any]


def read_table_files(path: str, columns: tuple[str, ...] = ()) -> TableFiles | None:
    """The live data files of the Delta table at `path`, counted, from its log alone.

    The log is replayed as Delta does: the newest checkpoint's `add` actions (its parts, or
    a V2 checkpoint's sidecars), then every commit after it, each `add` making a file live
    and each `remove` ending it (a file and its deletion vector together name it).

    Args:
        path: A local path or a `file:` URI.
        columns: Top-level columns whose largest value to take from the files' statistics
            (read under their physical names when the table maps columns).

    Returns:
        The files, rows and maxima, or None when there is no Delta table at `path`.

    Raises:
        UnreadableTableLog: `path` is not on a local filesystem.
        CorruptTableLog: a file of the log does not parse, or a commit after the newest
            checkpoint is missing.
    """
    log = _list_log(path)
    if log is None:
        return None
    state = _state_of(log)
    keys = {column: _stats_name(state, column) for column in columns}
    live = _checkpoint_files(log)
    for version in range(log.floor + 1, log.version + 1):
        for action in _json_actions(log.path, log.commit_file(version), f"commit {version}"):
            if isinstance(action.get("add"), dict):
                add = action["add"]
                live[_file_key(add)] = _stats(add)
            elif isinstance(action.get("remove"), dict):
                live.pop(_file_key(action["remove"]), None)
    return _count(state, live, keys)


@dataclass(frozen=True)
class CommitSummary:
    """One commit of a Delta table, as its log file says.

    Attributes:
        version: The commit's version.
        operation: Its `commitInfo.operation` (WRITE, MERGE, OPTIMIZE, ...), None if absent.
        user_metadata: Its `commitInfo.userMetadata`, as `DESCRIBE HISTORY` shows it.
        changes: Whether it changed rows or the table's metadata: an `add` or `remove` with
            `dataChange`, a `cdc` file, or a `metaData` action. OPTIMIZE, VACUUM and the like
            change none.
    """

    version: int
    operation: str | None
    user_metadata: str | None
    changes: bool


def read_commits(path: str, newest: int) -> list[CommitSummary]:
    """The table's last `newest` commits, newest first, while their files are in the log.

    Commits older than the newest checkpoint may have been cleaned up: the list stops at the
    first missing one, so it may be shorter than `newest` (empty: no table at `path`).

    Raises:
        UnreadableTableLog: `path` is not on a local filesystem.
        CorruptTableLog: a commit file does not parse.
    """
    log = _list_log(path)
    if log is None:
        return []
    found = []
    for version in range(log.version, max(-1, log.version - newest), -1):
        if version not in log.commits:
            break
        actions = _json_actions(path, log.directory / log.commits[version], f"commit {version}")
        found.append(_summary(version, actions))
    return found


def _summary(version: int, actions: list[dict[str, Any]]) -> CommitSummary:
    """A commit's `CommitSummary` from its actions."""
    info: dict[str, Any] = {}
    changes = False
    for action in actions:
        if isinstance(action.get("commitInfo"), dict):
            info = action["commitInfo"]
        elif "cdc" in action or "metaData" in action:
            changes = True
        else:
            file = action.get("add") or action.get("remove")
            changes = changes or (isinstance(file, dict) and file.get("dataChange") is not False)
    return CommitSummary(version, info.get("operation"), info.get("userMetadata"), changes)


# A live file's statistics as `read_table_files` keeps them: numRecords, the rows its deletion
# vector removes, and maxValues.
_FileStats = tuple[int | None, int, dict[str, Any]]


def _file_key(action: dict[str, Any]) -> tuple[str, str | None]:
    """What names a data file in the log: its path and its deletion vector, if any."""
    vector = action.get("deletionVector")
    if not isinstance(vector, dict):
        return str(action.get("path")), None
    where = f"{vector.get('storageType')}:{vector.get('pathOrInlineDv')}@{vector.get('offset')}"
    return str(action.get("path")), where


def _stats(action: dict[str, Any]) -> _FileStats:
    """An `add` action's row count, deleted rows and maxima (JSON `stats` or `stats_parsed`)."""
    stats = action.get("stats")
    if isinstance(stats, str):
        try:
            stats = json.loads(stats)
        except json.JSONDecodeError:
            stats = None
    if not isinstance(stats, dict):
        stats = action.get("stats_parsed")
    stats = stats if isinstance(stats, dict) else {}
    vector = action.get("deletionVector")
    deleted = int(vector.get("cardinality") or 0) if isinstance(vector, dict) else 0
    records = stats.get("numRecords")
    maxima = stats.get("maxValues")
    return (
        None if records is None else int(records),
        deleted,
        maxima if isinstance(maxima, dict) else {},
    )


def _stats_name(state: TableState, column: str) -> str:
    """The name `column`'s statistics are kept under: its physical name under column
    mapping, else its own."""
    for field in state.schema.get("fields", ()):
        if field.get("name") == column:
            metadata = field.get("metadata") or {}
            return str(metadata.get("delta.columnMapping.physicalName") or column)
    return column


def _count(
    state: TableState, live: dict[tuple[str, str | None], _FileStats], keys: dict[str, str]
) -> TableFiles:
    """`TableFiles` of the live files' statistics."""
    counts = [
        records - deleted if records is not None else None for records, deleted, _ in live.values()
    ]
    rows = None if None in counts else sum(counts)
    maxima: dict[str, Any] = {}
    for column, key in keys.items():
        values = [maxima_of.get(key) for _, _, maxima_of in live.values()]
        if None not in values:
            maxima[column] = max(values, default=None)
    return TableFiles(state.path, state.version, state.table_id, len(live), rows, maxima)


def _json_actions(path: str, file: _Location, what: str) -> list[dict[str, Any]]:
    """The actions of a newline-delimited JSON log file (a commit, a V2 checkpoint)."""
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
    actions = []
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
        if isinstance(action, dict):
            actions.append(action)
    return actions


def _checkpoint_files(log: _Log) -> dict[tuple[str, str | None], _FileStats]:
    """The live files the newest checkpoint records (none without a checkpoint)."""
    if log.checkpoint is None:
        return {}
    live: dict[tuple[str, str | None], _FileStats] = {}
    sidecars: list[str] = []
    for name in log.checkpoint.files:
        file = log.directory / name
        if name.endswith(".json"):
            actions = _json_actions(log.path, file, f"checkpoint {log.floor}")
        else:
            actions = _parquet_actions(log.path, file, ("add", "sidecar"))
        for action in actions:
            if isinstance(action.get("add"), dict):
                live[_file_key(action["add"])] = _stats(action["add"])
            elif isinstance(action.get("sidecar"), dict):
                sidecars.append(unquote(str(action["sidecar"].get("path"))))
    for sidecar in sidecars:
        file = log.directory / SIDECARS_DIR / sidecar
        for action in _parquet_actions(log.path, file, ("add",)):
            live[_file_key(action["add"])] = _stats(action["add"])
    return live


def _parquet_actions(path: str, file: _Location, columns: tuple[str, ...]) -> list[dict[str, Any]]:
    """The actions of a parquet checkpoint (or part, or sidecar) in `columns` that are set,
    each as `{column: value}`."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        with _opened(file) as source:
            parquet = pq.ParquetFile(source)
            present = [c for c in columns if c in parquet.schema_arrow.names]
            table = parquet.read(columns=present) if present else None
    except (pa.ArrowException, OSError) as error:
        raise CorruptTableLog(
            path, f"checkpoint {str(file)!r} is not readable parquet: {error}", file=str(file)
        ) from error
    actions = []
    for column in present:
        values = table.column(column)
        actions += [{column: value} for value in values.filter(pc.is_valid(values)).to_pylist()]
    return actions


@contextlib.contextmanager
def _opened(file: _Location) -> Iterator[Any]:
    """What pyarrow's parquet reader takes for `file`: the local path, or the object opened
    through its store (closed after)."""
    if isinstance(file, Path):
        yield file
        return
    with file.filesystem.open_input_file(file.key) as source:
        yield source
