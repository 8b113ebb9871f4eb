"""Stream management and stored messages, against the session's real nats-server."""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable, Iterator

import pytest

from resources.jetstream import (
    Discard,
    JetStreamClient,
    Retention,
    Storage,
    StreamSpec,
    Topology,
    reconcile,
)
from resources.jetstream.errors import (
    InvalidArgumentError,
    MessageNotFoundError,
    NoStreamForSubjectError,
    ServerAPIError,
    StreamNotFoundError,
)
from resources.jetstream.streams.stored import StoredMessage


@pytest.fixture
def stream(js: JetStreamClient, unique_name: str) -> Iterator[StreamSpec]:
    """A file stream on `<name>.>`, deleted after the test."""
    spec = StreamSpec(unique_name, (f"{unique_name}.>",))
    js.streams.add(spec)
    yield spec
    if js.streams.exists(spec.name):
        js.streams.delete(spec.name)


def publish(js: JetStreamClient, stream: StreamSpec, *suffixes: str) -> list[int]:
    """Publishes `b"<i>"` to `<stream>.<suffix>` for each suffix; returns the sequences."""
    return [
        js.publish(f"{stream.name}.{suffix}", str(i).encode()).seq
        for i, suffix in enumerate(suffixes, start=1)
    ]


def stored_seqs(js: JetStreamClient, stream: str) -> list[int]:
    """The sequences still stored in `stream`."""
    seqs = []
    for seq in range(1, js.streams.info(stream).last_seq + 1):
        with contextlib.suppress(MessageNotFoundError):
            seqs.append(js.streams.get_message(stream, seq).seq)
    return seqs


STREAM_VARIANTS: dict[str, Callable[[str], StreamSpec]] = {
    "wildcard-subjects-file-limits": lambda n: StreamSpec(
        n,
        (f"{n}.files.*", f"{n}.audit.>"),
        storage=Storage.FILE,
        retention=Retention.LIMITS,
        max_msgs=1_000,
        max_bytes=1 << 20,
        max_age=3_600.3,
        max_msg_size=4_096,
        max_msgs_per_subject=10,
    ),
    "memory-interest-discard-new": lambda n: StreamSpec(
        n,
        (f"{n}.>",),
        description="interest retention in memory",
        storage=Storage.MEMORY,
        retention=Retention.INTEREST,
        max_msgs=50,
        discard=Discard.NEW,
        duplicate_window=0.3,
        allow_direct=False,
    ),
    "workqueue-window-and-age": lambda n: StreamSpec(
        n,
        (f"{n}.jobs.>",),
        retention=Retention.WORK_QUEUE,
        max_age=7 * 86_400,
        duplicate_window=300,
        allow_direct=True,
    ),
    "defaults": lambda n: StreamSpec(n, (f"{n}.>",)),
}


@pytest.mark.parametrize("variant", STREAM_VARIANTS)
def test_every_declared_stream_field_reads_back_equal(js, unique_name, variant):
    spec = STREAM_VARIANTS[variant](unique_name)
    try:
        added = js.streams.add(spec)
        read = js.streams.info(spec.name)
    finally:
        js.streams.delete(spec.name)
    declared = {k: v for k, v in vars(spec).items() if v is not None}
    assert {k: getattr(read.spec, k) for k in declared} == declared
    assert added.spec == read.spec


def test_default_duplicate_window_reads_back_as_the_servers_two_minutes(js, stream):
    assert stream.duplicate_window is None
    assert js.streams.info(stream.name).spec.duplicate_window == 120


@pytest.mark.parametrize("variant", STREAM_VARIANTS)
def test_reconcile_reports_an_added_stream_unchanged(js, unique_name, variant):
    topology = Topology(streams=(STREAM_VARIANTS[variant](unique_name),))
    try:
        first = reconcile(js, topology)
        second = reconcile(js, topology)
    finally:
        js.streams.delete(unique_name)
    assert [c.action.value for c in first] == ["created"]
    assert [(c.action.value, c.diff) for c in second] == [("unchanged", {})]


def test_adding_the_same_spec_twice_returns_the_existing_stream(js, stream):
    publish(js, stream, "a")
    assert js.streams.add(stream).last_seq == 1


def test_adding_a_different_config_under_a_taken_name_says_to_update(js, stream):
    changed = StreamSpec(stream.name, stream.subjects, max_msgs=5)
    with pytest.raises(ServerAPIError, match="update") as caught:
        js.streams.add(changed)
    assert caught.value.stream == stream.name


def test_more_than_one_replica_on_a_single_server_fails_naming_the_stream(js, unique_name):
    with pytest.raises(ServerAPIError, match=f"'{unique_name}'.*3 replicas") as caught:
        js.streams.add(StreamSpec(unique_name, (f"{unique_name}.>",), replicas=3))
    assert caught.value.stream == unique_name
    assert "replicas=1" in str(caught.value)
    assert not js.streams.exists(unique_name)


def test_update_adds_a_subject_that_then_captures_publishes(js, stream):
    wider = StreamSpec(stream.name, (*stream.subjects, f"{stream.name}_extra.*"))
    updated = js.streams.update(wider)
    assert updated.spec.subjects == wider.subjects
    assert js.publish(f"{stream.name}_extra.x", b"1").stream == stream.name
    assert js.streams.find(f"{stream.name}_extra.x") == stream.name


def test_update_of_a_missing_stream_raises_stream_not_found(js, unique_name):
    with pytest.raises(StreamNotFoundError, match=f"'{unique_name}'"):
        js.streams.update(StreamSpec(unique_name, (f"{unique_name}.>",)))


def test_info_of_a_missing_stream_names_it_and_says_how_to_create_it(js, unique_name):
    with pytest.raises(StreamNotFoundError) as caught:
        js.streams.info(unique_name)
    assert caught.value.stream == unique_name
    assert f"stream {unique_name!r} does not exist" in str(caught.value)
    assert "client.streams.add" in str(caught.value)


def test_delete_removes_the_stream_and_a_second_delete_raises_not_found(js, stream):
    js.streams.delete(stream.name)
    assert not js.streams.exists(stream.name)
    with pytest.raises(StreamNotFoundError):
        js.streams.delete(stream.name)


def test_list_returns_every_stream_across_pages_of_256(js, unique_name):
    created = {f"{unique_name}_{i}" for i in range(260)}
    for name in created:
        js.streams.add(StreamSpec(name, (f"{name}.>",), storage=Storage.MEMORY))
    try:
        listed = js.streams.list()
        names = js.streams.names()  # a different API, paged at 1024
        total = js.run(js.jsm.account_info(), what="read account info").streams
    finally:
        for name in created:
            js.streams.delete(name)
    listed_names = [s.name for s in listed]
    assert len(listed_names) == len(set(listed_names)) == total == len(names)
    assert created <= set(listed_names)
    assert set(listed_names) == set(names)


def test_list_and_names_with_a_subject_return_only_streams_overlapping_it(js, stream):
    other = StreamSpec(f"{stream.name}_other", (f"{stream.name}_other.>",))
    js.streams.add(other)
    try:
        listed = js.streams.list(f"{stream.name}.*")
        names = js.streams.names(f"{stream.name}.>")
    finally:
        js.streams.delete(other.name)
    assert [s.name for s in listed] == [stream.name]
    assert listed[0].subjects == stream.subjects
    assert names == [stream.name]


def test_find_returns_the_stream_capturing_a_subject(js, stream):
    assert js.streams.find(f"{stream.name}.files.deleted") == stream.name


def test_find_of_an_uncaptured_subject_raises_no_stream_for_subject(js, unique_name):
    with pytest.raises(NoStreamForSubjectError, match=f"'{unique_name}.x'"):
        js.streams.find(f"{unique_name}.x")


def test_get_message_returns_subject_data_headers_and_storage_time(js, stream):
    seq = js.publish(f"{stream.name}.a", b"\x00payload", headers={"X-Kind": "test"}).seq
    message = js.streams.get_message(stream.name, seq)
    assert message == StoredMessage(
        stream=stream.name,
        seq=seq,
        subject=f"{stream.name}.a",
        data=b"\x00payload",
        headers={"X-Kind": "test"},
        time=message.time,
    )
    assert message.time.utcoffset() == dt.timedelta(0)


def test_get_message_keeps_an_empty_payload_and_no_headers(js, stream):
    seq = js.publish(f"{stream.name}.a", b"").seq
    message = js.streams.get_message(stream.name, seq)
    assert (message.data, message.headers) == (b"", {})


def test_get_last_message_returns_the_newest_on_the_subject(js, stream):
    publish(js, stream, "a", "b", "a", "b")
    last_a = js.streams.get_last_message(stream.name, f"{stream.name}.a")
    assert (last_a.seq, last_a.data) == (3, b"3")
    assert js.streams.get_last_message(stream.name, f"{stream.name}.*").seq == 4


def test_get_message_at_a_missing_sequence_raises_message_not_found(js, stream):
    publish(js, stream, "a")
    with pytest.raises(MessageNotFoundError) as caught:
        js.streams.get_message(stream.name, 2)
    assert (caught.value.stream, caught.value.seq) == (stream.name, 2)
    with pytest.raises(MessageNotFoundError):
        js.streams.get_last_message(stream.name, f"{stream.name}.never")


def test_get_message_of_a_missing_stream_raises_stream_not_found(js, unique_name):
    with pytest.raises(StreamNotFoundError, match=f"'{unique_name}'"):
        js.streams.get_message(unique_name, 1)


@pytest.mark.parametrize("erase", [False, True], ids=["plain", "secure-erase"])
def test_delete_message_removes_just_that_message(js, stream, erase):
    publish(js, stream, "a", "a", "a")
    js.streams.delete_message(stream.name, 2, erase=erase)
    assert stored_seqs(js, stream.name) == [1, 3]
    state = js.streams.info(stream.name)
    assert (state.messages, state.num_deleted) == (2, 1)
    with pytest.raises(MessageNotFoundError):
        js.streams.get_message(stream.name, 2)


@pytest.mark.parametrize("storage", [Storage.FILE, Storage.MEMORY])
@pytest.mark.parametrize("where", ["deleted", "purged", "beyond-last"])
def test_delete_of_a_missing_message_raises_message_not_found(js, unique_name, storage, where):
    stream = StreamSpec(unique_name, (f"{unique_name}.>",), storage=storage)
    js.streams.add(stream)
    try:
        publish(js, stream, "a", "a", "a")
        js.streams.delete_message(stream.name, 2)
        js.streams.purge(stream.name, before_seq=2)
        seq = {"deleted": 2, "purged": 1, "beyond-last": 7}[where]
        with pytest.raises(MessageNotFoundError, match=f"sequence {seq}") as caught:
            js.streams.delete_message(stream.name, seq)
    finally:
        js.streams.delete(stream.name)
    assert (caught.value.stream, caught.value.seq) == (stream.name, seq)


@pytest.mark.parametrize(
    ("options", "purged", "kept"),
    [
        ({}, 6, []),
        ({"subject": "{s}.a"}, 3, [2, 4, 6]),
        ({"subject": "{s}.*"}, 6, []),
        ({"keep": 2}, 4, [5, 6]),
        ({"subject": "{s}.a", "keep": 1}, 2, [2, 4, 5, 6]),
        ({"before_seq": 4}, 3, [4, 5, 6]),
        ({"subject": "{s}.b", "before_seq": 5}, 2, [1, 3, 5, 6]),
    ],
    ids=["all", "subject", "wildcard", "keep", "subject-keep", "before-seq", "subject-before"],
)
def test_purge_removes_the_matching_messages_and_returns_their_count(
    js, stream, options, purged, kept
):
    publish(js, stream, "a", "b", "a", "b", "a", "b")
    if "subject" in options:
        options = {**options, "subject": options["subject"].format(s=stream.name)}
    assert js.streams.purge(stream.name, **options) == purged
    assert stored_seqs(js, stream.name) == kept


def test_purge_of_an_empty_stream_returns_zero(js, stream):
    assert js.streams.purge(stream.name) == 0


@pytest.mark.parametrize(
    "call",
    [
        lambda s, n: s.info("bad.name"),
        lambda s, n: s.info(""),
        lambda s, n: s.delete("a b"),
        lambda s, n: s.find(f"{n}.*"),
        lambda s, n: s.names(f"{n}..x"),
        lambda s, n: s.get_message(n, 0),
        lambda s, n: s.get_message(n, -1),
        lambda s, n: s.get_message(n, True),
        lambda s, n: s.get_last_message(n, ""),
        lambda s, n: s.delete_message(n, 0),
        lambda s, n: s.purge(n, keep=1, before_seq=3),
        lambda s, n: s.purge(n, keep=-1),
        lambda s, n: s.purge(n, before_seq=0),
        lambda s, n: s.purge(n, subject="a.>.b"),
    ],
)
def test_invalid_arguments_are_rejected_before_any_request(js, unique_name, call):
    # the stream does not exist, so a request would raise StreamNotFoundError instead
    with pytest.raises(InvalidArgumentError):
        call(js.streams, unique_name)


def test_stream_spec_normalizes_to_what_the_server_stores():
    spec = StreamSpec(
        "S", ["s.>"], description="", max_msgs=0, max_bytes=-5, max_msg_size=0, duplicate_window=0
    )
    assert (spec.subjects, spec.description) == (("s.>",), None)
    assert (spec.max_msgs, spec.max_bytes, spec.max_msg_size) == (-1, -1, -1)
    assert spec.duplicate_window is None
    assert StreamSpec("S", "s.>", max_age=1 / 3).max_age == 0.333333333


@pytest.mark.parametrize(
    "kwargs",
    [
        {"subjects": ()},
        {"subjects": ("a..b",)},
        {"replicas": 0},
        {"max_age": -1},
        {"duplicate_window": -1},
        {"max_age": 60, "duplicate_window": 120},
        {"storage": "tape"},
    ],
)
def test_stream_spec_rejects_what_the_server_would_refuse(kwargs):
    with pytest.raises((InvalidArgumentError, ValueError)):
        StreamSpec(**{"name": "S", "subjects": ("s.>",), **kwargs})
