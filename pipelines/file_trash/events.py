"""The file trash service's events, their JSON schemas, and a generator of realistic ones.

FileDeletedEvent is published on `files.deleted` with msg-id = its eventId:

    {"eventId": "...", "eventType": "FileDeletedEvent", "timestamp": "2026-11-21T10:00:00.000Z",
     "data": {"fileId": "...", "fileName": "report.pdf", "filePath": "/users/user-001/...",
              "fileSize": 123456, "mimeType": "application/pdf", "userId": "user-001",
              "deletedAt": "2026-11-21T10:00:00.000Z"}}

FilePlacedInTrashEvent is published on `files.trashed`, one per trashed file. Its eventId is
a uuid5 of the source FileDeletedEvent's eventId and its msg-id `trashed-<source eventId>`,
so publishing it again (a re-run) creates nothing new:

    {"eventId": "...", "eventType": "FilePlacedInTrashEvent", "timestamp": "...",
     "data": {"trashId": "...", "fileId": "...", "fileName": "report.pdf", "userId": "user-001",
              "trashedAt": "...", "expiresAt": "...", "originalEventId": "..."}}

`payload_schema` describes each event as a JSON Schema (AsyncAPI's schema format), derived
from the dataclasses below and their fields' `schema` metadata.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import typing
import uuid
from collections.abc import Iterator
from dataclasses import MISSING, asdict, dataclass, field, fields, is_dataclass
from typing import Any

FILE_DELETED_EVENT = "FileDeletedEvent"
FILE_TRASHED_EVENT = "FilePlacedInTrashEvent"
FILE_DELETED_SUBJECT = "files.deleted"
FILE_TRASHED_SUBJECT = "files.trashed"

# Namespace of the uuid5 identifiers derived from a source event (fixed: never change it).
TRASH_NAMESPACE = uuid.UUID("6f1c7d2e-3b8a-5c4f-9e0d-8a7b6c5d4e3f")
MAX_FILE_SIZE = 1 << 40  # bytes (1 TiB), the upper bound of `fileSize`
USER_ID_PATTERN = r"^user-[0-9]{3,}$"
MIME_TYPE_PATTERN = r"^[a-z]+/[a-z0-9][a-z0-9.+-]*$"

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
    return (
        moment.astimezone(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )


def _field(description: str, **schema: Any) -> Any:
    """A required dataclass field whose JSON Schema is `{"type": "string", **schema}`."""
    return field(metadata={"schema": {"type": "string", **schema, "description": description}})


def _uuid(description: str) -> Any:
    return _field(description, format="uuid")


def _timestamp(description: str) -> Any:
    return _field(description, format="date-time")


@dataclass(frozen=True)
class FileDeletedData:
    """The `data` of a FileDeletedEvent: the deleted file."""

    fileId: str = _uuid("The deleted file.")
    fileName: str = _field("Its name, e.g. report.pdf.")
    filePath: str = _field("Its path before deletion.")
    fileSize: int = field(
        metadata={
            "schema": {
                "type": "integer",
                "minimum": 0,
                "maximum": MAX_FILE_SIZE,
                "description": "Size in bytes (at most 1 TiB).",
            }
        }
    )
    mimeType: str = _field("Its media type, lower case.", pattern=MIME_TYPE_PATTERN)
    userId: str = _field("The user who deleted it, user-NNN.", pattern=USER_ID_PATTERN)
    deletedAt: str = _timestamp("When it was deleted (UTC).")


@dataclass(frozen=True)
class FileDeletedEvent:
    """A user deleted a file; published on `files.deleted`."""

    eventId: str = _uuid("Unique per event; also the message's Nats-Msg-Id.")
    timestamp: str = _timestamp("When the event was emitted (UTC).")
    data: FileDeletedData = field(metadata={"description": "The deleted file."})
    eventType: str = FILE_DELETED_EVENT

    def to_json(self) -> bytes:
        """The event as published: compact JSON, UTF-8."""
        return json.dumps(asdict(self), separators=(",", ":")).encode()


@dataclass(frozen=True)
class FilePlacedInTrashData:
    """The `data` of a FilePlacedInTrashEvent: the trash entry."""

    trashId: str = _uuid("The trash entry, derived from the source event.")
    fileId: str = _uuid("The trashed file.")
    fileName: str = _field("Its name.")
    userId: str = _field("Its owner, user-NNN.", pattern=USER_ID_PATTERN)
    trashedAt: str = _timestamp("When it went to the trash (the source's deletedAt, UTC).")
    expiresAt: str = _timestamp("When it leaves the trash for good (UTC).")
    originalEventId: str = _uuid("The eventId of the FileDeletedEvent this follows from.")


@dataclass(frozen=True)
class FilePlacedInTrashEvent:
    """A deleted file was placed in the trash; published on `files.trashed`."""

    eventId: str = _uuid("uuid5(TRASH_NAMESPACE, originalEventId): a function of the source.")
    timestamp: str = _timestamp("When the event was emitted (UTC).")
    data: FilePlacedInTrashData = field(metadata={"description": "The trash entry."})
    eventType: str = FILE_TRASHED_EVENT

    def to_json(self) -> bytes:
        """The event as published: compact JSON, UTF-8."""
        return json.dumps(asdict(self), separators=(",", ":")).encode()

    @property
    def msg_id(self) -> str:
        """Its Nats-Msg-Id: `trashed-<source eventId>`."""
        return trashed_msg_id(self.data.originalEventId)


EVENT_TYPES: dict[str, type] = {
    FILE_DELETED_EVENT: FileDeletedEvent,
    FILE_TRASHED_EVENT: FilePlacedInTrashEvent,
}
SUBJECTS: dict[str, str] = {
    FILE_DELETED_EVENT: FILE_DELETED_SUBJECT,
    FILE_TRASHED_EVENT: FILE_TRASHED_SUBJECT,
}


def placed_in_trash_event_id(source_event_id: str) -> str:
    """The eventId of the FilePlacedInTrashEvent that follows `source_event_id` (a uuid5)."""
    return str(uuid.uuid5(TRASH_NAMESPACE, source_event_id))


def trash_id(source_event_id: str) -> str:
    """The trashId of the trash entry created by `source_event_id` (a uuid5)."""
    return str(uuid.uuid5(TRASH_NAMESPACE, f"trash:{source_event_id}"))


def trashed_msg_id(source_event_id: str) -> str:
    """The Nats-Msg-Id of the FilePlacedInTrashEvent that follows `source_event_id`."""
    return f"trashed-{source_event_id}"


def placed_in_trash_event(
    *,
    source_event_id: str,
    file_id: str,
    file_name: str,
    user_id: str,
    trashed_at: dt.datetime,
    expires_at: dt.datetime,
    now: dt.datetime,
) -> FilePlacedInTrashEvent:
    """The FilePlacedInTrashEvent for a deleted file; all ids are functions of the source.

    Args:
        source_event_id: the FileDeletedEvent's eventId.
        file_id: the file.
        file_name: its name.
        user_id: its owner.
        trashed_at: when it was deleted (a naive datetime is taken as local time, as
            PySpark returns timestamps).
        expires_at: when it leaves the trash.
        now: the event's `timestamp`.

    Returns:
        The event; publish it with msg-id `event.msg_id`.
    """
    return FilePlacedInTrashEvent(
        eventId=placed_in_trash_event_id(source_event_id),
        timestamp=isoformat_z(now),
        data=FilePlacedInTrashData(
            trashId=trash_id(source_event_id),
            fileId=file_id,
            fileName=file_name,
            userId=user_id,
            trashedAt=isoformat_z(trashed_at),
            expiresAt=isoformat_z(expires_at),
            originalEventId=source_event_id,
        ),
    )


def payload_schema(event_class: type) -> dict[str, Any]:
    """The JSON Schema of an event class's payload (nested `data` inline, all fields required).

    Args:
        event_class: an event dataclass, e.g. `FileDeletedEvent`.

    Returns:
        A JSON Schema object (draft-07 keywords, as AsyncAPI's schema format uses).

    Raises:
        TypeError: `event_class` is not a dataclass.
    """
    if not (isinstance(event_class, type) and is_dataclass(event_class)):
        raise TypeError(f"payload_schema needs an event dataclass, got {event_class!r}")
    hints = typing.get_type_hints(event_class)
    properties: dict[str, Any] = {}
    for f in fields(event_class):
        kind = hints[f.name]
        if is_dataclass(kind):
            properties[f.name] = {**payload_schema(kind), **dict(f.metadata)}
        elif f.default is not MISSING:
            properties[f.name] = {"type": "string", "const": f.default}
        elif "schema" in f.metadata:
            properties[f.name] = dict(f.metadata["schema"])
        else:
            properties[f.name] = {"type": {str: "string", int: "integer"}[kind]}
    schema: dict[str, Any] = {"type": "object", "title": event_class.__name__}
    if event_class.__doc__ and not event_class.__doc__.startswith(event_class.__name__ + "("):
        schema["description"] = event_class.__doc__.strip().splitlines()[0]
    schema["required"] = [f.name for f in fields(event_class)]
    schema["properties"] = properties
    return schema


def random_file_deleted_event(
    rng: random.Random, *, now: dt.datetime, users: int = 50
) -> FileDeletedEvent:
    """One realistic FileDeletedEvent, deleted within the hour before `now`.

    Args:
        rng: the random generator (its state advances).
        now: the clock.
        users: how many distinct users delete files (user-000 ... ).

    Returns:
        An event that passes every quality rule.
    """
    name, mime, folder = rng.choice(_FILES)
    user = f"user-{rng.randrange(users):03d}"
    deleted_at = now - dt.timedelta(seconds=rng.uniform(0, 3600))
    return FileDeletedEvent(
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
        yield random_file_deleted_event(rng, now=now, users=users)
