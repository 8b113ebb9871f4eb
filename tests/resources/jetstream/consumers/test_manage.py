"""Consumer management, against the session's real nats-server."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from typing import Any

import pytest

from resources.jetstream import (
    AckPolicy,
    ConsumerSpec,
    ConsumerState,
    DeliverPolicy,
    JetStreamClient,
    JsMessage,
    Storage,
    StreamSpec,
    Topology,
    reconcile,
)
from resources.jetstream.errors import (
    ConsumerNotFoundError,
    InvalidArgumentError,
    ServerAPIError,
    StreamNotFoundError,
)

START = dt.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=dt.timezone.utc)


@pytest.fixture
def stream(js: JetStreamClient, unique_name: str) -> Iterator[StreamSpec]:
    """A stream on `<name>.>`, deleted (with its consumers) after the test."""
    spec = StreamSpec(unique_name, (f"{unique_name}.>",), storage=Storage.MEMORY)
    js.streams.add(spec)
    yield spec
    js.streams.delete(spec.name)


def publish(js: JetStreamClient, stream: StreamSpec, *suffixes: str) -> list[int]:
    """Publishes one message to `<stream>.<suffix>` per suffix; returns the sequences."""
    return [js.publish(f"{stream.name}.{suffix}", suffix.encode()).seq for suffix in suffixes]


def fetched_seqs(js: JetStreamClient, stream: str, durable: str, batch: int = 10) -> list[int]:
    """The stream sequences of one fetch, each acknowledged."""
    messages = js.fetch(stream, durable, batch=batch, expires=0.5)
    for message in messages:
        message.ack_sync()
    return [m.stream_seq for m in messages]


def declared(spec: ConsumerSpec) -> dict[str, Any]:
    """The fields a spec declares (None means "the server's default")."""
    return {k: v for k, v in vars(spec).items() if v is not None}


def read_back(state: ConsumerState, spec: ConsumerSpec) -> dict[str, Any]:
    return {k: getattr(state.spec, k) for k in declared(spec)}


# Each variant: the ConsumerSpec keyword arguments; "{s}" stands for the stream name.
VARIANTS: dict[str, dict[str, Any]] = {
    "pull-defaults": {},
    "deliver-all-explicit": {
        "deliver_policy": DeliverPolicy.ALL,
        "ack_policy": AckPolicy.EXPLICIT,
        "ack_wait": 12.3,
        "max_deliver": 5,
        "max_ack_pending": 77,
        "max_waiting": 16,
        "description": "every field declared",
        "filter_subjects": ("{s}.a",),
        "backoff": (),
        "flow_control": False,
        "metadata": {"owner": "lakehouse"},
    },
    "deliver-last-ack-all": {"deliver_policy": DeliverPolicy.LAST, "ack_policy": AckPolicy.ALL},
    "deliver-new-ack-none": {"deliver_policy": DeliverPolicy.NEW, "ack_policy": AckPolicy.NONE},
    "by-start-sequence": {"deliver_policy": DeliverPolicy.BY_START_SEQUENCE, "opt_start_seq": 3},
    "by-start-time": {"deliver_policy": DeliverPolicy.BY_START_TIME, "opt_start_time": START},
    "last-per-subject": {
        "deliver_policy": DeliverPolicy.LAST_PER_SUBJECT,
        "filter_subjects": ("{s}.*",),
    },
    "multiple-filters": {"filter_subjects": ("{s}.a", "{s}.c.>")},
    "backoff": {"backoff": (0.3, 2, 10), "max_deliver": 4, "max_ack_pending": -1},
    "push-flow-control": {
        "deliver_subject": "deliver.{s}",
        "flow_control": True,
        "idle_heartbeat": 2.5,
        "ack_policy": AckPolicy.EXPLICIT,
    },
    "push-deliver-group": {
        "deliver_subject": "deliver.{s}.group",
        "deliver_group": "lakehouse-workers",
        "ack_policy": AckPolicy.ALL,
        "deliver_policy": DeliverPolicy.NEW,
    },
}


def variant(name: str, stream: str, durable: str = "c") -> ConsumerSpec:
    def fill(value: Any) -> Any:
        if isinstance(value, str):
            return value.format(s=stream)
        if isinstance(value, tuple):
            return tuple(fill(v) for v in value)
        return value

    kwargs = {k: fill(v) for k, v in VARIANTS[name].items()}
    return ConsumerSpec(stream=stream, durable=durable, **kwargs)


@pytest.mark.parametrize("name", VARIANTS)
def test_every_declared_consumer_field_reads_back_equal(js, stream, name):
    spec = variant(name, stream.name)
    added = js.consumers.add(spec)
    state = js.consumers.info(stream.name, "c")
    assert read_back(state, spec) == declared(spec)
    assert added.spec == state.spec
    assert state.spec.is_push == spec.is_push


def test_a_fully_declared_consumer_reads_back_identical(js, stream):
    spec = variant("deliver-all-explicit", stream.name)
    assert js.consumers.add(spec).spec == spec


@pytest.mark.parametrize("name", VARIANTS)
def test_reconcile_reports_an_added_consumer_unchanged(js, unique_name, name):
    stream = StreamSpec(unique_name, (f"{unique_name}.>",), storage=Storage.MEMORY)
    topology = Topology(streams=(stream,), consumers=(variant(name, unique_name),))
    try:
        first = reconcile(js, topology)
        second = reconcile(js, topology)
    finally:
        js.streams.delete(unique_name)
    assert [c.action.value for c in first] == ["created", "created"]
    assert [(c.kind, c.action.value, c.diff) for c in second] == [
        ("stream", "unchanged", {}),
        ("consumer", "unchanged", {}),
    ]


def test_each_deliver_policy_delivers_the_right_first_message(js, stream):
    s = stream.name
    publish(js, stream, "a", "b", "a")
    time.sleep(0.01)  # distinct storage times for messages 3 and 4, not a timing assert
    publish(js, stream, "b", "c.x")
    start_time = js.streams.get_message(s, 4).time
    specs = {
        "all": ConsumerSpec(s, "all"),
        "last": ConsumerSpec(s, "last", deliver_policy=DeliverPolicy.LAST),
        "new": ConsumerSpec(s, "new", deliver_policy=DeliverPolicy.NEW),
        "by-seq": ConsumerSpec(
            s, "by-seq", deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=2
        ),
        "by-time": ConsumerSpec(
            s, "by-time", deliver_policy=DeliverPolicy.BY_START_TIME, opt_start_time=start_time
        ),
        "last-per-subject": ConsumerSpec(
            s,
            "last-per-subject",
            deliver_policy=DeliverPolicy.LAST_PER_SUBJECT,
            filter_subjects=(f"{s}.a", f"{s}.b"),
        ),
    }
    for spec in specs.values():
        js.consumers.add(spec)
    publish(js, stream, "a")  # seq 6: the first message for deliver policy "new"
    got = {name: fetched_seqs(js, s, name) for name in specs}
    assert got == {
        "all": [1, 2, 3, 4, 5, 6],
        "last": [5, 6],
        "new": [6],
        "by-seq": [2, 3, 4, 5, 6],
        "by-time": [4, 5, 6],
        "last-per-subject": [3, 4, 6],
    }


def test_filter_subjects_single_and_multiple_deliver_only_matching_messages(js, stream):
    s = stream.name
    publish(js, stream, "a", "b", "c.x", "a", "c.y.z")
    js.consumers.add(ConsumerSpec(s, "one", filter_subjects=(f"{s}.a",)))
    js.consumers.add(ConsumerSpec(s, "two", filter_subjects=(f"{s}.b", f"{s}.c.>")))
    assert fetched_seqs(js, s, "one") == [1, 4]
    assert fetched_seqs(js, s, "two") == [2, 3, 5]


def nak_sync(js: JetStreamClient, message: JsMessage) -> None:
    """Naks and waits for the server to confirm, so a redelivery is certain to be queued.

    (`JsMessage.nak` is fire and forget; the server answers a nak sent as a request.)
    """
    js.run(js.nc.request(message._raw.reply, b"-NAK", timeout=5), what="nak")


def test_info_reports_delivered_ack_floor_pending_and_redelivered(js, stream):
    s = stream.name
    publish(js, stream, "a", "a", "a", "a", "a")
    js.consumers.add(ConsumerSpec(s, "c"))
    first, second, third = js.fetch(s, "c", batch=3, expires=0.5)
    first.ack_sync()
    state = js.consumers.info(s, "c")
    assert (state.delivered_stream_seq, state.ack_floor_stream_seq) == (3, 1)
    assert (state.num_pending, state.num_ack_pending, state.num_redelivered) == (2, 2, 0)
    nak_sync(js, second)
    redelivered = js.fetch(s, "c", batch=1, expires=0.5)
    assert [(m.stream_seq, m.redelivered) for m in redelivered] == [(2, True)]
    assert js.consumers.info(s, "c").num_redelivered == 1
    for message in (*redelivered, third):
        message.ack_sync()
    state = js.consumers.info(s, "c")
    assert (state.ack_floor_stream_seq, state.num_ack_pending, state.num_pending) == (3, 0, 2)


def test_ack_policy_none_needs_no_acks_to_move_the_ack_floor(js, stream):
    publish(js, stream, "a", "a")
    js.consumers.add(ConsumerSpec(stream.name, "c", ack_policy=AckPolicy.NONE))
    assert [m.stream_seq for m in js.fetch(stream.name, "c", batch=5, expires=0.5)] == [1, 2]
    state = js.consumers.info(stream.name, "c")
    assert (state.ack_floor_stream_seq, state.num_ack_pending) == (2, 0)


def test_add_of_the_same_spec_twice_returns_the_existing_consumer(js, stream):
    spec = ConsumerSpec(stream.name, "c", description="twice")
    js.consumers.add(spec)
    assert js.consumers.add(spec).spec == js.consumers.info(stream.name, "c").spec


def test_add_over_a_consumer_with_another_config_says_to_update(js, stream):
    js.consumers.add(ConsumerSpec(stream.name, "c", description="first"))
    with pytest.raises(ServerAPIError, match="update") as caught:
        js.consumers.add(ConsumerSpec(stream.name, "c", description="second"))
    assert (caught.value.stream, caught.value.consumer) == (stream.name, "c")
    assert js.consumers.info(stream.name, "c").spec.description == "first"


def test_update_changes_an_editable_setting(js, stream):
    js.consumers.add(ConsumerSpec(stream.name, "c", max_ack_pending=10))
    updated = js.consumers.update(ConsumerSpec(stream.name, "c", max_ack_pending=20))
    assert updated.spec.max_ack_pending == 20


def test_update_of_a_missing_consumer_raises_consumer_not_found(js, stream):
    with pytest.raises(ConsumerNotFoundError, match="'missing'") as caught:
        js.consumers.update(ConsumerSpec(stream.name, "missing"))
    assert caught.value.consumer == "missing"
    assert not js.consumers.exists(stream.name, "missing")


def test_info_of_a_missing_consumer_or_stream_names_what_is_missing(js, stream, unique_name):
    with pytest.raises(ConsumerNotFoundError, match="no consumer 'nope'") as caught:
        js.consumers.info(stream.name, "nope")
    assert (caught.value.stream, caught.value.consumer) == (stream.name, "nope")
    with pytest.raises(StreamNotFoundError, match=f"'{unique_name}_gone'"):
        js.consumers.info(f"{unique_name}_gone", "nope")


def test_delete_removes_the_consumer_and_a_second_delete_raises_not_found(js, stream):
    js.consumers.add(ConsumerSpec(stream.name, "c"))
    js.consumers.delete(stream.name, "c")
    assert not js.consumers.exists(stream.name, "c")
    with pytest.raises(ConsumerNotFoundError):
        js.consumers.delete(stream.name, "c")


def test_list_and_names_return_every_consumer_across_pages_of_256(js, stream):
    created = {f"c{i}" for i in range(260)}
    for name in created:
        js.consumers.add(ConsumerSpec(stream.name, name))
    listed = js.consumers.list(stream.name)
    assert all(isinstance(c, ConsumerState) for c in listed)
    assert sorted(c.name for c in listed) == sorted(created)
    assert sorted(js.consumers.names(stream.name)) == sorted(created)
    assert js.streams.info(stream.name).consumer_count == len(listed)


def test_list_of_a_stream_without_consumers_is_empty(js, stream):
    assert js.consumers.list(stream.name) == []
    assert js.consumers.names(stream.name) == []


def test_pause_stops_deliveries_until_resumed(js, stream):
    publish(js, stream, "a", "a")
    js.consumers.add(ConsumerSpec(stream.name, "c"))
    until = dt.datetime.now(dt.timezone.utc).replace(microsecond=250_000) + dt.timedelta(hours=1)
    paused = js.consumers.pause(stream.name, "c", until)
    assert (paused.paused, paused.pause_until) == (True, until)
    assert js.consumers.info(stream.name, "c").paused
    assert js.fetch(stream.name, "c", batch=2, expires=0.3) == []
    resumed = js.consumers.resume(stream.name, "c")
    assert (resumed.paused, resumed.pause_until) == (False, None)
    assert fetched_seqs(js, stream.name, "c") == [1, 2]


def test_pause_of_a_missing_consumer_raises_consumer_not_found(js, stream):
    until = dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=1)
    with pytest.raises(ConsumerNotFoundError):
        js.consumers.pause(stream.name, "nope", until)


def test_reset_to_a_sequence_makes_the_next_fetch_start_there(js, stream):
    publish(js, stream, "a", "a", "a", "a", "a")
    js.consumers.add(ConsumerSpec(stream.name, "c"))
    assert fetched_seqs(js, stream.name, "c") == [1, 2, 3, 4, 5]
    state = js.consumers.reset(stream.name, "c", 2)
    assert (state.ack_floor_stream_seq, state.delivered_stream_seq) == (1, 1)
    assert (state.num_pending, state.num_ack_pending) == (4, 0)
    assert fetched_seqs(js, stream.name, "c") == [2, 3, 4, 5]


def test_reset_forward_skips_messages(js, stream):
    publish(js, stream, "a", "a", "a", "a", "a")
    js.consumers.add(ConsumerSpec(stream.name, "c"))
    assert js.consumers.reset(stream.name, "c", 4).ack_floor_stream_seq == 3
    assert fetched_seqs(js, stream.name, "c") == [4, 5]


def test_reset_without_a_sequence_redelivers_what_is_unacknowledged(js, stream):
    publish(js, stream, "a", "a", "a")
    js.consumers.add(ConsumerSpec(stream.name, "c"))
    first, *_ = js.fetch(stream.name, "c", batch=3, expires=0.5)
    first.ack_sync()
    state = js.consumers.reset(stream.name, "c")
    assert (state.ack_floor_stream_seq, state.num_ack_pending) == (1, 0)
    assert fetched_seqs(js, stream.name, "c") == [2, 3]


def test_reset_of_a_deliver_last_consumer_is_refused_with_the_reason(js, stream):
    publish(js, stream, "a", "a")
    js.consumers.add(ConsumerSpec(stream.name, "c", deliver_policy=DeliverPolicy.LAST))
    with pytest.raises(ServerAPIError, match="by_start_sequence") as caught:
        js.consumers.reset(stream.name, "c", 1)
    assert (caught.value.consumer, caught.value.seq) == ("c", 1)


def test_reset_of_a_missing_consumer_raises_consumer_not_found(js, stream):
    with pytest.raises(ConsumerNotFoundError, match="'nope'"):
        js.consumers.reset(stream.name, "nope", 1)


@pytest.mark.parametrize(
    "call",
    [
        lambda c, s: c.info(s, "bad.name"),
        lambda c, s: c.info(s, ""),
        lambda c, s: c.delete("a b", "c"),
        lambda c, s: c.list("x>"),
        lambda c, s: c.reset(s, "c", 0),
        lambda c, s: c.reset(s, "c", -3),
        lambda c, s: c.reset(s, "c", 1.5),
        lambda c, s: c.pause(s, "c", dt.datetime.now(dt.timezone.utc) - dt.timedelta(minutes=1)),
        lambda c, s: c.pause(s, "c", dt.datetime(2099, 1, 1)),  # naive
        lambda c, s: c.pause(s, "c", "2099-01-01T00:00:00Z"),
        lambda c, s: c.resume(s, "*"),
    ],
)
def test_invalid_arguments_are_rejected_before_any_request(js, unique_name, call):
    # the stream does not exist, so a request would raise StreamNotFoundError instead
    with pytest.raises(InvalidArgumentError):
        call(js.consumers, unique_name)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"durable": "a.b"},
        {"filter_subjects": ("a..b",)},
        {"deliver_policy": DeliverPolicy.BY_START_SEQUENCE},
        {"opt_start_seq": 3},
        {"deliver_policy": DeliverPolicy.BY_START_SEQUENCE, "opt_start_seq": 0},
        {"deliver_policy": DeliverPolicy.BY_START_TIME},
        {"deliver_policy": DeliverPolicy.BY_START_TIME, "opt_start_time": dt.datetime(2024, 1, 1)},
        {"deliver_policy": DeliverPolicy.LAST_PER_SUBJECT},
        {"ack_wait": 0},
        {"max_ack_pending": 0},
        {"backoff": (1, 2, 3), "max_deliver": 2},
        {"backoff": (1, -2)},
        {"backoff": (1, 2), "ack_wait": 30},
        {"flow_control": True, "idle_heartbeat": 5},
        {"idle_heartbeat": 5},
        {"deliver_subject": "d.x", "flow_control": True},
        {"deliver_subject": "d.x", "max_waiting": 10},
        {"deliver_subject": "d.*"},
        {"deliver_subject": "d.x", "deliver_group": "a b"},
        {"deliver_policy": "sometimes"},
    ],
)
def test_consumer_spec_rejects_what_the_server_would_refuse(kwargs):
    with pytest.raises((InvalidArgumentError, ValueError)):
        ConsumerSpec(**{"stream": "S", "durable": "c", **kwargs})


def test_consumer_spec_normalizes_to_what_the_server_stores():
    spec = ConsumerSpec(
        "S",
        "c",
        filter_subjects="s.a",
        description="",
        max_deliver=0,
        max_ack_pending=-9,
        backoff=[1 / 3],
        deliver_policy="by_start_time",
        opt_start_time=dt.datetime(2024, 1, 1, 2, tzinfo=dt.timezone(dt.timedelta(hours=2))),
    )
    assert (spec.filter_subjects, spec.description) == (("s.a",), None)
    assert (spec.max_deliver, spec.max_ack_pending, spec.backoff) == (-1, -1, (0.333333333,))
    assert spec.opt_start_time == dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    assert spec.opt_start_time.tzinfo is dt.timezone.utc
