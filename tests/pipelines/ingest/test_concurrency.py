"""Two writers of one bronze table at once (two runs of its ingest, or a run and a replay):
the ingest's lease lets one through, and nothing lands twice.

The first run holds still at its "planned" step (its hook waits on an event) while the
second writer tries, so the overlap is certain rather than a matter of timing. The first
test of each pair runs with the table in a local folder and in a real S3 server, where
Delta's S3SingleDriverLogStore is safe only with one committing driver.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Callable
from dataclasses import replace

import pytest
from delta.tables import DeltaTable

from assets.bronze import land
from pipelines.file_trash.events import generate_file_deleted_events
from pipelines.ingest.bronze import table_version
from pipelines.ingest.checkpoint import CheckpointStore
from pipelines.ingest.engine import IngestResult, run_ingest
from pipelines.ingest.errors import CheckpointConflictError, LeaseHeldError, LeaseLostError
from pipelines.ingest.lease import REPLAY, LeaseValue, acquire_lease, lease_key
from pipelines.ingest.replay import replay_range
from resources.jetstream import JetStreamClient, KeyValueBucket, KeyValueSpec, KvEntry
from tests.pipelines.ingest.harness import (
    NOW,
    Ingest,
    assert_landed_exactly_once,
    make_ingest,
    publish_events,
)

PATIENCE = 300  # seconds a test waits for the other thread before failing (never reached)


class LeaseWatch:
    """A checkpoint bucket that calls `on_held` whenever a run finds the lease taken."""

    def __init__(self, bucket: KeyValueBucket, on_held: Callable[[], None]) -> None:
        self._bucket = bucket
        self._on_held = on_held

    def __getattr__(self, name: str):
        return getattr(self._bucket, name)

    def try_get(self, key: str) -> KvEntry | None:
        entry = self._bucket.try_get(key)
        if entry is not None and key.startswith("lease."):
            self._on_held()
        return entry


class WatchedClient:
    """A client whose checkpoint bucket is a `LeaseWatch` (for `land`, which opens it)."""

    def __init__(self, client: JetStreamClient, on_held: Callable[[], None]) -> None:
        self._client = client
        self._on_held = on_held

    def __getattr__(self, name: str):
        return getattr(self._client, name)

    def create_key_value(self, spec: KeyValueSpec) -> LeaseWatch:
        return LeaseWatch(self._client.create_key_value(spec), self._on_held)


class HeldRun:
    """A run of `ingest` in a thread that stops at "planned" until `go` is set."""

    def __init__(self, jetstream_resource, spark, ingest: Ingest, run_id: str) -> None:
        self.holds = threading.Event()
        self.go = threading.Event()
        self.result: IngestResult | None = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._run, args=(jetstream_resource, spark, ingest, run_id), daemon=True
        )

    def _hook(self, step: str) -> None:
        if step == "planned":
            self.holds.set()
            assert self.go.wait(PATIENCE), "the test never let the held run go on"

    def _run(self, jetstream_resource, spark, ingest: Ingest, run_id: str) -> None:
        try:
            with jetstream_resource.client() as js:  # a client of its own, as another process
                self.result = ingest.run(js, spark, run_id, hook=self._hook)
        except BaseException as error:  # handed to the test thread by finish()
            self.error = error

    def start(self) -> HeldRun:
        self._thread.start()
        assert self.holds.wait(PATIENCE), f"the held run never got to plan: {self.error!r}"
        return self

    def finish(self) -> IngestResult:
        self.go.set()
        self._thread.join(PATIENCE)
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result


def test_second_run_while_the_first_holds_the_lease_fails_fast_naming_the_holder(
    js, spark, jetstream_resource, unique_name, any_root
):
    ingest = make_ingest(js, unique_name, any_root)
    published = publish_events(js, unique_name, 80, seed=21)

    first = HeldRun(jetstream_resource, spark, ingest, "run-a").start()
    try:
        with pytest.raises(LeaseHeldError) as raised:
            ingest.run(js, spark, "run-b")
    finally:
        result = first.finish()

    assert raised.value.holder == "run-a"
    assert "'run-a'" in str(raised.value)
    assert (raised.value.stream, raised.value.consumer) == (unique_name, "bronze")
    assert (result.start, result.end, result.messages) == (1, 80, 80)
    assert_landed_exactly_once(js, spark, ingest, published)
    assert DeltaTable.forPath(spark, ingest.path).history().count() == 1


def test_run_with_lease_wait_queues_behind_the_holder_then_finds_nothing_new(
    js, spark, jetstream_resource, unique_name, table_root
):
    ingest = make_ingest(js, unique_name, table_root)
    published = publish_events(js, unique_name, 80, seed=22)

    first = HeldRun(jetstream_resource, spark, ingest, "run-a").start()
    # Once the second run has seen the lease taken, the first may go on and finish.
    waiting = LeaseWatch(ingest.checkpoints, on_held=first.go.set)
    try:
        second = run_ingest(
            js,
            spark,
            replace(ingest.spec, lease_wait=PATIENCE),
            ingest.path,
            checkpoints=waiting,
            run_id="run-b",
        )
    finally:
        result = first.finish()

    assert (result.start, result.end) == (1, 80)
    assert (second.start, second.messages, second.recovered_from) == (None, 0, None)
    assert second.ack_floor == 80
    assert_landed_exactly_once(js, spark, ingest, published)
    assert DeltaTable.forPath(spark, ingest.path).history().count() == 1


def test_lease_of_a_dead_holder_expires_and_the_next_run_proceeds(
    js, spark, unique_name, table_root
):
    ingest = make_ingest(js, unique_name, table_root, lease_wait=PATIENCE)
    published = publish_events(js, unique_name, 40, seed=23)
    # A holder that took the lease and died: it never renews or releases it.
    acquire_lease(
        ingest.checkpoints, stream=unique_name, consumer="bronze", holder="dead-run", ttl=1
    )

    result = ingest.run(js, spark, "next-run")

    assert (result.start, result.end, result.messages) == (1, 40, 40)
    assert ingest.checkpoints.try_get(lease_key(unique_name, "bronze")) is None  # released
    assert_landed_exactly_once(js, spark, ingest, published)


def test_run_that_lost_its_lease_stops_before_writing_and_the_next_run_finishes_its_range(
    js, spark, unique_name, table_root
):
    ingest = make_ingest(js, unique_name, table_root)
    published = publish_events(js, unique_name, 50, seed=24)
    key = lease_key(unique_name, "bronze")

    def lease_taken_over(step: str) -> None:
        # The run stalled past its TTL and another run took the lease (which has since
        # expired in turn, so the next run below need not wait).
        if step == "planned":
            expired = {"holder": "run-b", "expires_at": "2000-01-01T00:00:00+00:00"}
            ingest.checkpoints.put(key, json.dumps(expired).encode())

    with pytest.raises(LeaseLostError):
        ingest.run(js, spark, "run-a", hook=lease_taken_over)

    assert table_version(spark, ingest.path) is None
    assert js.consumers.info(unique_name, "bronze").ack_floor_stream_seq == 0
    result = ingest.run(js, spark, "run-c")
    assert (result.recovered_from, result.start, result.end) == ("run-a", 1, 50)
    assert_landed_exactly_once(js, spark, ingest, published)


def test_run_whose_checkpoint_moved_underneath_it_fails_the_mark_and_duplicates_nothing(
    js, spark, unique_name, table_root
):
    ingest = make_ingest(js, unique_name, table_root)
    published = publish_events(js, unique_name, 50, seed=25)
    store = CheckpointStore(ingest.checkpoints)

    def another_writer(step: str) -> None:
        if step == "consumer_advanced":  # another run rewrote the checkpoint meanwhile
            store.save(store.load(unique_name, "bronze"))

    with pytest.raises(CheckpointConflictError):
        ingest.run(js, spark, "run-a", hook=another_writer)

    result = ingest.run(js, spark, "run-b")
    assert (result.recovered_from, result.written) == ("run-a", False)
    assert_landed_exactly_once(js, spark, ingest, published)
    assert DeltaTable.forPath(spark, ingest.path).history().count() == 1


# -- a replay beside the ingest --------------------------------------------------------------


def test_a_replay_beside_a_run_is_refused_or_waits_for_its_lease_and_nothing_lands_twice(
    js, spark, jetstream_resource, unique_name, any_root
):
    ingest = make_ingest(js, unique_name, any_root)
    published = publish_events(js, unique_name, 80, seed=26)

    def replay(run_id: str, checkpoints: KeyValueBucket, lease_wait: float):
        return replay_range(
            js, spark, ingest.spec, ingest.path, start=1, end=40, run_id=run_id,
            checkpoints=checkpoints, lease_wait=lease_wait,
        )  # fmt: skip

    first = HeldRun(jetstream_resource, spark, ingest, "run-a").start()
    try:
        with pytest.raises(LeaseHeldError) as refused:
            replay("replay-1", ingest.checkpoints, lease_wait=0)
        written_meanwhile = table_version(spark, ingest.path)
        # Once the second replay has seen the lease taken, the run may go on and finish.
        replayed = replay("replay-2", LeaseWatch(ingest.checkpoints, first.go.set), PATIENCE)
    finally:
        result = first.finish()

    assert written_meanwhile is None  # the refused replay wrote nothing, not even a table
    assert (refused.value.holder, refused.value.bucket) == ("run-a", ingest.checkpoints.name)
    assert "Put the replay request again" in str(refused.value)
    assert (result.start, result.end, result.delta_version) == (1, 80, 0)
    assert (replayed.start, replayed.end, replayed.messages) == (1, 40, 40)
    assert replayed.delta_version == 1  # committed after the run's commit, not beside it
    assert_landed_exactly_once(js, spark, ingest, published)
    rows = DeltaTable.forPath(spark, ingest.path).toDF().collect()
    assert {r.seq for r in rows if r.ingest_run_id == "replay-2"} == set(range(1, 41))
    events = generate_file_deleted_events(80, now=NOW, seed=26)  # what publish_events sent
    pairs = zip(published, events, strict=True)
    sent = {seq: hashlib.sha256(event.to_json()).hexdigest() for seq, event in pairs}
    assert {r.seq: hashlib.sha256(bytes(r.payload)).hexdigest() for r in rows} == sent
    assert ingest.checkpoints.try_get(lease_key(unique_name, "bronze")) is None  # released


def test_a_run_beside_a_replay_waits_for_the_replay_s_lease_however_short_its_lease_wait(
    js, spark, unique_name, table_root
):
    ingest = make_ingest(js, unique_name, table_root)  # lease_wait 0: another run is refused
    published = publish_events(js, unique_name, 40, seed=27)
    key = lease_key(unique_name, "bronze")
    replay = acquire_lease(
        ingest.checkpoints, stream=unique_name, consumer="bronze", holder="replay-run",
        ttl=PATIENCE, work=REPLAY,
    )  # fmt: skip
    seen: list[LeaseValue] = []

    def replay_finishes_once_seen() -> None:
        entry = ingest.checkpoints.try_get(key)
        if entry is not None and not seen:
            seen.append(LeaseValue.from_json(entry.value))
            replay.release()

    landed = land(
        client=WatchedClient(js, replay_finishes_once_seen), session=lambda: spark,
        spec=ingest.spec, path=ingest.path, run_id="run-b", until=None,
        log=logging.getLogger(__name__),
    )  # fmt: skip

    assert [(value.holder, value.work) for value in seen] == [("replay-run", REPLAY)]
    assert landed.result is not None and (landed.result.start, landed.result.end) == (1, 40)
    assert_landed_exactly_once(js, spark, ingest, published)
