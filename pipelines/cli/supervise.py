"""Run a long-lived command (`dagster dev`) so that stopping it leaves no process behind.

`dagster dev` starts a webserver, a daemon and code servers, and each run a process and a
Spark JVM. Killing `dagster dev` alone orphans all of them; so the command runs in a process
group of its own, and a SIGINT, SIGTERM or SIGHUP received by the caller is forwarded to
that group once (a terminal's Ctrl-C reaches only the caller's group). The caller then waits
a bounded grace period for the command to shut its children down, escalates to SIGTERM and
then SIGKILL of the group, and finally kills whatever of the tree is still alive, including
descendants that left the group.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import psutil

# The command runs in a process group of its own: `process_group=0` from Python 3.11 on, the
# same setpgid(0, 0) through `preexec_fn` on 3.10.
OWN_PROCESS_GROUP: dict = (
    {"process_group": 0} if sys.version_info >= (3, 11) else {"preexec_fn": os.setpgrp}
)

DEFAULT_GRACE = 60.0  # seconds for the command to shut down after the first signal
TERM_GRACE = 10.0  # seconds after the SIGTERM to the group, before SIGKILL
POLL_INTERVAL = 0.5  # seconds
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def signal_group(pgid: int, signum: int) -> None:
    """Sends `signum` to a process group; a group that is gone already is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def stop_group(process: subprocess.Popen, grace: float = 30.0) -> None:
    """Stops a command started in a process group of its own (`start_new_session=True`):
    SIGTERM, up to `grace` seconds to exit (then SIGKILL), then SIGKILL to what is left of
    its group (a daemon's code server, its runs)."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=TERM_GRACE)
    signal_group(process.pid, signal.SIGKILL)


def live_processes(pgid: int, known: Mapping[int, psutil.Process]) -> list[psutil.Process]:
    """The live processes of group `pgid`, plus the `known` descendants still running."""
    found: dict[int, psutil.Process] = {}
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error, OSError):
            if os.getpgid(process.pid) == pgid and process.status() != psutil.STATUS_ZOMBIE:
                found[process.pid] = process
    for pid, process in known.items():
        with contextlib.suppress(psutil.Error):
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                found[pid] = process
    return list(found.values())


class Supervisor:
    """Runs one command in its own process group and stops it and its whole tree.

    Args:
        command: the command and its arguments.
        env: the command's environment.
        cwd: its working directory.
        grace: seconds the command gets to exit after the first forwarded signal.
        term_grace: seconds after the SIGTERM to its group before SIGKILL (and the same
            for leftovers after it exited).
        say: prints a one-line message for the user.

    Examples:
        >>> Supervisor(["dagster", "dev"], env=os.environ, cwd=Path("."), say=print).run()
    """

    def __init__(
        self,
        command: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path,
        say: Callable[[str], None],
        grace: float = DEFAULT_GRACE,
        term_grace: float = TERM_GRACE,
    ) -> None:
        if grace <= 0 or term_grace <= 0:
            raise ValueError(
                f"grace periods must be positive seconds, got {grace!r}, {term_grace!r}"
            )
        self.command = list(command)
        self.env = dict(env)
        self.cwd = cwd
        self.say = say
        self.grace = grace
        self.term_grace = term_grace
        self.signals: list[int] = []
        self.descendants: dict[int, psutil.Process] = {}
        self._first_signal_at: float | None = None
        self._process: subprocess.Popen | None = None

    def run(self) -> int:
        """Runs the command until it exits or a signal stops it; returns its exit code.

        Returns:
            The command's exit code, or 128 + the signal's number when a signal stopped it.
        """
        previous = {signum: signal.getsignal(signum) for signum in FORWARDED_SIGNALS}
        # The handlers go in before the command starts: a signal this process ignores (a
        # command started with `&` from a script, or under nohup, ignores SIGINT) would stay
        # ignored in the command, whereas a handled one is reset to its default there.
        for signum in FORWARDED_SIGNALS:
            signal.signal(signum, lambda signum, _frame: self._forward(signum))
        try:
            process = subprocess.Popen(
                self.command, env=self.env, cwd=self.cwd, **OWN_PROCESS_GROUP
            )
        except BaseException:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            raise
        self._process = process
        try:
            if self.signals:  # arrived while the command was starting
                signal_group(process.pid, self.signals[0])
            self._wait(process)
        finally:
            try:  # a signal during the sweep only escalates, as while waiting
                self._sweep(process.pid)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=self.term_grace)
            finally:
                for signum, handler in previous.items():
                    signal.signal(signum, handler)
        if self.signals:
            return 128 + self.signals[0]
        return process.returncode

    def _forward(self, signum: int) -> None:
        """The signal handler: the first signal goes to the group as is, later ones escalate.

        It only records and sends; `_wait` prints (printing inside a handler can re-enter).
        Before the command has started it only records (`run` sends the first then).
        """
        self.signals.append(signum)
        process = self._process
        if process is None:
            return
        if len(self.signals) == 1:
            signal_group(process.pid, signum)
        else:
            signal_group(process.pid, signal.SIGTERM if len(self.signals) == 2 else signal.SIGKILL)

    def _wait(self, process: subprocess.Popen) -> None:
        """Waits for the command: forever until a signal, then at most the grace periods."""
        escalated: set[int] = set()
        while process.poll() is None:
            self._remember_descendants(process.pid)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=POLL_INTERVAL)
            if not self.signals:
                continue
            if self._first_signal_at is None:
                self._first_signal_at = time.monotonic()
                self.say(
                    f"{signal.Signals(self.signals[0]).name}: stopping "
                    f"{Path(self.command[0]).name} and what it started (up to "
                    f"{self.grace:.0f}s, then SIGTERM and SIGKILL; signal again to hurry)"
                )
            waited = time.monotonic() - self._first_signal_at
            if waited > self.grace and signal.SIGTERM not in escalated:
                self.say(f"still running after {self.grace:.0f}s: SIGTERM to its process group")
                escalated.add(signal.SIGTERM)
                signal_group(process.pid, signal.SIGTERM)
            if waited > self.grace + self.term_grace and signal.SIGKILL not in escalated:
                self.say("still running: SIGKILL to its process group")
                escalated.add(signal.SIGKILL)
                signal_group(process.pid, signal.SIGKILL)

    def _remember_descendants(self, pid: int) -> None:
        """Notes the command's descendants, to find those that leave its process group."""
        with contextlib.suppress(psutil.Error):
            for child in psutil.Process(pid).children(recursive=True):
                self.descendants.setdefault(child.pid, child)

    def _sweep(self, pgid: int) -> None:
        """Stops what is left of the tree: SIGTERM, a short wait, then SIGKILL."""
        left = live_processes(pgid, self.descendants)
        if not left:
            return
        names = []
        for process in left:
            with contextlib.suppress(psutil.Error):
                names.append(f"{process.pid} {' '.join(process.cmdline()[:3])[:80]}")
        self.say(f"left behind, stopping (SIGTERM, then SIGKILL): {'; '.join(names)}")
        for process in left:
            with contextlib.suppress(psutil.Error):
                process.terminate()
        _, alive = psutil.wait_procs(left, timeout=self.term_grace)
        for process in alive:
            with contextlib.suppress(psutil.Error):
                process.kill()
        psutil.wait_procs(alive, timeout=self.term_grace)
