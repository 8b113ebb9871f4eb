"""The stage's writer lease: one run writes a stream's silver tables at a time (no Spark)."""

from __future__ import annotations

import datetime as dt
import json
import logging
import threading
import time

import pytest

from pipelines.silver.writer import (
    Holder,
    SilverBusyError,
    SilverWriterLostError,
    acquire,
    writer_key,
    writing,
)
from resources.jetstream import KeyValueBucket, KeyValueSpec

STAGE = "silver.orders"


@pytest.fixture
def bucket(js, unique_name) -> KeyValueBucket:
    return js.create_key_value(KeyValueSpec(unique_name, history=10))


def holder_of(bucket: KeyValueBucket) -> Holder | None:
    entry = bucket.try_get(writer_key(STAGE))
    return None if entry is None else Holder.from_bytes(entry.value)


def test_a_second_writer_is_refused_naming_the_holder_and_gets_the_lease_once_released(bucket):
    with writing(bucket, STAGE, holder="stage-1", what="silver stage run") as lease:
        assert holder_of(bucket).holder == "stage-1"
        with pytest.raises(SilverBusyError) as refused:
            acquire(bucket, STAGE, holder="retry-1", what="quarantine retry", wait=0)
        lease.fence()

    error = refused.value
    assert (error.stage, error.bucket, error.holder) == (STAGE, bucket.name, "stage-1")
    message = str(error)
    assert f"run 'stage-1' (silver stage run) writes its tables (lease 'writer.{STAGE}'" in message
    assert f"in bucket {bucket.name!r}" in message and "wrote nothing" in message
    assert holder_of(bucket) is None  # released
    acquire(bucket, STAGE, holder="retry-1", what="quarantine retry", wait=0).release()


def test_a_writer_waits_for_the_holder_to_finish_then_writes(bucket, caplog):
    first = acquire(bucket, STAGE, holder="stage-1", what="silver stage run")
    threading.Timer(1.0, first.release).start()

    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="pipelines.silver.writer"):
        second = acquire(
            bucket, STAGE, holder="retry-1", what="quarantine retry", wait=30, poll=0.1
        )
    try:
        assert 0.5 < time.monotonic() - started < 30
        assert holder_of(bucket).holder == "retry-1"
        assert "waiting up to 30 s for run 'stage-1' (silver stage run)" in caplog.text
    finally:
        second.release()


def test_a_living_writer_keeps_its_lease_past_its_ttl_and_a_killed_one_lets_go(bucket):
    with writing(bucket, STAGE, holder="stage-1", what="silver stage run", ttl=0.6):
        time.sleep(1.5)  # more than twice the TTL: the background renewals keep it
        with pytest.raises(SilverBusyError):
            acquire(bucket, STAGE, holder="stage-2", what="silver stage run", wait=0)

    # A killed holder: its lease stays until it lapses, then the next run takes it over.
    now = dt.datetime.now(dt.timezone.utc)
    dead = Holder("killed", "silver stage run", now + dt.timedelta(seconds=60))
    bucket.put(writer_key(STAGE), dead.to_bytes())
    with pytest.raises(SilverBusyError):
        acquire(bucket, STAGE, holder="stage-2", what="silver stage run", wait=0)
    later = now + dt.timedelta(seconds=61)
    taken = acquire(bucket, STAGE, holder="stage-2", what="x", wait=0, clock=lambda: later)
    assert holder_of(bucket).holder == "stage-2"
    taken.release()


def test_a_writer_whose_lease_was_taken_stops_before_its_next_write(bucket):
    lease = acquire(bucket, STAGE, holder="stage-1", what="silver stage run", ttl=60)
    far = dt.datetime(2999, 1, 1, tzinfo=dt.timezone.utc)
    bucket.put(writer_key(STAGE), Holder("stage-2", "silver stage run", far).to_bytes())

    with pytest.raises(SilverWriterLostError, match="'stage-1' lost its writer lease"):
        lease.fence()
    with pytest.raises(SilverWriterLostError):
        lease.fence()
    lease.release()  # leaves the new holder's lease alone

    assert json.loads(bucket.get(writer_key(STAGE)).value)["holder"] == "stage-2"
