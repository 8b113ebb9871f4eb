"""Streams and consumers made by other tools (the nats CLI, nats.js, Terraform) stay intact.

Each is created here through the raw JetStream API with settings the project's specs do
not model, then read, listed, updated and reconciled through the project. An update must
change exactly the field asked for: the server's configuration is compared field by field
before and after.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest

from resources.jetstream import (
    ConsumerSpec,
    JetStreamClient,
    KeyValueSpec,
    StreamSpec,
    Topology,
    reconcile,
)
from resources.jetstream.errors import InvalidArgumentError, UpdateNotAppliedError
from resources.jetstream.streams.source import StreamSource
from resources.jetstream.streams.spec import Compression
from resources.jetstream.topology.plan import Action, plan

SECOND = 1_000_000_000  # nanoseconds, as on the wire


def create_stream(js: JetStreamClient, config: dict[str, Any]) -> dict[str, Any]:
    """Creates a stream the way another tool does: raw JSON to `STREAM.CREATE`."""
    answer = js.api_request(f"STREAM.CREATE.{config['name']}", config, what="create")
    return answer["config"]


def stream_config(js: JetStreamClient, name: str) -> dict[str, Any]:
    return js.api_request(f"STREAM.INFO.{name}", what="info")["config"]


def create_consumer(js: JetStreamClient, stream: str, config: dict[str, Any]) -> dict[str, Any]:
    request = {"stream_name": stream, "config": config, "action": "create"}
    name = config["durable_name"]
    return js.api_request(f"CONSUMER.CREATE.{stream}.{name}", request, what="create")["config"]


def consumer_config(js: JetStreamClient, stream: str, name: str) -> dict[str, Any]:
    return js.api_request(f"CONSUMER.INFO.{stream}.{name}", what="info")["config"]


def without(config: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in config.items() if k not in keys}


@pytest.fixture
def streams(js: JetStreamClient) -> Iterator[list[str]]:
    """Names of streams to delete after the test (dependants first)."""
    made: list[str] = []
    yield made
    for name in reversed(made):
        if js.streams.exists(name):
            js.streams.delete(name)


def rollup_stream(name: str) -> dict[str, Any]:
    """Every stream setting that goes with roll-ups (which exclude deny_purge)."""
    return {
        "name": name,
        "description": "made by another tool",
        "subjects": [f"{name}.>"],
        "retention": "limits",
        "storage": "file",
        "max_msgs": 10_000,
        "max_bytes": 1 << 24,
        "max_age": 7_200 * SECOND,
        "max_msgs_per_subject": 50,
        "max_msg_size": 65_536,
        "discard": "new",
        "discard_new_per_subject": True,
        "duplicate_window": 60 * SECOND,
        "num_replicas": 1,
        "allow_rollup_hdrs": True,
        "allow_direct": True,
        "compression": "s2",
        "subject_transform": {"src": f"{name}.in.>", "dest": f"{name}.out.>"},
        "republish": {"src": f"{name}.>", "dest": f"re.{name}.>", "headers_only": True},
        "allow_msg_ttl": True,
        "subject_delete_marker_ttl": 60 * SECOND,
        "consumer_limits": {"inactive_threshold": 3_600 * SECOND, "max_ack_pending": 5_000},
        "metadata": {"owner": "natscli", "team": "platform"},
    }


def denying_stream(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "subjects": [f"{name}.>"],
        "deny_delete": True,
        "deny_purge": True,
        "max_age": 3_600 * SECOND,
        "metadata": {"owner": "terraform"},
    }


# field to replace on the spec read back -> (its new value, the wire field that changes)
STREAM_CHANGES: dict[str, tuple[Any, str]] = {
    "max_age": (3_600.0, "max_age"),
    "max_msgs": (500, "max_msgs"),
    "description": ("changed by the lakehouse", "description"),
    "allow_direct": (False, "allow_direct"),
    "compression": (Compression.NONE, "compression"),
    "max_msgs_per_subject": (20, "max_msgs_per_subject"),
    "duplicate_window": (30.0, "duplicate_window"),
}


@pytest.mark.parametrize("field", STREAM_CHANGES)
def test_updating_one_field_of_a_foreign_stream_changes_only_that_field(
    js, unique_name, streams, field
):
    streams.append(unique_name)
    create_stream(js, rollup_stream(unique_name))
    before = stream_config(js, unique_name)
    value, wire = STREAM_CHANGES[field]

    state = js.streams.info(unique_name)
    updated = js.streams.update(dataclasses.replace(state.spec, **{field: value}))

    after = stream_config(js, unique_name)
    assert without(after, wire) == without(before, wire)
    assert after[wire] != before[wire]
    assert getattr(updated.spec, field) == value
    assert updated.config == after


def test_a_setting_the_server_keeps_forced_is_reported_not_silently_dropped(
    js, unique_name, streams
):
    streams.append(unique_name)
    create_stream(js, rollup_stream(unique_name))  # delete markers force roll-ups on
    before = stream_config(js, unique_name)
    state = js.streams.info(unique_name)

    with pytest.raises(
        UpdateNotAppliedError, match=r"allow_rollup=True \(declared False\)"
    ) as caught:
        js.streams.update(dataclasses.replace(state.spec, allow_rollup=False, max_msgs=500))

    assert caught.value.kept == {"allow_rollup": (True, False)}
    after = stream_config(js, unique_name)
    assert without(after, "max_msgs") == without(before, "max_msgs")
    assert after["max_msgs"] == 500


def test_roll_ups_turn_off_where_nothing_forces_them(js, unique_name, streams):
    streams.append(unique_name)
    config = {"name": unique_name, "subjects": [f"{unique_name}.>"], "allow_rollup_hdrs": True}
    before = create_stream(js, {**config, "metadata": {"owner": "natscli"}})

    js.streams.update(dataclasses.replace(js.streams.info(unique_name).spec, allow_rollup=False))

    after = stream_config(js, unique_name)
    assert without(after, "allow_rollup_hdrs") == without(before, "allow_rollup_hdrs")
    assert after["allow_rollup_hdrs"] is False


def test_metadata_keys_are_added_and_changed_never_removed(js, unique_name, streams):
    streams.append(unique_name)
    create_stream(js, rollup_stream(unique_name))
    before = stream_config(js, unique_name)

    js.streams.update(
        StreamSpec(unique_name, (f"{unique_name}.>",), metadata={"team": "data", "tier": "1"})
    )

    after = stream_config(js, unique_name)
    assert without(after, "metadata") == without(before, "metadata")
    assert after["metadata"] == {**before["metadata"], "team": "data", "tier": "1"}
    assert js.streams.info(unique_name).spec.metadata == {
        "owner": "natscli",
        "team": "data",
        "tier": "1",
    }


def test_a_declared_spec_changes_only_what_it_declares(js, unique_name, streams):
    streams.append(unique_name)
    create_stream(js, rollup_stream(unique_name))
    before = stream_config(js, unique_name)

    js.streams.update(StreamSpec(unique_name, (f"{unique_name}.>",), max_age=3_600))

    after = stream_config(js, unique_name)
    assert without(after, "max_age") == without(before, "max_age")
    assert after["max_age"] == 3_600 * SECOND


def test_reconcile_reports_and_changes_only_the_declared_field_that_differs(
    js, unique_name, streams
):
    streams.append(unique_name)
    create_stream(js, rollup_stream(unique_name))
    before = stream_config(js, unique_name)
    declared = StreamSpec(unique_name, (f"{unique_name}.>",), max_age=3_600, replicas=1)

    [change] = reconcile(js, Topology(streams=(declared,)))

    assert change.action is Action.UPDATED
    assert change.diff == {"max_age": (7_200.0, 3_600.0)}
    assert str(change) == f"stream {unique_name!r}: updated (max_age: 7200.0 -> 3600.0)"
    after = stream_config(js, unique_name)
    assert without(after, "max_age") == without(before, "max_age")
    assert [c.action for c in reconcile(js, Topology(streams=(declared,)))] == [Action.UNCHANGED]


def test_a_stream_that_denies_deletes_and_purges_can_still_be_updated(js, unique_name, streams):
    streams.append(unique_name)
    create_stream(js, denying_stream(unique_name))
    before = stream_config(js, unique_name)

    state = js.streams.info(unique_name)
    js.streams.update(dataclasses.replace(state.spec, max_msgs=1_000))

    after = stream_config(js, unique_name)
    assert without(after, "max_msgs") == without(before, "max_msgs")
    assert (after["deny_delete"], after["deny_purge"]) == (True, True)


def test_turning_deny_delete_off_fails_before_any_write_naming_the_field(js, unique_name, streams):
    streams.append(unique_name)
    create_stream(js, denying_stream(unique_name))
    before = stream_config(js, unique_name)
    declared = StreamSpec(unique_name, (f"{unique_name}.>",), max_msgs=5, deny_delete=False)

    with pytest.raises(InvalidArgumentError, match=r"deny_delete .*never be turned off") as caught:
        js.streams.update(declared)
    assert caught.value.stream == unique_name
    with pytest.raises(InvalidArgumentError, match=f"stream {unique_name!r}.*deny_delete"):
        reconcile(js, Topology(streams=(declared,)))
    assert stream_config(js, unique_name) == before


def test_changing_storage_or_leaving_a_work_queue_fails_before_any_write(js, unique_name, streams):
    streams.append(unique_name)
    create_stream(
        js, {"name": unique_name, "subjects": [f"{unique_name}.>"], "retention": "workqueue"}
    )
    before = stream_config(js, unique_name)

    with pytest.raises(InvalidArgumentError, match="storage cannot change"):
        js.streams.update(StreamSpec(unique_name, (f"{unique_name}.>",), storage="memory"))
    with pytest.raises(InvalidArgumentError, match="'workqueue'"):
        js.streams.update(StreamSpec(unique_name, (f"{unique_name}.>",), retention="limits"))
    assert stream_config(js, unique_name) == before


def upstream(js: JetStreamClient, name: str, streams: list[str]) -> str:
    streams.append(name)
    js.streams.add(StreamSpec(name, (f"{name}.>",)))
    for suffix in ("a.1", "a.2", "b.1"):
        js.publish(f"{name}.{suffix}", suffix.encode())
    return name


def test_mirrors_and_sourced_streams_made_elsewhere_list_and_read(js, unique_name, streams):
    origin = upstream(js, unique_name, streams)
    mirror, sourced = f"{origin}_MIR", f"{origin}_SRC"
    streams += [mirror, sourced]
    create_stream(js, {"name": mirror, "mirror": {"name": origin}, "mirror_direct": True})
    create_stream(
        js,
        {
            "name": sourced,
            "subjects": [f"{sourced}.>"],
            "sources": [{"name": origin, "filter_subject": f"{origin}.a.>", "opt_start_seq": 2}],
        },
    )

    listed = {state.name: state for state in js.streams.list()}
    assert {origin, mirror, sourced} <= set(listed)
    assert js.streams.info(mirror).spec.mirror == StreamSource(origin)
    assert js.streams.info(mirror).spec.subjects == ()
    assert js.streams.info(sourced).spec.sources == (
        StreamSource(origin, opt_start_seq=2, filter_subject=f"{origin}.a.>"),
    )
    assert listed[mirror].spec == js.streams.info(mirror).spec


def test_a_mirror_made_elsewhere_updates_and_keeps_its_upstream(js, unique_name, streams):
    origin = upstream(js, unique_name, streams)
    mirror = f"{origin}_MIR"
    streams.append(mirror)
    create_stream(js, {"name": mirror, "mirror": {"name": origin}, "mirror_direct": True})
    before = stream_config(js, mirror)

    state = js.streams.info(mirror)
    js.streams.update(dataclasses.replace(state.spec, max_age=600))

    after = stream_config(js, mirror)
    assert without(after, "max_age") == without(before, "max_age")
    with pytest.raises(InvalidArgumentError, match="mirror's upstream cannot change"):
        js.streams.update(dataclasses.replace(state.spec, mirror=StreamSource(f"{origin}_X")))


def test_declared_mirrors_and_sources_copy_messages_and_reconcile_unchanged(
    js, unique_name, streams
):
    origin = upstream(js, unique_name, streams)
    mirror, sourced = f"{origin}_MIR", f"{origin}_SRC"
    streams += [mirror, sourced]
    topology = Topology(
        streams=(
            StreamSpec(mirror, mirror=StreamSource(origin)),
            StreamSpec(
                sourced,
                (f"{sourced}.>",),
                sources=(StreamSource(origin, filter_subject=f"{origin}.a.>"),),
                metadata={"owner": "lakehouse"},
            ),
        )
    )

    assert [c.action for c in reconcile(js, topology)] == [Action.CREATED, Action.CREATED]
    assert [(c.action, c.diff) for c in reconcile(js, topology)] == [(Action.UNCHANGED, {})] * 2
    deadline = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=10)
    while dt.datetime.now(dt.timezone.utc) < deadline and (
        js.streams.info(mirror).messages < 3 or js.streams.info(sourced).messages < 2
    ):
        pass
    assert js.streams.info(mirror).messages == 3
    assert js.streams.info(sourced).messages == 2


def test_a_sealed_stream_reads_and_lists(js, unique_name, streams):
    streams.append(unique_name)
    config = create_stream(js, {"name": unique_name, "subjects": [f"{unique_name}.>"]})
    js.api_request(f"STREAM.UPDATE.{unique_name}", {**config, "sealed": True}, what="seal")

    state = js.streams.info(unique_name)

    assert state.config["sealed"] is True
    assert unique_name in {s.name for s in js.streams.list()}


@pytest.mark.parametrize(
    "declared",
    [
        lambda n: StreamSpec(n, (f"{n}.>",), mirror=StreamSource("UP")),
        lambda n: StreamSpec(n),
        lambda n: StreamSpec(n, (), sources=()),
        lambda n: StreamSpec(n, (f"{n}.>",), metadata={"_nats.level": "1"}),
    ],
)
def test_declarations_the_server_would_refuse_are_rejected_before_any_io(unique_name, declared):
    with pytest.raises(InvalidArgumentError, match=repr(unique_name)):
        declared(unique_name)


# -- consumers -------------------------------------------------------------------------------


def pull_consumer(stream: str, name: str) -> dict[str, Any]:
    """A pull consumer with every setting a pull consumer can have."""
    return {
        "durable_name": name,
        "name": name,
        "description": "made by another tool",
        "deliver_policy": "by_start_sequence",
        "opt_start_seq": 1,
        "ack_policy": "explicit",
        "max_deliver": 5,
        "backoff": [1 * SECOND, 2 * SECOND],
        "filter_subjects": [f"{stream}.a", f"{stream}.b"],
        "replay_policy": "instant",
        "sample_freq": "50%",
        "max_waiting": 64,
        "max_ack_pending": 100,
        "max_batch": 100,
        "max_expires": 5 * SECOND,
        "max_bytes": 1 << 20,
        "inactive_threshold": 3_600 * SECOND,
        "headers_only": True,
        "priority_groups": ["jobs"],
        "priority_policy": "overflow",
        "metadata": {"owner": "natscli"},
    }


def push_consumer(stream: str, name: str) -> dict[str, Any]:
    return {
        "durable_name": name,
        "name": name,
        "deliver_subject": f"deliver.{stream}",
        "deliver_group": "workers",
        "deliver_policy": "new",
        "ack_policy": "all",
        "ack_wait": 20 * SECOND,
        "flow_control": True,
        "idle_heartbeat": 5 * SECOND,
        "rate_limit_bps": 1 << 20,
        "headers_only": True,
        "metadata": {"owner": "nats.js"},
    }


@pytest.fixture
def stream(js: JetStreamClient, unique_name: str, streams: list[str]) -> str:
    streams.append(unique_name)
    js.streams.add(StreamSpec(unique_name, (f"{unique_name}.>",)))
    return unique_name


# field to replace on the spec read back -> (its new value, the wire fields that change)
CONSUMER_CHANGES: dict[str, tuple[Any, tuple[str, ...]]] = {
    "max_ack_pending": (500, ("max_ack_pending",)),
    "description": ("changed by the lakehouse", ("description",)),
    "max_deliver": (7, ("max_deliver",)),
    "backoff": ((1.0, 2.0, 3.0), ("backoff",)),
    "filter_subjects": (("{s}.c",), ("filter_subject", "filter_subjects")),
}


@pytest.mark.parametrize("field", CONSUMER_CHANGES)
def test_updating_one_field_of_a_foreign_pull_consumer_changes_only_that_field(js, stream, field):
    create_consumer(js, stream, pull_consumer(stream, "c"))
    pause = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=1)).replace(microsecond=0)
    js.consumers.pause(stream, "c", pause)
    before = consumer_config(js, stream, "c")
    value, wire = CONSUMER_CHANGES[field]
    value = tuple(v.format(s=stream) for v in value) if field == "filter_subjects" else value

    state = js.consumers.info(stream, "c")
    updated = js.consumers.update(dataclasses.replace(state.spec, **{field: value}))

    after = consumer_config(js, stream, "c")
    assert without(after, *wire) == without(before, *wire)
    assert getattr(updated.spec, field) == value
    assert js.consumers.info(stream, "c").paused


def test_a_declared_consumer_spec_changes_only_what_it_declares(js, stream):
    create_consumer(js, stream, pull_consumer(stream, "c"))
    before = consumer_config(js, stream, "c")

    js.consumers.update(ConsumerSpec(stream, "c", max_ack_pending=500, metadata={"tier": "1"}))

    after = consumer_config(js, stream, "c")
    assert without(after, "max_ack_pending", "metadata") == without(
        before, "max_ack_pending", "metadata"
    )
    assert after["max_ack_pending"] == 500
    assert after["metadata"] == {**before["metadata"], "tier": "1"}


def test_a_foreign_push_consumer_keeps_its_settings_on_update(js, stream):
    create_consumer(js, stream, push_consumer(stream, "p"))
    before = consumer_config(js, stream, "p")

    js.consumers.update(ConsumerSpec(stream, "p", description="changed"))

    after = consumer_config(js, stream, "p")
    assert without(after, "description") == without(before, "description")
    assert js.consumers.info(stream, "p").spec.flow_control is True


def test_reconcile_of_a_foreign_consumer_changes_only_the_declared_field(js, stream):
    create_consumer(js, stream, pull_consumer(stream, "c"))
    before = consumer_config(js, stream, "c")
    topology = Topology(
        streams=(StreamSpec(stream, (f"{stream}.>",)),),
        consumers=(ConsumerSpec(stream, "c", max_ack_pending=500),),
    )

    changes = {c.name: c for c in reconcile(js, topology)}

    assert changes[f"{stream}/c"].diff == {"max_ack_pending": (100, 500)}
    after = consumer_config(js, stream, "c")
    assert without(after, "max_ack_pending") == without(before, "max_ack_pending")


@pytest.mark.parametrize(
    ("declared", "field"),
    [
        ({"deliver_policy": "all"}, "deliver_policy"),
        ({"ack_policy": "none"}, "ack_policy"),
        ({"max_waiting": 10}, "max_waiting"),
        ({"deliver_subject": "deliver.x"}, "deliver_subject"),
    ],
)
def test_changing_a_fixed_consumer_setting_fails_before_any_write(js, stream, declared, field):
    create_consumer(js, stream, pull_consumer(stream, "c"))
    before = consumer_config(js, stream, "c")
    spec = ConsumerSpec(stream, "c", max_ack_pending=500, **declared)

    with pytest.raises(InvalidArgumentError, match=f"'c' of stream {stream!r}.*{field}"):
        js.consumers.update(spec)
    topology = Topology(streams=(StreamSpec(stream, (f"{stream}.>",)),), consumers=(spec,))
    with pytest.raises(InvalidArgumentError, match=field):
        reconcile(js, topology)
    assert consumer_config(js, stream, "c") == before


def test_every_consumer_kind_lists_and_reads(js, stream):
    create_consumer(js, stream, pull_consumer(stream, "pull"))
    create_consumer(js, stream, push_consumer(stream, "push"))
    js.api_request(
        f"CONSUMER.CREATE.{stream}",
        {"stream_name": stream, "config": {"ack_policy": "none", "inactive_threshold": SECOND}},
        what="create an ephemeral consumer",
    )

    states = js.consumers.list(stream)

    assert len(states) == 3
    by_name = {s.name: s for s in states}
    assert by_name["pull"].spec.metadata == {"owner": "natscli"}
    assert by_name["pull"].config["priority_groups"] == ["jobs"]
    assert by_name["push"].spec.deliver_group == "workers"


# -- buckets and replicas ----------------------------------------------------------------------


def test_bucket_metadata_is_set_when_the_bucket_is_created(js, unique_name):
    spec = KeyValueSpec(unique_name, metadata={"owner": "lakehouse"})
    try:
        js.create_key_value(spec)
        assert js.streams.info(spec.stream_name).spec.metadata == {"owner": "lakehouse"}
    finally:
        js.key_value(unique_name).destroy()


class _ReplicatedStreams:
    """A stand-in for `client.streams` whose stream has three replicas (a cluster's)."""

    def __init__(self, spec: StreamSpec) -> None:
        self._state = type("State", (), {"spec": spec})()

    def exists(self, name: str) -> bool:
        return True

    def info(self, name: str) -> Any:
        return self._state

    def update(self, spec: StreamSpec) -> None:  # pragma: no cover - must not be reached
        raise AssertionError("reconcile wrote to the server")


def test_reconcile_never_scales_a_stream_down_unless_asked():
    found = StreamSpec.from_json({"name": "S", "subjects": ["s.>"], "num_replicas": 3})
    client = type("Client", (), {"streams": _ReplicatedStreams(found)})()
    declared = Topology(streams=(StreamSpec("S", ("s.>",), replicas=1),))

    with pytest.raises(InvalidArgumentError, match="replicas would go down from 3 to 1"):
        reconcile(client, declared)
    [change] = plan(client, declared, allow_fewer_replicas=True)
    assert change.diff == {"replicas": (3, 1)}
    [undeclared] = plan(client, Topology(streams=(StreamSpec("S", ("s.>",)),)))
    assert undeclared.action is Action.UNCHANGED
