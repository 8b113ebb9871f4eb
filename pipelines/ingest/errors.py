"""Errors of the ingest engine: a root class and one subclass per cause."""

from __future__ import annotations


class IngestError(Exception):
    """Root of the ingest engine's errors; names the stream and consumer it is about."""

    def __init__(self, message: str, *, stream: str, consumer: str) -> None:
        super().__init__(message)
        self.stream = stream
        self.consumer = consumer


class LeaseHeldError(IngestError):
    """Another run holds the ingest's lease (two runs of one ingest never proceed together)."""

    def __init__(self, message: str, *, stream: str, consumer: str, holder: str) -> None:
        super().__init__(message, stream=stream, consumer=consumer)
        self.holder = holder


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
