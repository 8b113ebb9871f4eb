"""On a three-node JetStream cluster: replicas declared and never lowered, placement kept,
and calls that ride out a leader's death or report the cluster unavailable (never missing)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from pipelines.file_trash.topology import FILE_TRASH_TOPOLOGY, file_trash_topology
from resources.jetstream import (
    JetStreamClient,
    JetStreamResource,
    KeyValueSpec,
    ObjectStoreSpec,
    StreamSpec,
    Topology,
    reconcile,
)
from resources.jetstream.errors import (
    BucketNotFoundError,
    ClusterUnavailableError,
    InvalidArgumentError,
    NoStreamForSubjectError,
)
from resources.jetstream.server.cluster import EmbeddedNatsCluster
from resources.jetstream.topology.plan import Action


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedNatsCluster]:
    with EmbeddedNatsCluster(store_dir=tmp_path_factory.mktemp("cluster")) as nodes:
        yield nodes


@pytest.fixture
def js(cluster: EmbeddedNatsCluster) -> Iterator[JetStreamClient]:
    resource = JetStreamResource(servers=cluster.url, connect_timeout=5, request_timeout=5)
    with resource.client() as client:
        yield client


@pytest.fixture
def name() -> str:
    return f"C_{uuid.uuid4().hex[:8]}"


def replicas(js: JetStreamClient, stream: str) -> int:
    return js.streams.info(stream).spec.replicas


def leader(js: JetStreamClient, stream: str) -> str:
    return js.api_request(f"STREAM.INFO.{stream}", what="read")["cluster"]["leader"]


def test_declared_bucket_replicas_are_created_raised_and_never_lowered_unless_asked(js, name):
    kv, objects = KeyValueSpec(f"{name}_kv"), ObjectStoreSpec(f"{name}_obj")
    reconcile(js, Topology(kv_buckets=(kv,), object_buckets=(objects,)))
    assert (replicas(js, kv.stream_name), replicas(js, objects.stream_name)) == (1, 1)

    raised = Topology(
        kv_buckets=(KeyValueSpec(kv.bucket, replicas=3),),
        object_buckets=(ObjectStoreSpec(objects.bucket, replicas=3),),
    )
    changes = [str(change) for change in reconcile(js, raised)]
    assert changes == [
        f"kv bucket {kv.bucket!r}: updated (replicas: 1 -> 3)",
        f"object store {objects.bucket!r}: updated (replicas: 1 -> 3)",
    ]
    assert (replicas(js, kv.stream_name), replicas(js, objects.stream_name)) == (3, 3)

    undeclared = Topology(kv_buckets=(kv,), object_buckets=(objects,))
    assert {c.action for c in reconcile(js, undeclared)} == {Action.UNCHANGED}
    lowered = Topology(kv_buckets=(KeyValueSpec(kv.bucket, replicas=1),))
    with pytest.raises(InvalidArgumentError, match="replicas would go down from 3 to 1") as refused:
        reconcile(js, lowered)
    assert refused.value.bucket == kv.bucket
    assert replicas(js, kv.stream_name) == 3

    reconcile(js, lowered, allow_fewer_replicas=True)
    assert replicas(js, kv.stream_name) == 1


def test_file_trash_topology_from_the_environment_is_r3_and_an_undeclared_one_keeps_it(js):
    reconcile(js, file_trash_topology(3))
    kv_streams = [spec.stream_name for spec in FILE_TRASH_TOPOLOGY.kv_buckets]
    for stream in ("FILE_EVENTS", *kv_streams, "OBJ_lakehouse-artifacts"):
        assert replicas(js, stream) == 3, stream
    consumer = js.api_request(
        "CONSUMER.INFO.FILE_EVENTS.lakehouse-bronze", what="read", stream="FILE_EVENTS"
    )
    assert len(consumer["cluster"]["replicas"]) == 2  # the leader and two followers: R3

    # JSL_NATS_REPLICAS is unset in the tests: replicas undeclared, nothing scaled down.
    assert FILE_TRASH_TOPOLOGY.stream("FILE_EVENTS").replicas is None
    changes = reconcile(js, FILE_TRASH_TOPOLOGY)
    assert {c.action for c in changes} == {Action.UNCHANGED}, [str(c) for c in changes]
    assert replicas(js, "FILE_EVENTS") == 3


def test_update_keeps_the_placement_an_operator_set_and_reconcile_keeps_its_replicas(js, name):
    config = {
        "name": name,
        "subjects": [f"{name}.>"],
        "num_replicas": 3,
        "placement": {"cluster": "jsl"},
        "storage": "file",
    }
    js.api_request(f"STREAM.CREATE.{name}", config, what="create", stream=name)

    reconcile(js, Topology(streams=(StreamSpec(name, (f"{name}.>",), description="now"),)))

    found = js.streams.info(name)
    assert found.spec.description == "now"
    assert (found.spec.replicas, found.config["placement"]["cluster"]) == (3, "jsl")


def test_kv_calls_ride_out_the_death_of_the_bucket_leader(js, cluster, name):
    bucket = js.create_key_value(KeyValueSpec(name, history=5, replicas=3))
    revision = bucket.put("k", b"1")
    dead = leader(js, f"KV_{name}")
    cluster.node(dead).kill()
    try:
        revision = bucket.update("k", b"2", revision=revision)  # retried through the election
        assert bucket.get("k").value == b"2"
        assert bucket.create("new", b"x") > revision
        assert leader(js, f"KV_{name}") != dead
    finally:
        cluster.node(dead).start()
        cluster.wait_ready()


def test_kv_call_without_a_quorum_is_cluster_unavailable_naming_the_bucket_not_missing(
    cluster, name
):
    resource = JetStreamResource(
        servers=cluster.url, connect_timeout=5, request_timeout=2, retry_budget=3
    )
    with resource.client() as js:
        bucket = js.create_key_value(KeyValueSpec(name, replicas=3))
        bucket.put("k", b"1")
        survivor = leader(js, f"KV_{name}")
        others = [node for node in cluster.nodes if node.name != survivor]
        for node in others:
            node.kill()
        try:
            with pytest.raises(ClusterUnavailableError) as raised:
                bucket.put("k", b"2")
            assert raised.value.bucket == name
            assert f"bucket {name!r} had no leader that answered" in str(raised.value)
            assert "a majority of its replicas' servers" in str(raised.value)
        finally:
            for node in others:
                node.start()
            cluster.wait_ready()


def test_a_bucket_that_does_not_exist_is_still_reported_missing_at_once_on_a_cluster(js, name):
    bucket = js.create_key_value(KeyValueSpec(name, replicas=3))
    bucket.destroy()

    with pytest.raises(BucketNotFoundError, match="the bucket does not exist"):
        bucket.put("k", b"1")


def test_publishes_ride_out_the_death_of_the_stream_leader_without_duplicates(js, cluster, name):
    js.streams.add(StreamSpec(name, (f"{name}.>",), replicas=3))
    js.publish(f"{name}.a", b"0", msg_id="m-0")
    dead = leader(js, name)
    cluster.node(dead).kill()
    try:
        acks = [js.publish(f"{name}.a", b"%d" % i, msg_id=f"m-{i}") for i in range(1, 4)]
        batch = js.publish_batch([(f"{name}.a", b"4", {"Nats-Msg-Id": "m-4"})])
        assert [ack.seq for ack in acks + batch] == [2, 3, 4, 5]
        assert js.streams.info(name).last_seq == 5
    finally:
        cluster.node(dead).start()
        cluster.wait_ready()


def test_publish_to_a_subject_no_stream_captures_still_fails_at_once_on_a_cluster(js, name):
    with pytest.raises(NoStreamForSubjectError):
        js.publish(f"{name}.nowhere", b"x", msg_id="m-1")
