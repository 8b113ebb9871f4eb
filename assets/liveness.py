"""A run's liveness, so that a run whose process died is seen as dead.

Dagster's default run launcher cannot tell whether a run's process is still there, and a
`dagster job execute` run has no launcher at all: a run killed with SIGKILL stays STARTED
for ever, and the run queue and the stream sensor would wait behind it for ever. So a run
of an ingest says it is alive: its bronze step and its contract silver step each start
`keep_run_alive` (once per process: the in-process executor's one, or each step's own
with `in_process: false`), a daemon thread that sets the run's tag `jsl/alive-until` to
"now + TTL" every third of the TTL until Dagster has the run finished (or the process
ends). The stream sensor reads the tag: a run whose tag has passed, and which holds no
unexpired lease on the ingest, is dead, and the sensor marks it failed (`dead_runs`,
`sensors.stream`) before it recovers its range.

The tag lives in Dagster's run storage, beside the run's status: no key to clean up
anywhere, and the UI shows it on the run's page. The run's host writes the time and the
sensor's host compares it with its own clock: their clocks must agree within the TTL's two
thirds (20 s at the default 30 s), as NTP keeps them.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from dagster import AssetKey, DagsterInstance, DagsterRunStatus, RunRecord

from pipelines.ingest.lease import LeaseValue, utc_now

log = logging.getLogger(__name__)

ALIVE_TAG = "jsl/alive-until"  # ISO time until which the run's process is known alive

# Statuses in which a run's own process works; a queued run waits for the queue, and a
# starting one is Dagster's run monitoring's to time out (`start_timeout_seconds`).
WORKING = (DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING)

_beating: dict[str, threading.Thread] = {}  # run id -> its heartbeat thread, in this process
_beating_lock = threading.Lock()


def keep_run_alive(
    instance: DagsterInstance, run_id: str, ttl: float, *, clock: Callable = utc_now
) -> None:
    """Marks the run alive for `ttl` seconds now, and again every `ttl / 3` seconds from a
    daemon thread until Dagster has the run finished. Calling it again for the same run in
    the same process does nothing more. A failed update (the instance's storage busy or
    away) is logged and retried at the next beat, for as long as the process lives.
    An ephemeral instance (`materialize`, `execute_in_process`) has no sensor to read the tag,
    and its in-memory storage is not for two threads: nothing is done there.
    """
    if instance.is_ephemeral:
        return
    with _beating_lock:
        thread = _beating.get(run_id)
        if thread is not None and thread.is_alive():
            return
        try:
            _beat(instance, run_id, ttl, clock)
        except Exception as error:  # the instance's storage, whatever fails there
            log.warning("could not mark run %r alive (trying again): %s", run_id, error)
        thread = threading.Thread(
            target=_beat_until_finished,
            args=(instance, run_id, ttl, clock),
            name=f"alive-{run_id[:8]}",
            daemon=True,
        )
        _beating[run_id] = thread
        thread.start()


def _beat(instance: DagsterInstance, run_id: str, ttl: float, clock: Callable) -> bool:
    """Sets the run's tag; False once Dagster has the run finished (or has no such run)."""
    run = instance.get_run_by_id(run_id)
    if run is None or run.is_finished:
        return False
    until = clock() + dt.timedelta(seconds=ttl)
    instance.add_run_tags(run_id, {ALIVE_TAG: until.isoformat()})
    return True


def _beat_until_finished(instance: DagsterInstance, run_id: str, ttl: float, clock) -> None:
    while True:
        time.sleep(ttl / 3)
        try:
            if not _beat(instance, run_id, ttl, clock):
                break
        except Exception as error:  # the instance's storage, whatever fails there
            log.warning("could not mark run %r alive (trying again): %s", run_id, error)
    with _beating_lock:
        _beating.pop(run_id, None)


def alive_until(record: RunRecord, ttl: float | None = None) -> dt.datetime | None:
    """Until when the run said it is alive (None: it never did). With the `ttl` its beats
    use, a tag written before the run started is not its own (a re-execution copies its
    parent's tags) and counts as None."""
    value = record.dagster_run.tags.get(ALIVE_TAG)
    if not value:
        return None
    until = dt.datetime.fromisoformat(value)
    started = record.start_time
    if ttl is not None and started is not None and until.timestamp() - ttl < started - 1:
        return None  # beaten before this run began: its parent's
    return until


def grace_seconds(ttl: float) -> float:
    """How long after its start a run that never said it is alive is still waited for."""
    return max(60.0, 2 * ttl)


@dataclass(frozen=True)
class DeadRun:
    """A run Dagster has as working whose process is gone, and why that is known."""

    record: RunRecord
    why: str

    @property
    def run_id(self) -> str:
        return self.record.dagster_run.run_id


def dead_runs(
    records: Iterable[RunRecord],
    *,
    now: dt.datetime,
    lease: LeaseValue | None,
    ttl: float,
    bronze: AssetKey,
) -> list[DeadRun]:
    """The runs among `records` whose process is gone.

    A working run (STARTED or CANCELING) is dead when it holds no unexpired `lease` (the
    ingest's) and either its `jsl/alive-until` tag has passed, or it never set the tag
    although it started more than `grace_seconds(ttl)` ago and it executes the ingest's
    `bronze` step (its asset selected, and its step among the steps to execute: a
    re-execution from failure may skip it), which sets the tag first thing; a run without
    that step is never judged by its silence. A tag copied from the run's parent (a
    re-execution) is not its own. `ttl` is the ingest's `lease_ttl`, which its beats use.
    Other statuses are never judged here.
    """
    grace = grace_seconds(ttl)
    dead = []
    for record in records:
        run = record.dagster_run
        if run.status not in WORKING:
            continue
        if lease is not None and lease.holder == run.run_id and lease.expires_at > now:
            continue  # its lease is the stronger sign: it renewed that within a TTL
        until = alive_until(record, ttl)
        if until is not None:
            if until <= now:
                dead.append(DeadRun(record, f"it last said it was alive until {until:%H:%M:%S}"))
            continue
        started = record.start_time
        step = "__".join(bronze.path)  # the asset's op, as Dagster names its step
        selected = (run.asset_selection is None or bronze in run.asset_selection) and (
            run.step_keys_to_execute is None or step in run.step_keys_to_execute
        )
        if selected and started is not None and now.timestamp() - started > grace:
            dead.append(
                DeadRun(record, f"it never said it was alive in the {grace:.0f} s after it began")
            )
    return dead
