"""Stage watermarks in the JetStream KV checkpoint bucket: how far a stage has processed.

The silver stage records the highest bronze sequence it has processed (and, in `details`,
the batch's first sequence and each check's verdict), the downstream publisher the highest
silver sequence it has published. One key per stage,
`stage.<name>`, holding JSON:

    {"position": 1000, "run_id": "...", "at": "2026-11-21T10:00:00+00:00", "details": {...}}

A stage writes its outputs first and its watermark last, so a crash in between makes the
next run process the same rows again; the stages' writes are idempotent (keyed merges,
msg-id deduplication), so that repeat changes nothing. Every save is a compare-and-set on
the revision the stage loaded, so two runs of one stage cannot both move it.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field, replace
from typing import Any

from resources.jetstream import KeyValueBucket
from resources.jetstream.errors import RevisionConflictError


class WatermarkConflictError(Exception):
    """Another run moved the stage's watermark since this run loaded it."""

    def __init__(self, message: str, *, stage: str, bucket: str) -> None:
        super().__init__(message)
        self.stage = stage
        self.bucket = bucket


@dataclass(frozen=True)
class Watermark:
    """A stage's position: everything up to `position` is processed."""

    stage: str
    position: int = 0
    run_id: str | None = None
    at: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    revision: int | None = field(default=None, compare=False)  # the KV revision it was read at

    @property
    def key(self) -> str:
        return watermark_key(self.stage)

    def advanced(
        self, position: int, *, run_id: str, now: dt.datetime, **details: Any
    ) -> Watermark:
        """This watermark moved to `position` by `run_id` (the revision is kept for the CAS)."""
        return replace(
            self,
            position=position,
            run_id=run_id,
            at=now.astimezone(dt.timezone.utc).isoformat(),
            details=details,
        )


def watermark_key(stage: str) -> str:
    """The KV key of a stage's watermark: `stage.<name>`."""
    return f"stage.{stage}"


class WatermarkStore:
    """Loads and saves stage watermarks in a KV bucket."""

    def __init__(self, bucket: KeyValueBucket) -> None:
        self.bucket = bucket

    def load(self, stage: str) -> Watermark:
        """The stage's watermark (position 0 if it never ran)."""
        entry = self.bucket.try_get(watermark_key(stage))
        if entry is None or not entry.value:
            return Watermark(stage)
        data = json.loads(entry.value)
        return Watermark(
            stage,
            int(data.get("position", 0)),
            data.get("run_id"),
            data.get("at"),
            dict(data.get("details") or {}),
            entry.revision,
        )

    def save(self, watermark: Watermark) -> Watermark:
        """Saves `watermark` if the key is still at the revision it was loaded at.

        Raises:
            WatermarkConflictError: another run moved the watermark since it was loaded.
        """
        value = json.dumps(
            {
                "position": watermark.position,
                "run_id": watermark.run_id,
                "at": watermark.at,
                "details": watermark.details,
            },
            sort_keys=True,
        ).encode()
        try:
            revision = self.bucket.compare_and_set(
                watermark.key, value, revision=watermark.revision
            )
        except RevisionConflictError as error:
            raise WatermarkConflictError(
                f"stage {watermark.stage!r}: its watermark in bucket {self.bucket.name!r} "
                f"(key {watermark.key!r}) was moved by another run; nothing of this run's "
                "position was saved. Run the stage again: its writes are idempotent",
                stage=watermark.stage,
                bucket=self.bucket.name,
            ) from error
        return replace(watermark, revision=revision)
