"""One writer of a stream's silver tables at a time, on any storage: the stage's writer lease.

A Delta commit is safe beside another driver's only where the storage creates the next
`_delta_log` file atomically if absent: a local disk, HDFS, ADLS and GCS do; S3 does not,
and Delta's default LogStore for `s3a://` keeps commits apart within one Spark driver only.
Every Dagster run and every `jsl` command is a driver of its own, and three kinds of them
write a stream's silver and quarantine tables: the stage's runs
(`pipelines.silver.stage.run_contract_silver`), `jsl quarantine retry` and `jsl silver
rebuild` (`pipelines.silver.rejudge`). Each holds the stage's writer lease from before its
first write (a table created or evolved included) to after its last.

The lease is the key `writer.<stage>` in the stage's watermark bucket, holding
`{"holder", "what", "expires_at"}`, kept as an ingest's lease is (`pipelines.ingest.lease`):
created only if absent, taken over once expired, renewed by compare-and-set every third of
its TTL on a daemon thread while the run lives and right before each write (`fence`), and
deleted at its revision at the end. A run that finds it held waits up to `wait` seconds for
it, then stops with `SilverBusyError`, having written nothing. A killed holder stops
blocking others once its TTL lapses (30 s by default).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

from pipelines.ingest.lease import Clock, utc_now
from resources.jetstream import KeyValueBucket
from resources.jetstream.errors import JetStreamError, RevisionConflictError

log = logging.getLogger(__name__)

DEFAULT_TTL = 30.0  # seconds
DEFAULT_WAIT = 120.0  # seconds a writer waits for another's lease before it stops


def writer_key(stage: str) -> str:
    """The KV key of a stage's writer lease: `writer.<stage>`."""
    return f"writer.{stage}"


class SilverWriterError(Exception):
    """Root of the writer lease's errors; names the stage and the bucket of its lease."""

    def __init__(self, message: str, *, stage: str, bucket: str) -> None:
        super().__init__(message)
        self.stage = stage
        self.bucket = bucket


class SilverBusyError(SilverWriterError):
    """Another run writes the stage's tables, and did not finish within the wait."""

    def __init__(self, message: str, *, stage: str, bucket: str, holder: str) -> None:
        super().__init__(message, stage=stage, bucket=bucket)
        self.holder = holder


class SilverWriterLostError(SilverWriterError):
    """This run's writer lease lapsed and another run took it; this run writes no more."""


@dataclass(frozen=True)
class Holder:
    """What the lease key holds: the run, what it does, and until when."""

    holder: str
    what: str
    expires_at: dt.datetime

    def to_bytes(self) -> bytes:
        return json.dumps(
            {"holder": self.holder, "what": self.what, "expires_at": self.expires_at.isoformat()}
        ).encode()

    @classmethod
    def from_bytes(cls, value: bytes) -> Holder:
        data = json.loads(value)
        return cls(
            data["holder"], data.get("what", ""), dt.datetime.fromisoformat(data["expires_at"])
        )


class WriterLease:
    """The stage's writer lease, held by this run (and renewed on a daemon thread) until
    `release`."""

    def __init__(
        self,
        bucket: KeyValueBucket,
        stage: str,
        held: Holder,
        revision: int,
        ttl: float,
        clock: Clock,
    ) -> None:
        self.bucket, self.stage, self.ttl, self._clock = bucket, stage, ttl, clock
        self._held, self._revision = held, revision
        self._lost: SilverWriterLostError | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._keep, name=writer_key(stage), daemon=True)
        self._thread.start()

    @property
    def key(self) -> str:
        return writer_key(self.stage)

    def fence(self) -> None:
        """Renews the lease for a whole TTL from now: call it right before each write.

        Raises:
            SilverWriterLostError: the lease lapsed and another run took it.
            JetStreamError: the renewal failed (the KV unreachable after the client's
                retries); the run must not write, since it cannot know it holds the lease.
        """
        with self._lock:
            if self._lost is not None:
                raise self._lost
            self._renew()

    def release(self) -> None:
        """Stops renewing and deletes the lease at its revision (never raises: a failure is
        logged, and the lease then lapses by itself)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        with self._lock:
            if self._lost is not None:
                return
            try:
                self.bucket.delete(self.key, revision=self._revision)
            except RevisionConflictError:
                pass  # another run took it over after it lapsed
            except JetStreamError as error:
                log.warning(
                    "could not release the silver writer lease %r in bucket %r (%s); it "
                    "lapses by itself at %s",
                    self.key,
                    self.bucket.name,
                    error,
                    self._held.expires_at.isoformat(),
                )

    def _renew(self) -> None:
        held = Holder(
            self._held.holder, self._held.what, self._clock() + dt.timedelta(seconds=self.ttl)
        )
        try:
            self._revision = self.bucket.update(self.key, held.to_bytes(), revision=self._revision)
        except RevisionConflictError as error:
            self._lost = SilverWriterLostError(
                f"silver stage {self.stage!r}: run {held.holder!r} lost its writer lease "
                f"{self.key!r} in bucket {self.bucket.name!r} (not renewed within its "
                f"{self.ttl:g} s TTL, and another run took it); this run writes nothing more. "
                "What it wrote is whole (each write is one Delta commit): run it again. This "
                "happens when the NATS servers were unreachable for longer than the TTL",
                stage=self.stage,
                bucket=self.bucket.name,
            )
            raise self._lost from error
        self._held = held

    def _keep(self) -> None:
        pause = self.ttl / 3
        while not self._stop.wait(pause):
            pause = self.ttl / 3
            with self._lock:
                if self._stop.is_set() or self._lost is not None:
                    return
                try:
                    self._renew()
                except SilverWriterLostError:
                    return
                except JetStreamError as error:  # tried again soon: the TTL runs on
                    log.warning("could not renew the silver writer lease %r: %s", self.key, error)
                    pause = min(pause, 1.0)


def acquire(
    bucket: KeyValueBucket,
    stage: str,
    *,
    holder: str,
    what: str,
    ttl: float = DEFAULT_TTL,
    wait: float = DEFAULT_WAIT,
    poll: float = 0.5,
    clock: Clock = utc_now,
) -> WriterLease:
    """Takes the stage's writer lease for `holder`, waiting up to `wait` seconds for another
    holder to release it or let it lapse, and starts renewing it.

    Args:
        bucket: the stage's watermark bucket.
        stage: the silver stage (`pipelines.silver.stage.stage_name`).
        holder: the run id.
        what: what the run does, for another run's message (`silver stage run`, `jsl
            quarantine retry`, ...).
        ttl: seconds the lease lasts from its last renewal.
        wait: seconds to wait for a held lease; 0 stops at once.
        poll: seconds between two looks while waiting.
        clock: the current time.

    Raises:
        SilverBusyError: another run held the lease for the whole wait; this one wrote
            nothing.
    """
    key = writer_key(stage)
    deadline = time.monotonic() + wait
    waited = False
    while True:
        now = clock()
        held = Holder(holder, what, now + dt.timedelta(seconds=ttl))
        entry = bucket.try_get(key)
        current = None if entry is None else Holder.from_bytes(entry.value)
        try:
            if entry is None:
                revision = bucket.create(key, held.to_bytes())
            elif current.expires_at <= now:
                revision = bucket.update(key, held.to_bytes(), revision=entry.revision)
            else:
                revision = None
        except RevisionConflictError:
            continue  # another run moved the key between the look and the write: look again
        if revision is not None:
            return WriterLease(bucket, stage, held, revision, ttl, clock)
        if time.monotonic() >= deadline:
            raise SilverBusyError(
                f"silver stage {stage!r}: run {current.holder!r} ({current.what or 'a writer'}) "
                f"writes its tables (lease {key!r} in bucket {bucket.name!r}, held until "
                f"{current.expires_at.isoformat()}); this run waited {wait:g} s and wrote "
                "nothing. Run it again once that run ends; a killed holder lets go within "
                f"{ttl:g} s",
                stage=stage,
                bucket=bucket.name,
                holder=current.holder,
            )
        if not waited:  # a warning, so that a `jsl` command shows it too
            log.warning(
                "silver stage %r: waiting up to %g s for run %r (%s) to finish writing",
                stage,
                wait,
                current.holder,
                current.what,
            )
            waited = True
        time.sleep(poll)


@contextlib.contextmanager
def writing(
    bucket: KeyValueBucket,
    stage: str,
    *,
    holder: str,
    what: str,
    ttl: float = DEFAULT_TTL,
    wait: float = DEFAULT_WAIT,
    clock: Clock = utc_now,
) -> Iterator[WriterLease]:
    """Holds the stage's writer lease while the block runs (`acquire`'s arguments), and
    releases it after, whatever happened."""
    lease = acquire(bucket, stage, holder=holder, what=what, ttl=ttl, wait=wait, clock=clock)
    try:
        yield lease
    finally:
        lease.release()
