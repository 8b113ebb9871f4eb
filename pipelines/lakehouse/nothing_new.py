"""A stage's finding that it has nothing new, made before any SparkSession exists.

Each stage first compares its own position with its upstream's current state, reading only
what needs no Spark: the KV bucket (checkpoints, watermarks), the stream's and consumers'
state, and the Delta logs of the tables, on the local disk or in S3
(`pipelines.lakehouse.delta_log`). When that says nothing is new, the stage reports so and
Spark is never started (a run with nothing new costs seconds, not a JVM). When it cannot tell
(a table on another object store, a log it cannot read, a statistic missing) or something is
new, the stage runs as before, with Spark, and decides there. A finding is never a guess:
whatever is "nothing new" here, the Spark path finds nothing new in too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipelines.lakehouse.delta_log import TableFiles, TableLogError, read_table_files


class CannotTell(Exception):
    """What a stage needs to decide is not readable without Spark: it runs with Spark."""


@dataclass(frozen=True)
class NothingNew:
    """What a stage compared to find that it has nothing new.

    Attributes:
        stage: what decided, e.g. "bronze/file_events".
        compared: the positions compared, by name, in the order they were compared (e.g.
            the stream's last sequence and the checkpoint's committed end).
        reason: the comparison in words.
    """

    stage: str
    compared: tuple[tuple[str, int | str | None], ...]
    reason: str

    def describe(self) -> str:
        """The finding for a run's log: `<stage>: nothing new: <reason>`."""
        return f"{self.stage}: nothing new: {self.reason}"


def table_files(path: str, columns: tuple[str, ...] = ()) -> TableFiles | None:
    """The Delta table's live files from its log (`read_table_files`); None: no table.

    Raises:
        CannotTell: the table is on a filesystem not read here (abfss://, gs://, ...), or its
            log cannot be read.
    """
    try:
        return read_table_files(path, columns)
    except TableLogError as error:
        raise CannotTell(str(error)) from error


def largest(files: TableFiles | None, column: str) -> Any:
    """The largest value of `column` the table's files hold (None: no table, or no file).

    Raises:
        CannotTell: a live file has no statistic for `column` (read with `columns` naming it).
    """
    if files is None:
        return None
    if column not in files.maxima:
        raise CannotTell(
            f"a data file of {files.path!r} (version {files.version}) has no statistic for "
            f"column {column!r}"
        )
    return files.maxima[column]
