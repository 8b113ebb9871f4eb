"""Checkpoints in a JetStream Key-Value bucket: the committed position and the planned range.

One key per ingest, `ingest.<stream>.<consumer>`, holding JSON:

    {"version": 1, "stream": "FILE_EVENTS", "consumer": "lakehouse-bronze",
     "committed": {"end": 1000, "delta_version": 3, "run_id": "...", "at": "..."},
     "planned": {"start": 1001, "end": 2000, "run_id": "...", "at": "..."} | null,
     "gaps": [{"start": 1001, "end": 1010, "run_id": "...", "at": "..."}]}

Every write is a compare-and-set on the key's revision, so a run whose view is stale fails
instead of overwriting another run's progress.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field, replace
from typing import Any

from pipelines.ingest.errors import CheckpointConflictError
from resources.jetstream import KeyValueBucket
from resources.jetstream.errors import RevisionConflictError

FORMAT_VERSION = 1


@dataclass(frozen=True)
class SeqRange:
    """An inclusive range of stream sequences, with who made it and when."""

    start: int
    end: int
    run_id: str
    at: str

    @property
    def size(self) -> int:
        return self.end - self.start + 1

    @classmethod
    def new(cls, start: int, end: int, run_id: str, now: dt.datetime) -> SeqRange:
        return cls(start, end, run_id, now.astimezone(dt.timezone.utc).isoformat())


@dataclass(frozen=True)
class Checkpoint:
    """Where an ingest stands: everything up to `committed_end` is in Delta and acknowledged."""

    stream: str
    consumer: str
    committed_end: int = 0
    committed_version: int | None = None
    committed_run_id: str | None = None
    committed_at: str | None = None
    recovered_by: str | None = None  # the run that committed a range another run planned
    planned: SeqRange | None = None
    gaps: tuple[SeqRange, ...] = ()
    revision: int | None = field(default=None, compare=False)  # the KV revision it was read at

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "version": FORMAT_VERSION,
                "stream": self.stream,
                "consumer": self.consumer,
                "committed": {
                    "end": self.committed_end,
                    "delta_version": self.committed_version,
                    "run_id": self.committed_run_id,
                    "at": self.committed_at,
                    "recovered_by": self.recovered_by,
                },
                "planned": _range_json(self.planned),
                "gaps": [_range_json(g) for g in self.gaps],
            },
            separators=(",", ":"),
        ).encode()

    @classmethod
    def from_json(cls, data: bytes, revision: int) -> Checkpoint:
        doc = json.loads(data)
        committed = doc.get("committed") or {}
        return cls(
            stream=doc["stream"],
            consumer=doc["consumer"],
            committed_end=int(committed.get("end") or 0),
            committed_version=committed.get("delta_version"),
            committed_run_id=committed.get("run_id"),
            committed_at=committed.get("at"),
            recovered_by=committed.get("recovered_by"),
            planned=_range(doc.get("planned")),
            gaps=tuple(_range(g) for g in doc.get("gaps") or ()),
            revision=revision,
        )

    def with_plan(self, planned: SeqRange) -> Checkpoint:
        return replace(self, planned=planned)

    def with_commit(
        self,
        planned: SeqRange,
        delta_version: int | None,
        gap: SeqRange | None,
        *,
        now: dt.datetime,
        by: str | None = None,
    ) -> Checkpoint:
        """The checkpoint after `planned` is committed at `now` (recording `gap`, if any) by
        run `by`: when that is not the run that planned it, the commit finished a range a
        stopped run left, and `recovered_by` says so."""
        return replace(
            self,
            committed_end=planned.end,
            committed_version=delta_version,
            committed_run_id=planned.run_id,
            committed_at=now.astimezone(dt.timezone.utc).isoformat(),
            recovered_by=by if by and by != planned.run_id else None,
            planned=None,
            gaps=self.gaps + ((gap,) if gap else ()),
        )


def _range_json(value: SeqRange | None) -> dict[str, Any] | None:
    if value is None:
        return None
    return {"start": value.start, "end": value.end, "run_id": value.run_id, "at": value.at}


def _range(doc: dict[str, Any] | None) -> SeqRange | None:
    if not doc:
        return None
    return SeqRange(int(doc["start"]), int(doc["end"]), doc.get("run_id", ""), doc.get("at", ""))


def checkpoint_key(stream: str, consumer: str) -> str:
    return f"ingest.{stream}.{consumer}"


class CheckpointStore:
    """Reads and compare-and-sets ingest checkpoints in a KV bucket."""

    def __init__(self, bucket: KeyValueBucket) -> None:
        self.bucket = bucket

    def load(self, stream: str, consumer: str) -> Checkpoint | None:
        """The checkpoint of an ingest, or None if it never ran."""
        entry = self.bucket.try_get(checkpoint_key(stream, consumer))
        if entry is None:
            return None
        return Checkpoint.from_json(entry.value, entry.revision)

    def save(self, checkpoint: Checkpoint) -> Checkpoint:
        """Writes the checkpoint if its key is still at `checkpoint.revision` (None: new key).

        Raises:
            CheckpointConflictError: the key moved since it was read.
        """
        key = checkpoint_key(checkpoint.stream, checkpoint.consumer)
        try:
            revision = self.bucket.compare_and_set(
                key, checkpoint.to_json(), revision=checkpoint.revision
            )
        except RevisionConflictError as error:
            raise CheckpointConflictError(
                f"checkpoint {key!r} in bucket {self.bucket.name!r} changed while this run "
                f"worked (expected revision {checkpoint.revision}); another run of the same "
                "ingest moved it. Nothing was lost: run again to continue from its position",
                stream=checkpoint.stream,
                consumer=checkpoint.consumer,
            ) from error
        return replace(checkpoint, revision=revision)
