"""Keeping the lease while a run works, fencing before writes, and releasing it safely."""

from __future__ import annotations

import json
import logging
import time

import pytest

from pipelines.ingest.errors import LeaseHeldError, LeaseLostError
from pipelines.ingest.lease import LeaseKeeper, acquire_lease, lease_key
from resources.jetstream import KeyValueBucket, KeyValueSpec
from resources.jetstream.errors import BucketNotFoundError
from tests.pipelines.ingest.harness import InjectedCrash, make_ingest, publish_events


@pytest.fixture
def bucket(js, unique_name) -> KeyValueBucket:
    return js.create_key_value(KeyValueSpec(unique_name, history=10))


def take(bucket: KeyValueBucket, holder: str, ttl: float):
    return acquire_lease(bucket, stream="S", consumer="c", holder=holder, ttl=ttl)


def test_kept_lease_outlives_its_ttl_and_keeps_other_runs_out_until_released(bucket):
    keeper = LeaseKeeper(take(bucket, "run-a", ttl=1.0)).start()
    try:
        time.sleep(2.0)  # twice the TTL: only the background renewals keep it
        with pytest.raises(LeaseHeldError):
            take(bucket, "run-b", ttl=1.0)
        keeper.check()
    finally:
        assert keeper.release() is None

    assert take(bucket, "run-b", ttl=1.0).holder == "run-b"


def test_keeper_whose_lease_was_taken_fences_with_lease_lost_and_leaves_the_new_holder(bucket):
    keeper = LeaseKeeper(take(bucket, "run-a", ttl=60)).start()
    taken = {"holder": "run-b", "expires_at": "2999-01-01T00:00:00+00:00"}
    bucket.put(lease_key("S", "c"), json.dumps(taken).encode())

    with pytest.raises(LeaseLostError, match="'run-a' lost the lease on S/c"):
        keeper.fence()
    with pytest.raises(LeaseLostError):
        keeper.check()
    keeper.release()

    assert json.loads(bucket.get(lease_key("S", "c")).value)["holder"] == "run-b"


def test_lease_that_cannot_be_released_is_logged_and_returned_not_raised(bucket, caplog):
    lease = take(bucket, "run-a", ttl=60)
    bucket.destroy()

    with caplog.at_level(logging.WARNING, logger="pipelines.ingest.lease"):
        failed = lease.release()

    assert isinstance(failed, BucketNotFoundError)
    assert "could not release the lease on S/c held by run 'run-a'" in caplog.text


def test_run_error_is_raised_as_it_is_when_releasing_the_lease_fails_too(
    js, spark, unique_name, table_root
):
    ingest = make_ingest(js, unique_name, table_root)
    publish_events(js, unique_name, 20, seed=31)

    def bucket_lost_then_crash(step: str) -> None:
        if step == "committed":
            ingest.checkpoints.destroy()  # the lease's bucket is gone: release must fail
            raise InjectedCrash("injected crash at 'committed'")

    with pytest.raises(InjectedCrash) as raised:
        ingest.run(js, spark, "run-a", hook=bucket_lost_then_crash)

    notes = getattr(raised.value, "__notes__", [])
    assert any("the lease was not released either" in note for note in notes), notes
