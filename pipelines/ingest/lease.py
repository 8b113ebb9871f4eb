"""A lease in a JetStream KV bucket: at most one run of an ingest proceeds at a time.

The lease is the key `lease.<stream>.<consumer>` holding `{"holder": run_id, "expires_at": ...}`.
It is taken with create-only (or, once expired, a compare-and-set on the revision that was
read), renewed by compare-and-set, and released by a delete at the held revision. A holder
that died stops blocking others when its lease expires.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from pipelines.ingest.errors import LeaseHeldError, LeaseLostError
from resources.jetstream import KeyValueBucket
from resources.jetstream.errors import RevisionConflictError

Clock = Callable[[], dt.datetime]


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def lease_key(stream: str, consumer: str) -> str:
    return f"lease.{stream}.{consumer}"


@dataclass(frozen=True)
class Lease:
    """A held lease; `revision` is what the next renewal or release must match."""

    bucket: KeyValueBucket
    stream: str
    consumer: str
    holder: str
    ttl: float  # seconds
    expires_at: dt.datetime
    revision: int

    @property
    def key(self) -> str:
        return lease_key(self.stream, self.consumer)

    def renew(self, clock: Clock = utc_now) -> Lease:
        """Extends the lease by its TTL.

        Raises:
            LeaseLostError: the lease expired and another run took it.
        """
        expires_at = clock() + dt.timedelta(seconds=self.ttl)
        try:
            revision = self.bucket.update(
                self.key, _value(self.holder, expires_at), revision=self.revision
            )
        except RevisionConflictError as error:
            raise LeaseLostError(
                f"run {self.holder!r} lost the lease on {self.stream}/{self.consumer} (it "
                f"expired after {self.ttl}s and another run took it); this run stops before "
                "changing anything. Raise the ingest's lease_ttl if runs take longer",
                stream=self.stream,
                consumer=self.consumer,
            ) from error
        return replace(self, expires_at=expires_at, revision=revision)

    def release(self) -> None:
        """Gives the lease up (a no-op if another run has taken it since)."""
        with contextlib.suppress(RevisionConflictError):
            self.bucket.delete(self.key, revision=self.revision)


def _value(holder: str, expires_at: dt.datetime) -> bytes:
    return json.dumps({"holder": holder, "expires_at": expires_at.isoformat()}).encode()


@dataclass(frozen=True)
class LeaseValue:
    """What a lease key holds: who has the lease and until when (`jsl status` reads it too)."""

    holder: str
    expires_at: dt.datetime

    @classmethod
    def from_json(cls, data: bytes) -> LeaseValue:
        doc = json.loads(data)
        return cls(doc["holder"], dt.datetime.fromisoformat(doc["expires_at"]))


def acquire_lease(
    bucket: KeyValueBucket,
    *,
    stream: str,
    consumer: str,
    holder: str,
    ttl: float,
    wait: float = 0.0,
    poll: float = 0.5,
    clock: Clock = utc_now,
) -> Lease:
    """Takes the lease of an ingest for `holder`.

    Args:
        bucket: the checkpoint bucket.
        stream: the ingest's stream.
        consumer: the ingest's durable consumer.
        holder: who takes it (the Dagster run id).
        ttl: seconds until the lease expires unless renewed.
        wait: seconds to wait for a held lease to be released or expire; 0 fails at once.
        poll: seconds between attempts while waiting.
        clock: the current time.

    Raises:
        LeaseHeldError: another holder has the lease and it did not free up within `wait`.
    """
    key = lease_key(stream, consumer)
    deadline = time.monotonic() + wait
    while True:
        now = clock()
        expires_at = now + dt.timedelta(seconds=ttl)
        entry = bucket.try_get(key)
        try:
            if entry is None:
                revision = bucket.create(key, _value(holder, expires_at))
                return Lease(bucket, stream, consumer, holder, ttl, expires_at, revision)
            current = LeaseValue.from_json(entry.value)
            if current.expires_at <= now:
                revision = bucket.update(key, _value(holder, expires_at), revision=entry.revision)
                return Lease(bucket, stream, consumer, holder, ttl, expires_at, revision)
        except RevisionConflictError:
            continue  # someone else moved the key between our read and write: look again
        if time.monotonic() >= deadline:
            raise LeaseHeldError(
                f"another run ({current.holder!r}) is ingesting {stream}/{consumer} until "
                f"{current.expires_at.isoformat()} unless it finishes first; this run stops "
                "without reading anything. Wait for it, or set the ingest's lease_wait to queue "
                "behind it",
                stream=stream,
                consumer=consumer,
                holder=current.holder,
            )
        time.sleep(poll)
