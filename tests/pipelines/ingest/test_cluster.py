"""Exactly once on a three-node JetStream cluster, through the loss of every kind of leader.

One cluster and one R3 ingest (R3 stream, its durable consumer, R3 checkpoint bucket) serve
every case. Each case publishes a new batch, runs the engine in this process, and at one of
its steps SIGKILLs the server leading the stream, the consumer or the checkpoint bucket. The
run goes on (its calls retry through the election) or fails; runs follow until one succeeds.
Then the Kafka-EOS style check: the published set equals the bronze set, no duplicates,
equal payload digests, the consumer's ack floor at the stream's last sequence, the
checkpoint committed there. The killed server is started again before the next case.

The time from the kill until a run succeeded is recorded per kill point in
`cluster-recovery.json` in the session's temp dir and printed (`pytest -s`); the only bound
asserted is a correctness one, `RECOVERY_BOUND`, well above the goal of 30 s.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipelines.file_trash.events import FILE_DELETED_SUBJECT, generate_file_deleted_events
from pipelines.ingest.engine import STEPS
from pipelines.ingest.range_reader import RangeReader
from resources.jetstream import JetStreamClient, JetStreamResource, StreamSpec
from resources.jetstream.server.cluster import EmbeddedNatsCluster
from tests.pipelines.ingest.harness import NOW, Ingest, make_ingest

STREAM = "CLUSTERED"
KINDS = ("stream", "consumer", "kv")
RECOVERY_BOUND = 120  # seconds; a run that has not succeeded by then is a failure
BATCH = 100  # messages published per case


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedNatsCluster]:
    with EmbeddedNatsCluster(store_dir=tmp_path_factory.mktemp("cluster")) as nodes:
        yield nodes


@pytest.fixture(scope="module")
def resource(cluster: EmbeddedNatsCluster) -> JetStreamResource:
    return JetStreamResource(servers=cluster.url, connect_timeout=5, request_timeout=5)


@pytest.fixture(scope="module")
def client(resource: JetStreamResource) -> Iterator[JetStreamClient]:
    with resource.client() as js:
        yield js


@pytest.fixture(scope="module")
def ingest(client, spark, tmp_path_factory, published) -> Ingest:
    """The R3 ingest, after one run without a kill (so the first case's time is not the
    first Spark job's warm-up)."""
    root = tmp_path_factory.mktemp("cluster-lakehouse")
    made = make_ingest(
        client,
        STREAM,
        root,
        stream={"replicas": 3},
        checkpoint_bucket="cluster-checkpoints",
        checkpoint_replicas=3,
        readers=2,
        pull_batch=50,
    )
    publish_batch(client, published, seed=999)
    made.run(client, spark, "warm-up")
    return made


@pytest.fixture(scope="module")
def published() -> dict[int, str]:
    """stream seq -> SHA-256 of the payload, for everything the cases published."""
    return {}


@pytest.fixture(scope="module")
def recovery_log(tmp_path_factory) -> Iterator[dict[str, dict]]:
    log: dict[str, dict] = {}
    yield log
    path = Path(tmp_path_factory.getbasetemp()) / "cluster-recovery.json"
    path.write_text(json.dumps(log, indent=2))
    print(f"\nrecovery after a leader kill (kill -> a run succeeded), written to {path}:")
    for point, entry in log.items():
        print(
            f"  {point:<36} {entry['recovery_s']:5.1f}s  killed {entry['node']} "
            f"(leading {', '.join(entry['leading'])}); failed runs: {entry['failed_runs']}; "
            f"run {entry['run_s']}s, check {entry.get('check_s')}s, "
            f"restart {entry.get('restart_s')}s"
        )


def leaders(js: JetStreamClient, ingest: Ingest) -> dict[str, str]:
    """The server name leading each of the ingest's replicated objects."""
    spec = ingest.spec

    def leader(endpoint: str, **names) -> str:
        return js.api_request(endpoint, what=f"read {endpoint}", **names)["cluster"]["leader"]

    return {
        "stream": leader(f"STREAM.INFO.{spec.stream}", stream=spec.stream),
        "consumer": leader(
            f"CONSUMER.INFO.{spec.stream}.{spec.durable}",
            stream=spec.stream,
            consumer=spec.durable,
        ),
        "kv": leader(f"STREAM.INFO.KV_{spec.checkpoint_bucket}", bucket=spec.checkpoint_bucket),
    }


def publish_batch(js: JetStreamClient, published: dict[int, str], seed: int) -> None:
    events = list(generate_file_deleted_events(BATCH, now=NOW, seed=seed))
    acks = js.publish_batch(
        [
            (f"{STREAM}.{FILE_DELETED_SUBJECT}", e.to_json(), {"Nats-Msg-Id": e.eventId})
            for e in events
        ]
    )
    for event, ack in zip(events, acks, strict=True):
        assert not ack.duplicate
        published[ack.seq] = hashlib.sha256(event.to_json()).hexdigest()


def assert_exactly_once(js: JetStreamClient, spark, ingest: Ingest, published: dict[int, str]):
    """Published set == bronze set, no duplicates, equal payload digests; ack floor at the
    stream's last sequence, nothing pending, the checkpoint committed there."""
    rows = spark.read.format("delta").load(ingest.path).select("stream", "seq", "payload")
    rows = rows.collect()
    assert len({(row.stream, row.seq) for row in rows}) == len(rows), "a message landed twice"
    assert {row.stream for row in rows} == {STREAM}
    assert {row.seq: hashlib.sha256(bytes(row.payload)).hexdigest() for row in rows} == published

    last_seq = js.streams.info(STREAM).last_seq
    assert last_seq == max(published)
    consumer = js.consumers.info(STREAM, ingest.spec.durable)
    assert (consumer.ack_floor_stream_seq, consumer.num_pending) == (last_seq, 0)
    checkpoint = ingest.checkpoint()
    assert (checkpoint.committed_end, checkpoint.planned) == (last_seq, None)


def test_range_reader_whose_consumer_server_dies_mid_read_goes_on_from_the_next_message(
    cluster, resource
):
    with resource.client() as js:
        js.streams.add(StreamSpec("READ_R3", ("read.>",), replicas=3))
        js.publish_batch([("read.x", b"%d" % i, {"Nats-Msg-Id": str(i)}) for i in range(3000)])
    seqs: list[int] = []
    dead = None
    with resource.client() as js:
        reader = RangeReader(js, "READ_R3", (), 1, 3000, 100)
        try:
            while (chunk := js.run(reader.next_chunk(200), what="read", timeout=120)) is not None:
                seqs += chunk.seq
                if (
                    len(seqs) >= 600 and dead is None
                ):  # mid-read: kill the server holding the reader's consumer
                    info = js.api_request(
                        f"CONSUMER.INFO.READ_R3.{reader._consumer}", what="read", stream="READ_R3"
                    )
                    dead = info["cluster"]["leader"]
                    cluster.node(dead).kill()
                time.sleep(0.02)  # a caller slower than the server, as Spark is
        finally:
            js.run(reader.close(), what="close")
    assert dead is not None
    cluster.node(dead).start()
    cluster.wait_ready()

    assert seqs == list(range(1, 3001))
    assert reader.restarts >= 1


@pytest.mark.parametrize(
    ("kind", "step"), [(kind, step) for kind in KINDS for step in STEPS], ids=lambda v: v
)
def test_leader_killed_at_each_step_loses_and_duplicates_nothing_and_a_run_soon_succeeds(
    cluster, client, spark, ingest, published, recovery_log, kind, step
):
    seed = 1000 + KINDS.index(kind) * 10 + STEPS.index(step)
    publish_batch(client, published, seed)
    killed: dict = {}

    def kill_leader(reached: str) -> None:
        if reached == step and not killed:
            roles = leaders(client, ingest)
            node = roles[kind]
            cluster.node(node).kill()
            killed.update(
                node=node, at=time.monotonic(), leading=[k for k, n in roles.items() if n == node]
            )

    failures: list[str] = []
    started = time.monotonic()
    hook = kill_leader
    run = 0
    while True:
        run += 1
        try:
            ingest.run(client, spark, f"{kind}-{step}-{run}", hook=hook)
            break
        except Exception as error:  # recorded; the next run must repair what it left
            failures.append(f"{type(error).__name__}: {str(error)[:300]}")
            assert killed, f"the run failed before any kill: {failures[-1]}"
            waited = time.monotonic() - killed["at"]
            assert waited < RECOVERY_BOUND, (
                f"no run succeeded {waited:.0f}s after the kill: {failures}"
            )
            hook = None
            time.sleep(1)
    assert killed, f"the run never reached step {step!r}"
    ended = time.monotonic()
    entry = recovery_log[f"{kind} leader @ {step}"] = {
        "recovery_s": round(ended - killed["at"], 1),
        "node": killed["node"],
        "leading": killed["leading"],
        "failed_runs": len(failures),
        "failures": failures,
        "run_s": round(ended - started, 1),
    }

    assert_exactly_once(client, spark, ingest, published)
    checked = time.monotonic()
    entry["check_s"] = round(checked - ended, 1)

    cluster.node(killed["node"]).start()
    cluster.wait_ready()
    entry["restart_s"] = round(time.monotonic() - checked, 1)
