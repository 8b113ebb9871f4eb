"""The event mix: exact counts, each bad kind breaking exactly its one rule, publishing it."""

import datetime as dt
import json
import re

import pytest

from pipelines.file_trash.events import MAX_FILE_SIZE
from pipelines.file_trash.generator import (
    BAD_KINDS,
    GOOD,
    GeneratedEvent,
    generate_event_mix,
    publish_events,
    require_stream,
    summarize,
)
from resources.jetstream import StreamSpec
from resources.jetstream.core.messages import MSG_ID_HEADER
from resources.jetstream.errors import NoStreamForSubjectError, StreamNotFoundError

NOW = dt.datetime(2026, 11, 21, 10, 0, tzinfo=dt.timezone.utc)
CLOCK_SKEW = dt.timedelta(minutes=5)
ENVELOPE = ("eventId", "eventType", "timestamp", "data")
DATA = ("fileId", "fileName", "filePath", "fileSize", "mimeType", "userId", "deletedAt")
TIMESTAMPS = ("timestamp", "deletedAt")
RULE_OF_KIND = {
    "malformed_json": "parseable_json",
    "missing_field": "required_fields_present",
    "wrong_type": "field_types_valid",
    "negative_size": "file_size_in_range",
    "unknown_event_type": "known_event_type",
    "duplicate_event_id": "event_id_unique",
    "future_deleted_at": "deleted_at_not_in_future",
}


def _timestamp(value: object) -> dt.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def broken_rules(payload: bytes, earlier_ids: set[str], now: dt.datetime) -> set[str]:
    """The contract's FileDeletedEvent rules a payload breaks, written out independently."""
    try:
        event = json.loads(payload)
    except ValueError:
        return {"parseable_json"}
    if not isinstance(event, dict) or not isinstance(event.get("data"), dict):
        return {"parseable_json"}
    data, broken = event["data"], set()
    if event.get("eventType") not in ("FileDeletedEvent", "FilePlacedInTrashEvent"):
        broken.add("known_event_type")
    values = {**{k: event.get(k) for k in ENVELOPE}, **{k: data.get(k) for k in DATA}}
    if any(value is None for value in values.values()):
        broken.add("required_fields_present")
    for name, value in values.items():
        if value is None or name == "data":
            continue
        if name == "fileSize":
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif name in TIMESTAMPS:
            ok = _timestamp(value) is not None
        else:
            ok = isinstance(value, str)
        if not ok:
            broken.add("field_types_valid")
    if values["eventId"] in earlier_ids:
        broken.add("event_id_unique")
    size = values["fileSize"]
    if isinstance(size, int) and not 0 <= size <= MAX_FILE_SIZE:
        broken.add("file_size_in_range")
    mime = values["mimeType"]
    if isinstance(mime, str) and not re.fullmatch(r"[a-z]+/[a-z0-9][a-z0-9.+-]*", mime):
        broken.add("mime_type_well_formed")
    deleted_at = _timestamp(values["deletedAt"])
    if deleted_at is not None and deleted_at > now + CLOCK_SKEW:
        broken.add("deleted_at_not_in_future")
    user = values["userId"]
    if isinstance(user, str) and not re.fullmatch(r"user-[0-9]{3,}", user):
        broken.add("user_id_format")
    return broken


def event_id(event: GeneratedEvent) -> str | None:
    try:
        return json.loads(event.payload).get("eventId")
    except ValueError:
        return None


def test_a_mix_has_exactly_round_count_times_share_bad_events_round_robin():
    events = generate_event_mix(100, bad_share=0.2, now=NOW, seed=1)

    assert len(events) == 100
    # 20 bad events over 7 kinds in order: the first six kinds get 3, the last gets 2.
    assert summarize(events) == {GOOD: 80, **dict.fromkeys(BAD_KINDS[:6], 3), BAD_KINDS[6]: 2}


def test_counts_follow_round_and_summarize_lists_every_kind():
    assert summarize(generate_event_mix(10, bad_share=0.05, now=NOW, seed=2))[GOOD] == 10
    assert summarize(generate_event_mix(10, bad_share=0.15, now=NOW, seed=2))[GOOD] == 8
    assert summarize(generate_event_mix(3, now=NOW, seed=2)) == {
        GOOD: 3,
        **dict.fromkeys(BAD_KINDS, 0),
    }
    assert generate_event_mix(0, bad_share=0.5, now=NOW) == []


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_each_event_breaks_exactly_the_rule_of_its_kind_and_good_ones_none(seed):
    events = generate_event_mix(350, bad_share=0.3, now=NOW, seed=seed)
    earlier_ids: set[str] = set()

    for event in events:
        expected = set() if event.kind == GOOD else {RULE_OF_KIND[event.kind]}
        assert broken_rules(event.payload, earlier_ids, NOW) == expected, event
        if event.kind != "malformed_json":
            earlier_ids.add(json.loads(event.payload)["eventId"])


def test_a_duplicate_is_an_earlier_good_payload_byte_for_byte_under_its_own_msg_id():
    events = generate_event_mix(200, bad_share=0.35, now=NOW, seed=6)
    good_before: set[bytes] = set()

    for event in events:
        if event.kind == "duplicate_event_id":
            assert event.payload in good_before
            assert event.msg_id != event_id(event)
        if event.kind == GOOD:
            good_before.add(event.payload)
    assert summarize(events)["duplicate_event_id"] == 10


@pytest.mark.parametrize("seed", range(20))
def test_a_duplicate_comes_after_a_good_event_even_when_it_was_drawn_first(seed):
    events = generate_event_mix(8, bad_share=7 / 8, now=NOW, seed=seed)
    kinds = [event.kind for event in events]

    assert kinds.index(GOOD) < kinds.index("duplicate_event_id")


def test_msg_ids_are_unique_and_a_good_events_msg_id_is_its_event_id():
    events = generate_event_mix(300, bad_share=0.5, now=NOW, seed=7)

    assert len({event.msg_id for event in events}) == len(events)
    assert all(event.msg_id == event_id(event) for event in events if event.kind == GOOD)
    assert all(event.headers == {MSG_ID_HEADER: event.msg_id} for event in events)


def test_the_same_seed_gives_the_same_events_and_no_seed_fresh_ones():
    assert generate_event_mix(50, bad_share=0.2, now=NOW, seed=8) == generate_event_mix(
        50, bad_share=0.2, now=NOW, seed=8
    )
    assert generate_event_mix(5, now=NOW) != generate_event_mix(5, now=NOW)


def test_every_event_goes_to_the_chosen_subject():
    events = generate_event_mix(20, bad_share=0.5, now=NOW, seed=9, subject="T.files.deleted")

    assert {event.subject for event in events} == {"T.files.deleted"}


def test_an_all_bad_mix_with_a_duplicate_is_refused_because_nothing_can_be_copied():
    with pytest.raises(ValueError, match="lower bad_share"):
        generate_event_mix(7, bad_share=1.0, now=NOW, seed=1)
    assert summarize(generate_event_mix(5, bad_share=1.0, now=NOW, seed=1))[GOOD] == 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"count": -1}, "count must be an integer >= 0"),
        ({"count": 10, "bad_share": 1.5}, "bad_share must be between 0 and 1"),
        ({"count": 10, "bad_share": -0.1}, "bad_share must be between 0 and 1"),
        ({"count": 10, "now": dt.datetime(2026, 1, 1)}, "timezone-aware"),
        ({"count": 10, "users": 0}, "users must be"),
    ],
)
def test_bad_mix_arguments_are_refused_with_what_to_pass(kwargs, message):
    with pytest.raises(ValueError, match=message):
        generate_event_mix(**{"now": NOW, **kwargs})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"rate": 0}, "rate must be a positive number"), ({"batch_size": 0}, "batch_size must")],
)
def test_publish_arguments_are_checked_before_any_io(kwargs, message):
    with pytest.raises(ValueError, match=message):
        publish_events(None, [], **kwargs)  # no client needed: nothing is sent


def make_stream(js, name: str) -> str:
    js.streams.add(StreamSpec(name=name, subjects=(f"{name}.>",), duplicate_window=120))
    return f"{name}.files.deleted"


def test_publishing_stores_every_event_in_order_with_its_msg_id(js, unique_name):
    subject = make_stream(js, unique_name)
    events = generate_event_mix(60, bad_share=0.25, now=NOW, seed=10, subject=subject)
    progress: list[int] = []

    summary = publish_events(js, events, batch_size=25, on_progress=progress.append)

    assert (summary.published, summary.duplicates, summary.stored) == (60, 0, 60)
    assert (summary.first_seq, summary.last_seq) == (1, 60)
    assert progress == [25, 50, 60]
    for seq, event in enumerate(events, start=1):
        stored = js.streams.get_message(unique_name, seq)
        assert (stored.data, stored.headers[MSG_ID_HEADER]) == (event.payload, event.msg_id)


def test_publishing_the_same_events_again_is_all_duplicates_and_stores_nothing(js, unique_name):
    subject = make_stream(js, unique_name)
    events = generate_event_mix(40, bad_share=0.5, now=NOW, seed=11, subject=subject)
    publish_events(js, events)

    again = publish_events(js, events, batch_size=7)

    assert (again.published, again.duplicates, again.stored) == (40, 40, 0)
    assert (again.first_seq, again.last_seq) == (None, None)
    assert js.streams.info(unique_name).messages == 40


def test_a_paced_publish_completes_and_sleeps_instead_of_spinning(js, unique_name):
    subject = make_stream(js, unique_name)
    events = generate_event_mix(50, now=NOW, seed=12, subject=subject)
    clock = [0.0]  # a fake clock that only sleeping moves: the waits are exactly the schedule
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        clock[0] += seconds

    summary = publish_events(js, events, rate=100, monotonic=lambda: clock[0], sleep=sleep)

    assert summary.stored == 50
    assert sleeps == pytest.approx([0.1] * 4)  # 5 batches of 10 at 100/s, the first at once
    assert publish_events(js, events, rate=2000).duplicates == 50  # real clock: it completes


def test_publishing_where_no_stream_listens_names_the_subject(js, unique_name):
    events = generate_event_mix(3, now=NOW, seed=13, subject=f"{unique_name}.nowhere")

    with pytest.raises(NoStreamForSubjectError, match=f"{unique_name}.nowhere"):
        publish_events(js, events)


def test_a_missing_stream_is_named_with_how_to_create_it(js, unique_name):
    with pytest.raises(StreamNotFoundError) as raised:
        require_stream(js, unique_name)

    assert raised.value.stream == unique_name
    assert f"stream {unique_name!r} does not exist" in str(raised.value)
    assert "--provision" in str(raised.value) and "make demo" in str(raised.value)
    make_stream(js, unique_name)
    assert require_stream(js, unique_name).name == unique_name
