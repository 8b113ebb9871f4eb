"""Topology as code: create what is missing, update drift, report, delete only when asked."""

import pytest

from resources.jetstream import (
    ConsumerSpec,
    KeyValueSpec,
    ObjectStoreSpec,
    StreamSpec,
    Topology,
    reconcile,
)
from resources.jetstream.errors import InvalidArgumentError
from resources.jetstream.topology.plan import Action


def actions(changes):
    return {(c.kind, c.name): c.action for c in changes}


def topology_for(name: str, **stream_overrides) -> Topology:
    return Topology(
        streams=(StreamSpec(name, (f"{name}.>",), **stream_overrides),),
        consumers=(ConsumerSpec(name, "reader", filter_subjects=(f"{name}.a",)),),
        kv_buckets=(KeyValueSpec(f"{name}_kv", history=3),),
        object_buckets=(ObjectStoreSpec(f"{name}_obj"),),
    )


def test_first_reconcile_creates_everything_and_second_changes_nothing(js, unique_name):
    topology = topology_for(unique_name)

    first = actions(reconcile(js, topology))
    second = actions(reconcile(js, topology))

    assert set(first.values()) == {Action.CREATED}
    assert len(first) == 4
    assert set(second.values()) == {Action.UNCHANGED}
    assert js.consumers.info(unique_name, "reader").spec.filter_subjects == (f"{unique_name}.a",)


def test_drifted_stream_is_updated_and_the_diff_reported(js, unique_name):
    reconcile(js, topology_for(unique_name))

    changes = reconcile(js, topology_for(unique_name, max_msgs=500))

    [stream_change] = [c for c in changes if c.kind == "stream"]
    assert stream_change.action is Action.UPDATED
    assert stream_change.diff == {"max_msgs": (-1, 500)}
    assert js.streams.info(unique_name).spec.max_msgs == 500


def test_undeclared_consumers_survive_unless_deletion_is_asked_for(js, unique_name):
    topology = topology_for(unique_name)
    reconcile(js, topology)
    js.consumers.add(ConsumerSpec(unique_name, "stray"))

    kept = reconcile(js, topology)
    assert js.consumers.exists(unique_name, "stray")
    assert (("consumer", f"{unique_name}/stray")) not in actions(kept)

    deleted = reconcile(js, topology, delete_undeclared=True)
    assert actions(deleted)[("consumer", f"{unique_name}/stray")] is Action.DELETED
    assert not js.consumers.exists(unique_name, "stray")
    assert js.consumers.exists(unique_name, "reader")


def test_consumer_on_an_undeclared_stream_is_rejected_before_any_io():
    with pytest.raises(InvalidArgumentError, match="'ELSEWHERE'"):
        Topology(consumers=(ConsumerSpec("ELSEWHERE", "reader"),))


@pytest.mark.parametrize("bucket", ["a@b", "café", "a.b", ""])
def test_bucket_specs_reject_names_the_protocol_forbids_before_any_io(bucket):
    with pytest.raises(InvalidArgumentError, match="invalid bucket name"):
        KeyValueSpec(bucket)
    with pytest.raises(InvalidArgumentError, match="invalid bucket name"):
        ObjectStoreSpec(bucket)
