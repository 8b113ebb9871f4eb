"""Errors of the ingest engine: a root class and one subclass per cause."""

from __future__ import annotations


class IngestError(Exception):
    """Root of the ingest engine's errors; names the stream and consumer it is about."""

    def __init__(self, message: str, *, stream: str, consumer: str) -> None:
        super().__init__(message)
        self.stream = stream
        self.consumer = consumer


class LeaseHeldError(IngestError):
    """Another run or replay holds the ingest's lease (two writers of one bronze table never
    proceed together); `bucket` is the KV bucket holding the lease."""

    def __init__(
        self, message: str, *, stream: str, consumer: str, holder: str, bucket: str
    ) -> None:
        super().__init__(message, stream=stream, consumer=consumer)
        self.holder = holder
        self.bucket = bucket


class LeaseLostError(IngestError):
    """The run's lease expired and another run took it; this run stops before moving anything."""


class CheckpointConflictError(IngestError):
    """The checkpoint changed under this run (a compare-and-set on its revision failed)."""


class DataLossError(IngestError):
    """Messages of the planned range were removed by the stream's limits before being read."""

    def __init__(self, message: str, *, stream: str, consumer: str, start: int, end: int) -> None:
        super().__init__(message, stream=stream, consumer=consumer)
        self.start = start
        self.end = end


class RangeWriteError(IngestError):
    """The Spark job reading a range into the bronze table failed; nothing moved.

    The message ends with the root cause (a reader's error, a task failure, a Delta error);
    the original exception is chained as `__cause__`.
    """

    def __init__(
        self, message: str, *, stream: str, consumer: str, start: int, end: int, table: str
    ) -> None:
        super().__init__(message, stream=stream, consumer=consumer)
        self.start = start
        self.end = end
        self.table = table


def spark_failure_reason(error: BaseException) -> str:
    """The root cause of a failed Spark job, in one line where possible.

    A task's failure reaches Python wrapped in Java exceptions (`Py4JJavaError`, whose cause
    chain ends in the task's own error); a Python error raised in a task ends with the
    traceback's last line ("RequestTimeoutError: reading stream ...").
    """
    java = getattr(error, "java_exception", None)
    if java is not None:
        while java.getCause() is not None:
            java = java.getCause()
        text = str(java.getMessage() or java.toString())
    else:
        text = str(error)
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return type(error).__name__
    if lines[0].startswith("Traceback") or "Traceback (most recent call last)" in text:
        return lines[-1]  # the Python exception line of a task's traceback
    return lines[0][:1000]
