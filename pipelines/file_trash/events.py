"""The file trash service's events and a generator of realistic ones.

FileDeletedEvent is published on `files.deleted`:

    {"eventId": "...", "eventType": "FileDeletedEvent", "timestamp": "2026-11-21T10:00:00Z",
     "data": {"fileId": "...", "fileName": "report.pdf", "filePath": "/users/u-001/...",
              "fileSize": 123456, "mimeType": "application/pdf", "userId": "user-001",
              "deletedAt": "2026-11-21T10:00:00Z"}}
"""

from __future__ import annotations

import datetime as dt
import json
import random
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass

FILE_DELETED_SUBJECT = "files.deleted"
FILE_TRASHED_SUBJECT = "files.trashed"

_FILES = [
    ("report.pdf", "application/pdf", "documents"),
    ("screenshot.png", "image/png", "pictures"),
    ("backup.zip", "application/zip", "backups"),
    ("notes.txt", "text/plain", "documents"),
    ("holiday.jpg", "image/jpeg", "pictures"),
    ("budget.xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "work"),
    ("talk.mp4", "video/mp4", "videos"),
    ("data.csv", "text/csv", "work"),
]


def isoformat_z(moment: dt.datetime) -> str:
    """An ISO-8601 UTC timestamp with millisecond precision and a 'Z' suffix."""
    return moment.astimezone(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class FileDeletedData:
    fileId: str
    fileName: str
    filePath: str
    fileSize: int
    mimeType: str
    userId: str
    deletedAt: str


@dataclass(frozen=True)
class FileDeletedEvent:
    """A user deleted a file; published on `files.deleted`."""

    eventId: str
    timestamp: str
    data: FileDeletedData
    eventType: str = "FileDeletedEvent"

    def to_json(self) -> bytes:
        """The event as published: compact JSON, UTF-8."""
        return json.dumps(asdict(self), separators=(",", ":")).encode()


def generate_file_deleted_events(
    count: int, *, now: dt.datetime, seed: int | None = None, users: int = 50
) -> Iterator[FileDeletedEvent]:
    """Yields `count` realistic FileDeletedEvents, deleted within the hour before `now`.

    Args:
        count: how many events.
        now: the clock (a parameter, so runs are reproducible).
        seed: seeds the random generator; None for fresh randomness.
        users: how many distinct users delete files.
    """
    rng = random.Random(seed)
    for _ in range(count):
        name, mime, folder = rng.choice(_FILES)
        user = f"user-{rng.randrange(users):03d}"
        deleted_at = now - dt.timedelta(seconds=rng.uniform(0, 3600))
        yield FileDeletedEvent(
            eventId=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            timestamp=isoformat_z(deleted_at),
            data=FileDeletedData(
                fileId=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                fileName=name,
                filePath=f"/users/{user}/{folder}/{name}",
                fileSize=rng.randrange(1, 10_000_000),
                mimeType=mime,
                userId=user,
                deletedAt=isoformat_z(deleted_at),
            ),
        )
