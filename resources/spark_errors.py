"""A Spark failure in a run, said in one line: the JVM's frames go to a log file.

A failure inside Spark (a `StackOverflowError`, an executor lost, an analysis error) reaches
Python as an exception whose text carries the whole Java stack, often thousands of lines,
which Dagster would print on every launch. `one_line_spark_errors(stage)` writes that text to
`<data dir>/logs/<stage>-<time>.log` and raises `SparkStageError`, whose message is one line:
the stage, the error's first line and the log file. Other exceptions pass unchanged.

    with one_line_spark_errors("silver.file_events"):
        run_contract_silver(...)
"""

from __future__ import annotations

import datetime as dt
import re
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from py4j.protocol import Py4JError
from pyspark.errors import PySparkException

from resources.data_dir import default_data_dir

_FIRST_LINE = 300  # characters of the error's first line in the message


class SparkStageError(RuntimeError):
    """A stage failed inside Spark; `log_file` holds the whole error.

    Attributes:
        stage: the stage that failed (`silver.file_events`).
        log_file: where the error's full text is.
    """

    def __init__(self, stage: str, first_line: str, log_file: Path) -> None:
        super().__init__(
            f"{stage} failed in Spark: {first_line}; the whole error (its Java frames "
            f"included) is in {log_file}"
        )
        self.stage, self.log_file = stage, log_file


def first_line(error: BaseException) -> str:
    """The first non-empty line of an error's text, shortened."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    text = lines[0] if lines else type(error).__name__
    return text if len(text) <= _FIRST_LINE else text[: _FIRST_LINE - 3] + "..."


@contextmanager
def one_line_spark_errors(stage: str, log_dir: Path | None = None) -> Iterator[None]:
    """Turns a Spark failure inside the block into a one-line `SparkStageError`.

    Args:
        stage: the stage's name, in the message and the log file's name.
        log_dir: where the log file goes (default: `<data dir>/logs`).
    """
    try:
        yield
    except (PySparkException, Py4JError) as error:
        folder = log_dir or default_data_dir() / "logs"
        folder.mkdir(parents=True, exist_ok=True)
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
        log_file = folder / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', stage)}-{stamp}.log"
        log_file.write_text("".join(traceback.format_exception(error)))
        raise SparkStageError(stage, first_line(error), log_file) from None
