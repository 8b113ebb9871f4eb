"""The stream sensor's cursor: a small typed JSON document, decoded tolerantly.

    {"v": 1, "last_end": 2000, "requested_at": "2026-11-21T12:00:00+00:00",
     "pending_since": null}

- `last_end`: the end of the last range the sensor requested a run for;
- `requested_at`: when it did (the `max_wait` clock starts there);
- `pending_since`: when it first saw messages it did not request yet because they were fewer
  than `min_messages` (the `max_wait` clock of an ingest that never had a requested run).

A cursor that does not decode (garbage, another format, a newer version) is replaced by a
fresh one and a warning: the sensor then decides from the stream and the checkpoint alone,
which is always safe because run keys and the checkpoint, not the cursor, keep runs apart.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

CURSOR_VERSION = 1


@dataclass(frozen=True)
class StreamSensorCursor:
    """What the stream sensor remembers between ticks."""

    last_end: int | None = None
    requested_at: dt.datetime | None = None  # UTC
    pending_since: dt.datetime | None = None  # UTC

    def to_json(self) -> str:
        """The cursor string stored by Dagster."""
        return json.dumps(
            {
                "v": CURSOR_VERSION,
                "last_end": self.last_end,
                "requested_at": _iso(self.requested_at),
                "pending_since": _iso(self.pending_since),
            },
            separators=(",", ":"),
        )

    @classmethod
    def decode(
        cls, raw: str | None, *, warn: Callable[[str], None] | None = None
    ) -> StreamSensorCursor:
        """Decodes a stored cursor; anything unreadable becomes a fresh cursor.

        Args:
            raw: the cursor string (None or empty: a sensor that never ticked).
            warn: called with a message when `raw` is not readable.

        Returns:
            The cursor, or a fresh one.
        """
        if not raw:
            return cls()
        try:
            return cls._from_doc(json.loads(raw))
        except (ValueError, TypeError, KeyError) as error:
            if warn is not None:
                warn(
                    f"ignoring unreadable sensor cursor {raw[:200]!r} ({error}); starting from a "
                    "fresh cursor (run keys and the ingest checkpoint still keep runs apart)"
                )
            return cls()

    @classmethod
    def _from_doc(cls, doc: Any) -> StreamSensorCursor:
        if not isinstance(doc, dict):
            raise TypeError("not a JSON object")
        if doc.get("v") != CURSOR_VERSION:
            raise ValueError(f"unknown cursor version {doc.get('v')!r}")
        last_end = doc.get("last_end")
        if last_end is not None and (isinstance(last_end, bool) or not isinstance(last_end, int)):
            raise TypeError(f"last_end must be an integer, got {last_end!r}")
        return cls(
            last_end=last_end,
            requested_at=_time(doc.get("requested_at")),
            pending_since=_time(doc.get("pending_since")),
        )

    def requested(self, end: int, now: dt.datetime) -> StreamSensorCursor:
        """The cursor after requesting runs up to `end` at `now`."""
        return StreamSensorCursor(last_end=end, requested_at=now.astimezone(dt.timezone.utc))

    def waiting(self, now: dt.datetime) -> StreamSensorCursor:
        """The cursor after a tick that saw messages too few to request (yet)."""
        if self.pending_since is not None:
            return self
        return replace(self, pending_since=now.astimezone(dt.timezone.utc))

    def caught_up(self) -> StreamSensorCursor:
        """The cursor after a tick that saw nothing new."""
        return replace(self, pending_since=None)

    def wait_started(self) -> dt.datetime | None:
        """Where `max_wait` counts from: the last requested run, else the first unmet wait."""
        return self.requested_at or self.pending_since


def _iso(value: dt.datetime | None) -> str | None:
    return None if value is None else value.astimezone(dt.timezone.utc).isoformat()


def _time(value: Any) -> dt.datetime | None:
    if value is None:
        return None
    parsed = dt.datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        raise ValueError(f"time {value!r} has no time zone")
    return parsed.astimezone(dt.timezone.utc)
