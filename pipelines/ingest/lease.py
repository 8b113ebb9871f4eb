"""A lease in a JetStream KV bucket: at most one writer of an ingest's bronze table at a time.

The lease is the key `lease.<stream>.<consumer>` holding `{"holder": run_id, "expires_at": ...,
"work": "ingest", "replay" or "maintenance"}`. Every writer of the ingest's bronze table takes
it: the ingest's runs, its replays (`replay.py`) and Delta maintenance
(`pipelines.wiring.maintenance`), so one Spark driver at a time commits to the table, which
Delta's default LogStore on S3 needs (docs/deploy.md). A replay or maintenance is not a run
of the ingest, so the run queue does not keep them apart: a run waits up to `REPLAY_WAIT`
for their lease, however short its own `wait`, and they wait for any holder. It is
taken with create-only (or, once expired, a compare-and-set on the revision that was
read), renewed by compare-and-set, and released by a delete at the held revision. A holder
that died stops blocking others when its lease expires, so the TTL is short (30 s by default)
and a working run keeps its lease with a `LeaseKeeper`: a background thread renews it every
third of the TTL, and `fence()` renews it right before a write that nothing else protects.
Every KV call retries through a cluster's leader elections (the client's retry budget), and
a release that still fails is logged, never raised over the run's own outcome.

`wait_for_lease` looks without taking: a run checks it before it starts Spark, so a run that
cannot ingest learns it in a moment, with no JVM started, and its error says what Dagster
knows of the holder's run (`RunState`). A holder Dagster has as over is waited out until its
lease lapses, so a run that recovers a killed run's range right after the kill lands it.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from pipelines.ingest.errors import LeaseHeldError, LeaseLostError
from resources.jetstream import KeyValueBucket
from resources.jetstream.errors import JetStreamError, RevisionConflictError

log = logging.getLogger(__name__)

Clock = Callable[[], dt.datetime]
# What Dagster knows of a lease holder's run: its status (`SUCCESS`, `FAILURE`, `STARTED`,
# ...), or None for a run the instance does not have.
RunState = Callable[[str], str | None]
_OVER = ("SUCCESS", "FAILURE", "CANCELED")
# What a lease's holder does with the table (`LeaseValue.work`).
INGEST, REPLAY, MAINTENANCE = "ingest", "replay", "maintenance"
# Seconds a run waits, at most, for a lease a replay holds (one piece of a replay's range)
# or maintenance (OPTIMIZE and VACUUM of the table).
REPLAY_WAIT = 600.0


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


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
    work: str = INGEST  # what the holder does with the table: INGEST, REPLAY or MAINTENANCE

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
                self.key, _value(self.holder, expires_at, self.work), revision=self.revision
            )
        except RevisionConflictError as error:
            raise LeaseLostError(
                f"{_doer(self.work)} {self.holder!r} lost the lease on {self.stream}/"
                f"{self.consumer} (it was not renewed within its {self.ttl}s TTL and another "
                f"run took it); this {_doer(self.work)} stops before changing anything more, "
                + {
                    REPLAY: "and its range is not replaced: put the replay request again. ",
                    MAINTENANCE: "and the table stays as it was: run the maintenance again. ",
                }.get(self.work, "and the next run finishes its range. ")
                + "If renewals are slow here (a NATS cluster electing leaders), raise the "
                "ingest's lease_ttl",
                stream=self.stream,
                consumer=self.consumer,
            ) from error
        return replace(self, expires_at=expires_at, revision=revision)

    def release(self) -> JetStreamError | None:
        """Gives the lease up (a no-op if another run has taken it since).

        The delete retries through leader elections (the client's retry budget). If it still
        fails, the failure is logged as a warning and returned, never raised: the lease then
        expires by itself at `expires_at`, and the run's own outcome (or error) stands.

        Returns:
            None once released, or the error that kept it from being released.
        """
        try:
            self.bucket.delete(self.key, revision=self.revision)
        except RevisionConflictError:
            return None  # another run took it over after it expired
        except JetStreamError as error:
            log.warning(
                "could not release the lease on %s/%s held by run %r (%s); it expires by "
                "itself at %s",
                self.stream,
                self.consumer,
                self.holder,
                error,
                self.expires_at.isoformat(),
            )
            return error
        return None


def _value(holder: str, expires_at: dt.datetime, work: str) -> bytes:
    doc = {"holder": holder, "expires_at": expires_at.isoformat(), "work": work}
    return json.dumps(doc).encode()


@dataclass(frozen=True)
class LeaseValue:
    """What a lease key holds: who has the lease, until when, and for what (`jsl status`
    reads it too; a value written before `work` existed is an ingest's)."""

    holder: str
    expires_at: dt.datetime
    work: str = INGEST

    @classmethod
    def from_json(cls, data: bytes) -> LeaseValue:
        doc = json.loads(data)
        expires_at = dt.datetime.fromisoformat(doc["expires_at"])
        return cls(doc["holder"], expires_at, doc.get("work", INGEST))


def _patience(current: LeaseValue, wait: float, replay_wait: float) -> float:
    """Seconds to wait for `current`'s holder: `wait`, or `replay_wait` if longer and a
    replay or maintenance holds it."""
    return max(wait, replay_wait) if current.work != INGEST else wait


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
    work: str = INGEST,
    replay_wait: float = 0.0,
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
        work: what the holder does with the table, INGEST, REPLAY or MAINTENANCE (recorded
            in the lease, and what the error advises).
        replay_wait: seconds to wait for a lease a replay or maintenance holds, if longer
            than `wait`.

    Raises:
        LeaseHeldError: another holder has the lease and it did not free up in time.
    """
    key = lease_key(stream, consumer)
    started = time.monotonic()
    while True:
        now = clock()
        expires_at = now + dt.timedelta(seconds=ttl)
        value = _value(holder, expires_at, work)
        entry = bucket.try_get(key)
        try:
            if entry is None:
                revision = bucket.create(key, value)
                return Lease(bucket, stream, consumer, holder, ttl, expires_at, revision, work)
            current = LeaseValue.from_json(entry.value)
            if current.expires_at <= now:
                revision = bucket.update(key, value, revision=entry.revision)
                return Lease(bucket, stream, consumer, holder, ttl, expires_at, revision, work)
        except RevisionConflictError:
            continue  # someone else moved the key between our read and write: look again
        if time.monotonic() - started >= _patience(current, wait, replay_wait):
            raise _held(current, stream, consumer, bucket.name, work)
        time.sleep(poll)


def wait_for_lease(
    bucket: KeyValueBucket,
    *,
    stream: str,
    consumer: str,
    wait: float = 0.0,
    poll: float = 0.5,
    clock: Clock = utc_now,
    run_state: RunState | None = None,
    ttl: float | None = None,
    log: logging.Logger | None = None,
    work: str = INGEST,
    replay_wait: float = 0.0,
) -> None:
    """Returns once the ingest's lease is free or expired, without taking it (`acquire_lease`
    takes it after, and may wait its own `wait` if another run took it in between): a run
    or a replay looks before it starts Spark. A lease held by the looking run itself (a release that
    failed) counts as held, as `acquire_lease` counts it.

    A holder whose run Dagster has as over (SUCCESS, FAILURE, CANCELED: a killed run the
    sensor or the code server marked failed) cannot renew its lease, so the run waits for
    it to lapse (at most `ttl` more, the ingest's lease TTL, whatever time the lease says),
    however short `wait` is; the holder's state is looked up again every few seconds while
    the run waits, and once more before it gives up, so a holder marked failed meanwhile is
    waited out too. A recovery requested
    right after a kill lands instead of failing. The lease is never taken before it lapses,
    since a holder that renewed it right before a write (`LeaseKeeper.fence`) counts on a
    whole TTL, and Dagster may have a run as failed whose process still works.

    Args:
        bucket, stream, consumer, wait, poll, clock, work, replay_wait: as `acquire_lease`'s.
        run_state: what Dagster knows of the holder's run, for the wait and the error (None:
            nothing).
        ttl: the longest extra wait for a holder Dagster has as over (None: until its lease
            says it lapses).
        log: where a wait is reported, once when it starts.

    Raises:
        LeaseHeldError: another holder has the lease and it did not free up in time; the
            message says whether Dagster has the holder's run as over, in progress or
            unknown.
    """
    started = time.monotonic()
    deadline = started + wait  # later for a holder Dagster has as over
    looked: dict[str, str | None] = {}  # holder -> its run's state when last looked up
    looked_at = -LOOK_EVERY  # when Dagster was last asked (monotonic)
    reported = False
    while True:
        entry = bucket.try_get(lease_key(stream, consumer))
        current = None if entry is None else LeaseValue.from_json(entry.value)
        now = clock()
        if current is None or current.expires_at <= now:
            return
        until = max(deadline, started + _patience(current, wait, replay_wait))
        due = time.monotonic() - looked_at >= LOOK_EVERY or time.monotonic() >= until
        if run_state is not None and looked.get(current.holder) not in _OVER and due:
            looked_at = time.monotonic()
            state = looked[current.holder] = _state_of(current.holder, run_state)
            if state in _OVER:  # its process is gone: the lease lapses by itself, soon
                left = (current.expires_at - now).total_seconds()
                left = left if ttl is None else min(left, ttl)
                deadline = max(deadline, time.monotonic() + left + poll)
                until = max(until, deadline)
                if log is not None:
                    log.info(
                        f"{stream}/{consumer}: run {current.holder!r} is {state} but its lease "
                        f"holds until {current.expires_at.isoformat()}; waiting {left:.0f} s "
                        "for it to lapse"
                    )
                    reported = True
        if time.monotonic() >= until:  # the holder was just looked up, if it could be
            known = _holder_known(looked.get(current.holder, CANNOT_TELL), current.work)
            raise _held(current, stream, consumer, bucket.name, work, known)
        if log is not None and not reported:
            log.info(
                f"{stream}/{consumer}: waiting up to {until - started:.0f} s for "
                f"{_doer(current.work)} {current.holder!r}'s lease (held until "
                f"{current.expires_at.isoformat()})"
            )
            reported = True
        time.sleep(poll)


LOOK_EVERY = 2.0  # seconds between two lookups of a lease holder's run while waiting
CANNOT_TELL = ""  # a holder's state when nobody asked Dagster, or the lookup failed


def _state_of(holder: str, run_state: RunState) -> str | None:
    """The holder's run status as Dagster has it (None: no such run; `CANNOT_TELL`: the
    lookup failed, which is logged)."""
    try:
        return run_state(holder)
    except Exception as error:  # the instance's storage, whatever fails there
        log.warning("could not look run %r up in Dagster: %s", holder, error)
        return CANNOT_TELL


def _holder_known(state: str | None, work: str = INGEST) -> str:
    """What the error says of the holder's run, as Dagster knows it (nothing if it cannot
    tell: the error is the lease's, not the instance's); `work` is what the holder does."""
    if state == CANNOT_TELL:
        return ""
    if state is None:
        return " Dagster here has no such run (another instance, or a jsl command, holds it)."
    if state in _OVER:  # waited out until its lease lapsed, which it did not
        return (
            f" Dagster has that run as {state}, yet its lease has not lapsed: it was renewed "
            "since (its process still works, marked failed from outside: stop it, or wait "
            "for it), or the hosts' clocks disagree."
        )
    if work != INGEST:
        return (
            f" Dagster has that run as {state}: the {_doer(work)} is still working (it renews its "
            "lease; a replay whose process died stops renewing, and its lease lapses within "
            "its TTL)."
        )
    return (
        f" Dagster has that run as {state}: it is working, or its process died unseen (the "
        "stream sensor marks such a run failed once its jsl/alive-until tag and its lease "
        "have lapsed, and requests the recovery of its range)."
    )


def _doer(work: str) -> str:
    return {REPLAY: "replay", MAINTENANCE: "maintenance run"}.get(work, "run")


def _held(
    current: LeaseValue, stream: str, consumer: str, bucket: str, work: str, known: str = ""
) -> LeaseHeldError:
    """The error of a run or replay (`work`) that did not get the lease `current` has."""
    doing = {REPLAY: "replaying a range of", MAINTENANCE: "compacting the bronze table of"}
    doing = doing.get(current.work, "ingesting")
    if work == MAINTENANCE:
        remedy = (
            "Run the maintenance again once it is done, or give it a longer lease_wait (its "
            "run config) to queue behind it"
        )
    elif work == REPLAY:
        remedy = (
            "Put the replay request again once it is done, or give the replay a longer "
            "lease_wait (its run config) to queue behind it"
        )
    elif current.work == MAINTENANCE:
        remedy = "Wait for the maintenance to finish (the stream sensor requests this range again)"
    elif current.work == REPLAY:
        remedy = (
            "Wait for the replay to finish (the stream sensor requests this range again), "
            "or replay in smaller pieces (the replay sensor's max_messages_per_run)"
        )
    else:
        remedy = "Wait for it, or set the ingest's lease_wait to queue behind it"
    return LeaseHeldError(
        f"another {_doer(current.work)} ({current.holder!r}) is {doing} {stream}/{consumer} "
        f"until {current.expires_at.isoformat()} unless it finishes first (it holds the "
        f"lease {lease_key(stream, consumer)!r} in KV bucket {bucket!r}); this {_doer(work)} "
        f"stops without reading or writing anything. {remedy}.{known}",
        stream=stream,
        consumer=consumer,
        holder=current.holder,
        bucket=bucket,
    )


class LeaseKeeper:
    """Keeps a run's lease while the run works, and tells the run when it has lost it.

    A daemon thread renews the lease every `interval` seconds (a third of its TTL by
    default). `fence()` renews it at once: called right before a write that nothing else
    protects (moving the consumer), it guarantees the lease is held for a whole TTL from
    then. `check()` raises if a background renewal found the lease taken, or if no renewal
    has succeeded for a TTL (the lease may have expired and been taken meanwhile).

    Examples:
        >>> keeper = LeaseKeeper(acquire_lease(bucket, ...)).start()
        >>> try:
        ...     keeper.fence()  # before the write
        ... finally:
        ...     keeper.release()
    """

    def __init__(
        self, lease: Lease, *, clock: Clock = utc_now, interval: float | None = None
    ) -> None:
        self._lease = lease
        self._clock = clock
        self._interval = interval if interval is not None else lease.ttl / 3
        self._renewed_at = time.monotonic()  # when the lease last got a full TTL
        self._lost: LeaseLostError | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._renew_until_stopped, name=f"lease-{lease.key}", daemon=True
        )

    @property
    def lease(self) -> Lease:
        """The lease as last renewed."""
        return self._lease

    def start(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def fence(self) -> Lease:
        """Renews the lease now; from here the run holds it for a whole TTL.

        Raises:
            LeaseLostError: the lease expired and another run took it.
            JetStreamError: the renewal failed (e.g. `ClusterUnavailableError` after the
                retry budget); the run must not go on, since it cannot know it holds the lease.
        """
        self.check()
        with self._lock:
            try:
                self._lease = self._lease.renew(self._clock)
            except LeaseLostError as lost:
                self._lost = lost
                raise
            self._renewed_at = time.monotonic()
            return self._lease

    def check(self) -> None:
        """Raises `LeaseLostError` if the lease was taken, or not renewed for a whole TTL."""
        if self._lost is not None:
            raise self._lost
        unrenewed = time.monotonic() - self._renewed_at
        if unrenewed >= self._lease.ttl:
            lease = self._lease
            raise LeaseLostError(
                f"run {lease.holder!r} could not renew its lease on {lease.stream}/"
                f"{lease.consumer} for {unrenewed:.0f}s, longer than its TTL ({lease.ttl}s): "
                "another run may have taken it, so this run stops before changing anything "
                "more. Check the NATS servers holding the checkpoint bucket, or raise the "
                "ingest's lease_ttl",
                stream=lease.stream,
                consumer=lease.consumer,
            )

    def release(self) -> JetStreamError | None:
        """Stops renewing and releases the lease (see `Lease.release`; never raises)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        with self._lock:
            if self._lost is not None:
                return None  # another run holds it now
            return self._lease.release()

    def _renew_until_stopped(self) -> None:
        while not self._stop.wait(self._interval):
            with self._lock:
                if self._stop.is_set() or self._lost is not None:
                    return
                try:
                    self._lease = self._lease.renew(self._clock)
                    self._renewed_at = time.monotonic()
                except LeaseLostError as lost:
                    self._lost = lost
                    return
                except JetStreamError as error:  # retried once more at the next interval
                    log.warning("renewing the lease on %s failed: %s", self._lease.key, error)
