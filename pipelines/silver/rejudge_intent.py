"""What a rejudge of silver is about to do, recorded in KV before it writes: its intent.

A rejudge (`pipelines.silver.rejudge`) moves already-processed bronze rows between the silver
tables and the quarantine. Before its first write it records, under the key
`rejudge.<stage>` of the stage's watermark bucket, everything needed to judge the same rows
again: the selection, the stage's watermark position, the pinned version of bronze and of
every table, and the run id and clock its rows are stamped with. The key is deleted (at
its revision) once every write is done, so a key still there names a rejudge that is
running or was interrupted; the next rejudge finishes it first.

The intent is also a lease: `holder` runs it until `expires_at`. It is taken with
create-only (or, once expired or abandoned, a compare-and-set on the revision read),
renewed by compare-and-set right before each table write (`IntentClaim.fence`) and, while
the run lives, every third of its TTL on a background thread (`kept`), and given up at once
(`expires_at` null) when the run fails with an exception, so a rerun takes over without
waiting. A killed run's intent is taken over once its lease expires: the TTL is short (30 s
by default), however long the rejudge's steps take.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pipelines.contract import Contract
from pipelines.silver.rule_columns import silver_rules
from resources.jetstream import KeyValueBucket
from resources.jetstream.errors import JetStreamError, RevisionConflictError

log = logging.getLogger(__name__)

Clock = Callable[[], dt.datetime]


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def intent_key(stage: str) -> str:
    """The KV key of a stage's rejudge intent: `rejudge.<stage>`."""
    return f"rejudge.{stage}"


class RejudgeError(Exception):
    """Root of the rejudge's errors; names the stage and the bucket of its intent."""

    def __init__(self, message: str, *, stage: str, bucket: str) -> None:
        super().__init__(message)
        self.stage = stage
        self.bucket = bucket


class RejudgeInProgressError(RejudgeError):
    """Another rejudge of the stage holds its intent; this one wrote nothing."""

    def __init__(
        self,
        message: str,
        *,
        stage: str,
        bucket: str,
        holder: str,
        expires_at: dt.datetime | None,
    ) -> None:
        super().__init__(message, stage=stage, bucket=bucket)
        self.holder = holder
        self.expires_at = expires_at


class RejudgeLostError(RejudgeError):
    """This run's lease on the intent expired and another run took the intent over."""


def _time(value: str | None) -> dt.datetime | None:
    return None if value is None else dt.datetime.fromisoformat(value)


def _iso(value: dt.datetime | None) -> str | None:
    return None if value is None else value.astimezone(dt.timezone.utc).isoformat()


@dataclass(frozen=True)
class Selection:
    """Which already-processed bronze rows of a stream to judge again.

    Attributes:
        quarantined_only: True: only rows now in quarantine (`jsl quarantine retry`);
            False: every bronze row in range, wherever it is now (`jsl silver rebuild`).
        rules: with `quarantined_only`, only quarantine rows that broke one of these rules.
        event_types: only rows of these event types: for a retry, quarantine rows with that
            `event_type`; for a rebuild, rows of that type under the old contract (in its
            silver table, or quarantined with that `event_type`) or under the current one.
        first_seq: the lowest bronze seq (inclusive); None: from the first.
        last_seq: the highest bronze seq (inclusive); None: up to the stage's watermark.
        since: rows published at or after this instant (timezone-aware).
        until: rows published before this instant (timezone-aware).
    """

    quarantined_only: bool
    rules: tuple[str, ...] = ()
    event_types: tuple[str, ...] = ()
    first_seq: int | None = None
    last_seq: int | None = None
    since: dt.datetime | None = None
    until: dt.datetime | None = None

    def __post_init__(self) -> None:
        for name in ("rules", "event_types"):
            value = getattr(self, name)
            if isinstance(value, str) or not all(isinstance(v, str) and v for v in value):
                raise ValueError(f"{name} must be a sequence of non-empty names, got {value!r}")
            object.__setattr__(self, name, tuple(value))
        if self.rules and not self.quarantined_only:
            raise ValueError(
                f"rules {self.rules!r} select quarantine rows: use them with "
                "quarantined_only=True (a rebuild judges every row in range)"
            )
        for name in ("first_seq", "last_seq"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise ValueError(f"{name} must be an int or None, got {value!r}")
        if None not in (self.first_seq, self.last_seq) and self.first_seq > self.last_seq:
            raise ValueError(f"first_seq {self.first_seq!r} is after last_seq {self.last_seq!r}")
        for name in ("since", "until"):
            value = getattr(self, name)
            if value is not None and value.utcoffset() is None:
                raise ValueError(f"{name} must be timezone-aware (e.g. UTC), got {value!r}")
        if None not in (self.since, self.until) and self.since >= self.until:
            raise ValueError(
                f"since {self.since.isoformat()} is not before until {self.until.isoformat()}"
            )

    def check_names(self, contract: Contract, stream: str) -> None:
        """Checks that the rules and event types selected are those of `contract`, and the
        seqs stream sequences (here, at the start of a retry or rebuild, not where a stored
        intent is read back: one recorded before this check must still decode).

        Args:
            contract: the stream's contract as it is now.
            stream: the stream's name, for the message.

        Raises:
            ValueError: a rule or an event type `contract` does not declare (silver's rules:
                `known_event_type` too when subjects tell event types apart), listing those
                it does; a seq below 1.
        """
        for name in ("first_seq", "last_seq"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} {value!r} is not a stream sequence: they start at 1")
        for kind, selected, names in (
            ("rule", self.rules, [r.name for r in silver_rules(contract)]),
            ("event type", self.event_types, [e.name for e in contract.event_types]),
        ):
            unknown = [name for name in selected if name not in names]
            if unknown:
                since = " (the rows of a rule since removed: select no rule)" * (kind == "rule")
                raise ValueError(
                    f"the contract of stream {stream!r} has no {kind} {unknown[0]!r}; its "
                    f"{kind}s: {', '.join(names)}{since}"
                )

    def to_json(self) -> dict[str, Any]:
        """The selection as JSON values (instants in UTC ISO 8601)."""
        return {
            "quarantined_only": self.quarantined_only,
            "rules": list(self.rules),
            "event_types": list(self.event_types),
            "first_seq": self.first_seq,
            "last_seq": self.last_seq,
            "since": _iso(self.since),
            "until": _iso(self.until),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Selection:
        """The selection `to_json` gave (unknown fields ignored)."""
        return cls(
            bool(data["quarantined_only"]),
            tuple(data.get("rules") or ()),
            tuple(data.get("event_types") or ()),
            data.get("first_seq"),
            data.get("last_seq"),
            _time(data.get("since")),
            _time(data.get("until")),
        )


@dataclass(frozen=True)
class PinnedTable:
    """A table the rejudge may write, at its version when the intent was recorded."""

    target: str  # the event type's name, or "" for the quarantine
    path: str
    version: int


@dataclass(frozen=True)
class Intent:
    """A rejudge of one stage, as recorded before its first write."""

    stage: str
    stream: str
    selection: Selection
    run_id: str  # stamped on every row written (run_id)
    now: dt.datetime  # stamped on every row written (processed_at, quarantined_at)
    upto: int  # the stage's watermark: only rows with seq <= upto are judged
    bronze_version: int
    tables: tuple[PinnedTable, ...]
    source_table: str | None
    contract_version: str = ""  # the contract it was recorded under (`contract_version`)
    holder: str = ""  # the run executing it now
    expires_at: dt.datetime | None = None  # None: abandoned, any run may take it over

    def to_bytes(self) -> bytes:
        return json.dumps(
            {
                "stage": self.stage,
                "stream": self.stream,
                "selection": self.selection.to_json(),
                "run_id": self.run_id,
                "now": _iso(self.now),
                "upto": self.upto,
                "bronze_version": self.bronze_version,
                "tables": [
                    {"target": t.target, "path": t.path, "version": t.version} for t in self.tables
                ],
                "source_table": self.source_table,
                "contract_version": self.contract_version,
                "holder": self.holder,
                "expires_at": _iso(self.expires_at),
            },
            sort_keys=True,
        ).encode()

    @classmethod
    def from_bytes(cls, value: bytes) -> Intent:
        data = json.loads(value)
        return cls(
            data["stage"],
            data["stream"],
            Selection.from_json(data["selection"]),
            data["run_id"],
            dt.datetime.fromisoformat(data["now"]),
            int(data["upto"]),
            int(data["bronze_version"]),
            tuple(
                PinnedTable(t["target"], t["path"], int(t["version"]))
                for t in data.get("tables") or ()
            ),
            data.get("source_table"),
            data.get("contract_version") or "",
            data.get("holder") or "",
            _time(data.get("expires_at")),
        )

    def held(self, now: dt.datetime) -> bool:
        """Whether a run holds the intent at `now` (its lease not expired nor abandoned)."""
        return self.expires_at is not None and self.expires_at > now


@dataclass
class IntentClaim:
    """An intent this run holds; `revision` is what the next write of the key must match."""

    bucket: KeyValueBucket
    intent: Intent
    revision: int
    ttl: float  # seconds
    clock: Clock = field(default=utc_now)
    # fence, abandon and finish, one at a time: `kept`'s thread renews beside the run.
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def key(self) -> str:
        return intent_key(self.intent.stage)

    def fence(self) -> None:
        """Renews the lease for a whole TTL from now: call it right before each write.

        Raises:
            RejudgeLostError: the lease expired and another run took the intent over.
        """
        with self._lock:
            now = self.clock()
            renewed = replace(self.intent, expires_at=now + dt.timedelta(seconds=self.ttl))
            self.revision = self._update(renewed)
            self.intent = renewed

    def abandon(self) -> None:
        """Gives the lease up, keeping the intent for the next run to finish (never raises:
        a failure is logged and the lease then expires by itself)."""
        with self._lock:
            try:
                self.revision = self._update(replace(self.intent, expires_at=None))
            except (RejudgeLostError, JetStreamError) as error:
                log.warning("could not give up the intent %r: %s", self.key, error)

    def finish(self) -> None:
        """Deletes the intent: every write it planned is done.

        Raises:
            RejudgeLostError: another run took the intent over meanwhile.
        """
        with self._lock:
            try:
                self.bucket.delete(self.key, revision=self.revision)
            except RevisionConflictError as error:
                raise self._lost("after its last write") from error

    def _update(self, intent: Intent) -> int:
        try:
            return self.bucket.update(self.key, intent.to_bytes(), revision=self.revision)
        except RevisionConflictError as error:
            raise self._lost("before its next write") from error

    def _lost(self, when: str) -> RejudgeLostError:
        return RejudgeLostError(
            f"stage {self.intent.stage!r}: run {self.intent.holder!r} lost its rejudge intent "
            f"{self.key!r} in bucket {self.bucket.name!r} {when} (its {self.ttl}s lease expired "
            "and another run took it over); that run finishes the rejudge. The lease is renewed "
            "while the run lives: this happens when the NATS servers were unreachable for "
            "longer than it",
            stage=self.intent.stage,
            bucket=self.bucket.name,
        )


@contextlib.contextmanager
def kept(claim: IntentClaim) -> Iterator[IntentClaim]:
    """Renews `claim`'s lease every third of its TTL on a daemon thread while the block runs:
    a rejudge that lives keeps its intent however long a step takes; one killed lets go
    within a TTL. A renewal that finds the intent taken stops renewing (the run's next
    `fence` raises `RejudgeLostError`); one that fails (the KV unreachable) is logged and
    tried again within a second."""
    stop = threading.Event()

    def renew() -> None:
        pause = claim.ttl / 3
        while not stop.wait(pause):
            pause = claim.ttl / 3
            try:
                claim.fence()
            except RejudgeLostError:
                return
            except Exception as error:  # keep renewing while the run lives
                log.warning("could not renew the rejudge intent %r: %s", claim.key, error)
                pause = min(pause, 1.0)  # soon again: the TTL runs on

    thread = threading.Thread(target=renew, name=f"rejudge-{claim.key}", daemon=True)
    thread.start()
    try:
        yield claim
    finally:
        stop.set()
        thread.join()


def _in_progress(bucket: KeyValueBucket, stage: str, other: Intent) -> RejudgeInProgressError:
    if other.expires_at is None:
        state, then = "just given up", "run again"
    else:
        until = other.expires_at.isoformat()
        state, then = f"held until {until}", f"if its process died, run again after {until}"
    return RejudgeInProgressError(
        f"stage {stage!r}: run {other.holder!r} is rejudging rows (intent {intent_key(stage)!r} "
        f"in bucket {bucket.name!r}, {state}); this run changed nothing. Wait for it to "
        f"finish; {then}: the interrupted rejudge is then finished first",
        stage=stage,
        bucket=bucket.name,
        holder=other.holder,
        expires_at=other.expires_at,
    )


def refuse_while_pending(bucket: KeyValueBucket, stage: str) -> None:
    """For the silver stage: raises while a retry or rebuild of `stage` is recorded (held,
    or interrupted and not finished yet), so that a stage run does not insert a row the
    rejudge is moving out of its table.

    Raises:
        RejudgeInProgressError: naming the stage, the bucket and what to do.
    """
    entry = bucket.try_get(intent_key(stage))
    if entry is None:
        return
    pending = Intent.from_bytes(entry.value)
    raise RejudgeInProgressError(
        f"silver stage {stage!r} waits: run {pending.holder!r} is judging processed rows again "
        f"(intent {intent_key(stage)!r} in bucket {bucket.name!r}), and a stage run now could "
        "put back a row it moves. Silver runs again once it finishes; if its process died, "
        "run the same `jsl quarantine retry` or `jsl silver rebuild` again: it finishes the "
        "interrupted one first",
        stage=stage,
        bucket=bucket.name,
        holder=pending.holder,
        expires_at=pending.expires_at,
    )


def refuse_while_held(bucket: KeyValueBucket, stage: str, clock: Clock) -> None:
    """For a rejudge, before it waits for the stage's writer lease: raises at once while a
    living run holds the stage's intent (one interrupted is taken over after, `take_over`).

    Raises:
        RejudgeInProgressError: naming the holder, the stage and the bucket.
    """
    entry = bucket.try_get(intent_key(stage))
    if entry is not None and (pending := Intent.from_bytes(entry.value)).held(clock()):
        raise _in_progress(bucket, stage, pending)


def begin(bucket: KeyValueBucket, intent: Intent, *, ttl: float, clock: Clock) -> IntentClaim:
    """Records a new intent held by `intent.holder` (create-only).

    Raises:
        RejudgeInProgressError: another run recorded an intent for the stage first.
    """
    held = replace(intent, expires_at=clock() + dt.timedelta(seconds=ttl))
    try:
        revision = bucket.create(intent_key(intent.stage), held.to_bytes())
    except RevisionConflictError as error:
        entry = bucket.try_get(intent_key(intent.stage))
        other = held if entry is None else Intent.from_bytes(entry.value)
        raise _in_progress(bucket, intent.stage, other) from error
    return IntentClaim(bucket, held, revision, ttl, clock)


def take_over(
    bucket: KeyValueBucket, stage: str, *, holder: str, ttl: float, clock: Clock
) -> IntentClaim | None:
    """Takes over the stage's pending intent if its lease expired or was given up.

    Returns:
        The claim, or None when the stage has no pending intent.

    Raises:
        RejudgeInProgressError: a run holds the intent (or took it over first).
    """
    entry = bucket.try_get(intent_key(stage))
    if entry is None:
        return None
    pending = Intent.from_bytes(entry.value)
    now = clock()
    if pending.held(now):
        raise _in_progress(bucket, stage, pending)
    taken = replace(pending, holder=holder, expires_at=now + dt.timedelta(seconds=ttl))
    try:
        revision = bucket.update(intent_key(stage), taken.to_bytes(), revision=entry.revision)
    except RevisionConflictError as error:
        raise _in_progress(bucket, stage, taken) from error
    return IntentClaim(bucket, taken, revision, ttl, clock)
