"""The checkpoint's and the lease's compare-and-set rules, against a real KV bucket."""

from __future__ import annotations

import datetime as dt
import json
import logging
import time

import pytest

from pipelines.ingest.checkpoint import Checkpoint, CheckpointStore, SeqRange, checkpoint_key
from pipelines.ingest.errors import CheckpointConflictError, LeaseHeldError, LeaseLostError
from pipelines.ingest.lease import (
    REPLAY,
    LeaseValue,
    acquire_lease,
    lease_key,
    wait_for_lease,
)
from resources.jetstream import KeyValueBucket, KeyValueSpec

NOW = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.timezone.utc)


def at(moment: dt.datetime):
    """A clock stopped at `moment`."""
    return lambda: moment


@pytest.fixture
def bucket(js, unique_name) -> KeyValueBucket:
    return js.create_key_value(KeyValueSpec(unique_name, history=10))


def take(bucket: KeyValueBucket, holder: str, *, ttl: float = 60, now=NOW, **options):
    return acquire_lease(
        bucket, stream="S", consumer="c", holder=holder, ttl=ttl, clock=at(now), **options
    )


# -- checkpoints -----------------------------------------------------------------------------


def test_checkpoint_of_an_ingest_that_never_ran_is_none(bucket):
    assert CheckpointStore(bucket).load("S", "c") is None


def test_checkpoint_round_trips_committed_planned_and_gaps_through_kv(bucket):
    store = CheckpointStore(bucket)
    gap = SeqRange.new(11, 30, "run-2", NOW)
    checkpoint = Checkpoint("S", "c", 10, 0, "run-1", NOW.isoformat(), gaps=(gap,))
    planned = SeqRange.new(31, 80, "run-3", NOW)

    saved = store.save(checkpoint.with_plan(planned))
    loaded = store.load("S", "c")

    assert loaded == checkpoint.with_plan(planned)
    assert loaded.revision == saved.revision is not None
    assert loaded.planned == planned and loaded.gaps == (gap,)


def test_marking_a_plan_committed_moves_the_position_and_clears_the_plan(bucket):
    store = CheckpointStore(bucket)
    planned = SeqRange.new(1, 100, "run-1", NOW)
    saved = store.save(Checkpoint("S", "c").with_plan(planned))

    store.save(saved.with_commit(planned, 0, None, now=NOW))

    loaded = store.load("S", "c")
    assert (loaded.committed_end, loaded.committed_version, loaded.planned) == (100, 0, None)
    assert (loaded.committed_run_id, loaded.recovered_by) == ("run-1", None)


def test_a_commit_by_another_run_than_the_planner_records_the_recovery(bucket):
    store = CheckpointStore(bucket)
    planned = SeqRange.new(1, 100, "killed-run", NOW)
    saved = store.save(Checkpoint("S", "c").with_plan(planned))

    store.save(saved.with_commit(planned, 0, None, now=NOW, by="recovering-run"))

    loaded = store.load("S", "c")
    assert (loaded.committed_run_id, loaded.recovered_by) == ("killed-run", "recovering-run")
    assert loaded.with_commit(planned, 1, None, now=NOW, by="killed-run").recovered_by is None


def test_saving_a_checkpoint_read_before_another_write_raises_checkpoint_conflict(bucket):
    store = CheckpointStore(bucket)
    store.save(Checkpoint("S", "c", committed_end=10))
    stale = store.load("S", "c")
    store.save(stale.with_plan(SeqRange.new(11, 20, "run-a", NOW)))  # another run moved it

    with pytest.raises(CheckpointConflictError) as raised:
        store.save(stale.with_plan(SeqRange.new(11, 30, "run-b", NOW)))

    assert (raised.value.stream, raised.value.consumer) == ("S", "c")
    assert store.load("S", "c").planned.run_id == "run-a"  # the other run's write stands


def test_creating_a_checkpoint_another_run_created_first_raises_checkpoint_conflict(bucket):
    store = CheckpointStore(bucket)
    store.save(Checkpoint("S", "c", committed_end=5))

    with pytest.raises(CheckpointConflictError):
        store.save(Checkpoint("S", "c", committed_end=0))  # revision None: create only

    assert store.load("S", "c").committed_end == 5


def test_checkpoint_json_with_unknown_fields_and_no_gaps_still_loads(bucket):
    document = {
        "version": 2,
        "stream": "S",
        "consumer": "c",
        "committed": {"end": 42, "delta_version": 3, "owner": "someone"},
        "planned": None,
        "future_field": [1, 2],
    }
    bucket.put(checkpoint_key("S", "c"), json.dumps(document).encode())

    loaded = CheckpointStore(bucket).load("S", "c")

    assert (loaded.committed_end, loaded.committed_version, loaded.gaps) == (42, 3, ())


# -- leases ----------------------------------------------------------------------------------


def test_second_holder_fails_fast_with_lease_held_error_naming_the_holder(bucket):
    take(bucket, "run-a")

    with pytest.raises(LeaseHeldError) as raised:
        take(bucket, "run-b")

    assert raised.value.holder == "run-a"
    assert "'run-a'" in str(raised.value)
    assert (raised.value.stream, raised.value.consumer) == ("S", "c")
    assert raised.value.bucket == bucket.name
    assert f"lease 'lease.S.c' in KV bucket {bucket.name!r}" in str(raised.value)


def test_a_run_waits_for_a_replay_s_lease_up_to_replay_wait_however_short_its_own_wait(bucket):
    """A replay is no run of the ingest, so the run queue does not keep the two apart: a
    run meeting a replay's lease waits for it (`replay_wait`) rather than failing."""
    held = take(bucket, "run-a", ttl=3600)
    with pytest.raises(LeaseHeldError):  # an ingest's lease: `replay_wait` does not apply
        take(bucket, "run-b", replay_wait=3600)
    held.release()
    replay = take(bucket, "replay-run", ttl=3600, work=REPLAY)
    started = time.monotonic()

    with pytest.raises(LeaseHeldError) as raised:
        take(bucket, "run-b", replay_wait=0.3, poll=0.05)
    with pytest.raises(LeaseHeldError) as looked:
        wait_for_lease(bucket, stream="S", consumer="c", replay_wait=0.3, poll=0.05, clock=at(NOW))

    assert time.monotonic() - started >= 0.6  # both waited for the replay, not at once
    assert LeaseValue.from_json(bucket.get(lease_key("S", "c")).value).work == REPLAY
    assert replay.renew(at(NOW)).work == REPLAY  # a renewal keeps what the holder does
    for error in (raised.value, looked.value):
        assert error.holder == "replay-run"
        assert "another replay ('replay-run') is replaying a range of S/c" in str(error)
        assert "this run stops without reading or writing anything" in str(error)
        assert "Wait for the replay to finish" in str(error)


def test_a_replay_behind_a_run_s_lease_is_refused_saying_to_put_its_request_again(bucket):
    take(bucket, "run-a")

    with pytest.raises(LeaseHeldError) as raised:
        take(bucket, "replay-run", work=REPLAY)

    assert raised.value.holder == "run-a"
    assert "another run ('run-a') is ingesting S/c" in str(raised.value)
    assert "this replay stops without reading or writing anything" in str(raised.value)
    assert "Put the replay request again once it is done" in str(raised.value)


@pytest.mark.parametrize(
    ("state", "said"),
    [
        ("FAILURE", "Dagster has that run as FAILURE, yet its lease has not lapsed"),
        ("STARTED", "Dagster has that run as STARTED: it is working, or its process died"),
        (None, "Dagster here has no such run"),
    ],
)
def test_a_run_looks_at_the_lease_without_taking_it_and_says_what_dagster_knows(
    bucket, state, said
):
    def look(now=NOW, **options) -> None:
        wait_for_lease(bucket, stream="S", consumer="c", clock=at(now), **options)

    look()  # free: nothing taken
    assert bucket.try_get(lease_key("S", "c")) is None
    # A short TTL: a run Dagster has as over is waited out until its lease lapses, which the
    # stopped clock never sees, so the look fails after the lease's 0.3 s.
    take(bucket, "run-a", ttl=0.3)
    look(now=NOW + dt.timedelta(seconds=1))  # expired
    with pytest.raises(LeaseHeldError):
        look()  # held, whoever looks (run-a's own, not released: acquire_lease refuses it too)

    with pytest.raises(LeaseHeldError) as raised:
        look(run_state=lambda run_id: state if run_id == "run-a" else "?")

    assert raised.value.holder == "run-a" and said in str(raised.value)


def test_a_lease_whose_holder_dagster_has_as_over_is_waited_out_however_short_the_wait(
    bucket, caplog
):
    """A killed run marked failed cannot renew: its lease lapses within its TTL, so the run
    recovering its range waits for that rather than failing (and never takes it earlier)."""
    acquire_lease(bucket, stream="S", consumer="c", holder="killed-run", ttl=1.5)
    logger = logging.getLogger("test-lease")

    with caplog.at_level(logging.INFO, logger="test-lease"):
        wait_for_lease(
            bucket, stream="S", consumer="c", wait=0, run_state=lambda _: "FAILURE", log=logger
        )

    held = LeaseValue.from_json(bucket.get(lease_key("S", "c")).value)
    assert held.expires_at <= dt.datetime.now(dt.timezone.utc)  # it lapsed; nobody took it early
    assert "run 'killed-run' is FAILURE but its lease holds until" in caplog.text
    acquire_lease(bucket, stream="S", consumer="c", holder="run-b", ttl=60)
    with pytest.raises(LeaseHeldError):  # a working holder's lease is refused at once
        wait_for_lease(bucket, stream="S", consumer="c", run_state=lambda _: "STARTED")


def test_the_wait_for_a_holder_dagster_has_as_over_is_at_most_the_ttl_whatever_the_lease_says(
    bucket,
):
    """A lease written by a host whose clock runs an hour ahead is not waited for an hour."""
    acquire_lease(bucket, stream="S", consumer="c", holder="killed-run", ttl=3600)
    started = time.monotonic()

    with pytest.raises(LeaseHeldError) as raised:
        wait_for_lease(
            bucket, stream="S", consumer="c", run_state=lambda _: "FAILURE", ttl=0.5, poll=0.1
        )

    assert time.monotonic() - started < 30  # not the lease's hour
    assert "yet its lease has not lapsed" in str(raised.value)


def test_a_holder_marked_failed_while_the_run_waits_is_waited_out_too(bucket):
    acquire_lease(bucket, stream="S", consumer="c", holder="killed-run", ttl=3)
    states = iter(["STARTED"])  # then FAILURE: the sensor saw it dead meanwhile

    wait_for_lease(
        bucket,
        stream="S",
        consumer="c",
        wait=0.1,
        poll=0.05,
        run_state=lambda _: next(states, "FAILURE"),
    )

    held = LeaseValue.from_json(bucket.get(lease_key("S", "c")).value)
    assert held.expires_at <= dt.datetime.now(dt.timezone.utc)  # waited until it lapsed


def test_released_lease_can_be_taken_at_once(bucket):
    take(bucket, "run-a").release()

    lease = take(bucket, "run-b")

    assert lease.holder == "run-b"


def test_expired_lease_of_a_dead_holder_is_taken_over(bucket):
    take(bucket, "dead-run", ttl=60)  # never renewed nor released

    lease = take(bucket, "run-b", now=NOW + dt.timedelta(seconds=61))

    assert lease.holder == "run-b"
    held = json.loads(bucket.get(lease_key("S", "c")).value)
    assert held["holder"] == "run-b"


def test_holder_whose_lease_was_taken_over_cannot_renew_it_nor_release_the_new_one(bucket):
    stale = take(bucket, "run-a", ttl=60)
    take(bucket, "run-b", now=NOW + dt.timedelta(seconds=61))

    with pytest.raises(LeaseLostError):
        stale.renew(at(NOW + dt.timedelta(seconds=62)))
    stale.release()

    assert json.loads(bucket.get(lease_key("S", "c")).value)["holder"] == "run-b"


def test_renewing_a_lease_extends_it_and_keeps_others_out(bucket):
    lease = take(bucket, "run-a", ttl=60)

    renewed = lease.renew(at(NOW + dt.timedelta(seconds=50)))

    assert renewed.expires_at == NOW + dt.timedelta(seconds=110)
    assert renewed.revision != lease.revision
    with pytest.raises(LeaseHeldError):  # past the first expiry, within the renewed one
        take(bucket, "run-b", now=NOW + dt.timedelta(seconds=100))


def test_waiting_holder_gets_the_lease_once_the_holder_releases_it(bucket):
    held = acquire_lease(bucket, stream="S", consumer="c", holder="run-a", ttl=3600)
    seen = []

    class ReleasedOnceSeen:
        """The bucket as run-b sees it: run-a finishes right after run-b first finds it."""

        def __getattr__(self, name):
            return getattr(bucket, name)

        def try_get(self, key):
            entry = bucket.try_get(key)
            if entry is not None and not seen:
                seen.append(entry)
                held.release()
            return entry

    lease = acquire_lease(
        ReleasedOnceSeen(), stream="S", consumer="c", holder="run-b", ttl=60, wait=60, poll=0.01
    )

    assert len(seen) == 1
    assert lease.holder == "run-b"


def test_waiting_holder_gives_up_with_lease_held_error_when_the_wait_runs_out(bucket):
    acquire_lease(bucket, stream="S", consumer="c", holder="run-a", ttl=3600)

    with pytest.raises(LeaseHeldError) as raised:
        acquire_lease(bucket, stream="S", consumer="c", holder="run-b", ttl=60, wait=0.2, poll=0.05)

    assert raised.value.holder == "run-a"
