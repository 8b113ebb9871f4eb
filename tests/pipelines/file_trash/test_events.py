"""The file trash events: the published JSON, ids derived from the source, payload schemas."""

import datetime as dt
import json
import uuid

import pytest

from pipelines.file_trash.events import (
    MAX_FILE_SIZE,
    TRASH_NAMESPACE,
    FileDeletedEvent,
    FilePlacedInTrashEvent,
    generate_file_deleted_events,
    isoformat_z,
    payload_schema,
    placed_in_trash_event,
    placed_in_trash_event_id,
    trash_id,
    trashed_msg_id,
)

NOW = dt.datetime(2026, 11, 21, 10, 0, tzinfo=dt.timezone.utc)
SOURCE = "0b7c7f3e-4d2a-4f6e-9a51-2f0c8d9e1a11"


def trashed(source: str = SOURCE, now: dt.datetime = NOW) -> FilePlacedInTrashEvent:
    return placed_in_trash_event(
        source_event_id=source,
        file_id="5d0e3c1a-8b7f-4c2e-9d6a-1f2e3d4c5b6a",
        file_name="report.pdf",
        user_id="user-007",
        trashed_at=dt.datetime(2026, 11, 21, 9, 30, tzinfo=dt.timezone.utc),
        expires_at=dt.datetime(2026, 12, 21, 9, 30, tzinfo=dt.timezone.utc),
        now=now,
    )


def test_seeded_generation_is_reproducible_and_publishes_the_contract_json():
    first = list(generate_file_deleted_events(5, now=NOW, seed=11))
    again = list(generate_file_deleted_events(5, now=NOW, seed=11))

    assert first == again
    body = json.loads(first[0].to_json())
    assert set(body) == {"eventId", "eventType", "timestamp", "data"}
    assert set(body["data"]) == {
        "fileId", "fileName", "filePath", "fileSize", "mimeType", "userId", "deletedAt"
    }  # fmt: skip
    assert body["eventType"] == "FileDeletedEvent"
    assert body["timestamp"].endswith("Z") and isinstance(body["data"]["fileSize"], int)


def test_isoformat_z_has_milliseconds_and_a_z_suffix():
    assert isoformat_z(NOW) == "2026-11-21T10:00:00.000Z"


def test_placed_in_trash_ids_are_pure_functions_of_the_source_event():
    assert placed_in_trash_event_id(SOURCE) == str(uuid.uuid5(TRASH_NAMESPACE, SOURCE))
    assert placed_in_trash_event_id(SOURCE) == placed_in_trash_event_id(SOURCE)
    assert placed_in_trash_event_id(SOURCE) != placed_in_trash_event_id(SOURCE + "x")
    assert trashed_msg_id(SOURCE) == f"trashed-{SOURCE}"
    assert trash_id(SOURCE) not in (SOURCE, placed_in_trash_event_id(SOURCE))


def test_a_rerun_builds_the_same_trash_event_apart_from_its_timestamp():
    first, later = trashed(), trashed(now=NOW + dt.timedelta(hours=1))

    assert first.eventId == later.eventId and first.data == later.data
    assert first.msg_id == later.msg_id == f"trashed-{SOURCE}"


def test_placed_in_trash_event_publishes_the_contract_json():
    body = json.loads(trashed().to_json())

    assert body == {
        "eventId": placed_in_trash_event_id(SOURCE),
        "eventType": "FilePlacedInTrashEvent",
        "timestamp": "2026-11-21T10:00:00.000Z",
        "data": {
            "trashId": trash_id(SOURCE),
            "fileId": "5d0e3c1a-8b7f-4c2e-9d6a-1f2e3d4c5b6a",
            "fileName": "report.pdf",
            "userId": "user-007",
            "trashedAt": "2026-11-21T09:30:00.000Z",
            "expiresAt": "2026-12-21T09:30:00.000Z",
            "originalEventId": SOURCE,
        },
    }


def test_naive_datetimes_are_taken_as_local_time_as_pyspark_returns_them():
    aware = dt.datetime(2026, 11, 21, 9, 30, tzinfo=dt.timezone.utc)
    naive_local = aware.astimezone().replace(tzinfo=None)
    event = placed_in_trash_event(
        source_event_id=SOURCE,
        file_id="f",
        file_name="n",
        user_id="user-001",
        trashed_at=naive_local,
        expires_at=naive_local,
        now=NOW,
    )

    assert event.data.trashedAt == "2026-11-21T09:30:00.000Z"


def test_payload_schema_requires_every_field_with_formats_and_bounds():
    schema = payload_schema(FileDeletedEvent)
    data = schema["properties"]["data"]

    assert schema["required"] == ["eventId", "timestamp", "data", "eventType"]
    assert schema["properties"]["eventType"] == {"type": "string", "const": "FileDeletedEvent"}
    assert schema["properties"]["eventId"]["format"] == "uuid"
    assert schema["properties"]["timestamp"]["format"] == "date-time"
    assert set(data["required"]) == set(data["properties"]) and len(data["required"]) == 7
    assert data["properties"]["fileSize"]["type"] == "integer"
    assert data["properties"]["fileSize"]["minimum"] == 0
    assert data["properties"]["fileSize"]["maximum"] == MAX_FILE_SIZE == 1 << 40
    assert data["properties"]["deletedAt"]["format"] == "date-time"
    assert data["properties"]["userId"]["pattern"] == "^user-[0-9]{3,}$"


def test_trash_event_schema_describes_its_derived_ids_as_uuids():
    data = payload_schema(FilePlacedInTrashEvent)["properties"]["data"]["properties"]

    assert {name for name, s in data.items() if s.get("format") == "uuid"} == {
        "trashId", "fileId", "originalEventId"
    }  # fmt: skip
    assert {name for name, s in data.items() if s.get("format") == "date-time"} == {
        "trashedAt", "expiresAt"
    }  # fmt: skip


def test_payload_schema_refuses_what_is_not_an_event_dataclass():
    with pytest.raises(TypeError, match="event dataclass"):
        payload_schema(dict)
