"""What a benchmark phase cost: wall time, peak RSS per process, CPU seconds, machine load.

`PhaseMonitor` samples, in a background thread at ~20 Hz, the resident set size of

- the Python driver (this process),
- the JVM that PySpark started (a `java` descendant of this process),
- the JVM's Python workers (all `python*` descendants of the JVM, summed),
- the embedded nats-server (a `nats-server` child),

and keeps the peak of each over the phase. It also records CPU seconds per process group
over the phase, and the CPU the rest of the machine used meanwhile (other agents' tests share
this machine), plus the load average at the start and the end.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from types import ModuleType, TracebackType

import psutil

INTERVAL = 0.05  # seconds between samples (20 Hz)
GROUPS = ("driver", "jvm", "python_workers", "nats_server")
MiB = 1 << 20


def _group(proc: psutil.Process, me: int, jvm: int | None) -> str | None:
    """Which group a descendant of the driver belongs to (None: not one we report)."""
    try:
        name = proc.name()
        if proc.pid == me:
            return "driver"
        if proc.pid == jvm:
            return "jvm"
        if name.startswith("nats-server"):
            return "nats_server"
        if name.startswith("python") and jvm is not None and jvm in {p.pid for p in proc.parents()}:
            return "python_workers"
    except psutil.Error:
        return None
    return None


def _name(proc: psutil.Process) -> str:
    try:
        return proc.name()
    except psutil.Error:
        return ""


def _rss(proc: psutil.Process) -> int:
    try:
        return proc.memory_info().rss
    except psutil.Error:
        return 0


def find_jvm(me: psutil.Process | None = None) -> psutil.Process | None:
    """The JVM PySpark started (a `java` descendant of this process), if any."""
    me = me or psutil.Process()
    javas = [p for p in me.children(recursive=True) if _name(p) == "java"]
    return max(javas, key=_rss) if javas else None


def _busy_seconds() -> float:
    """CPU seconds the whole machine spent outside idle and iowait, since boot."""
    times = psutil.cpu_times()
    return sum(times) - times.idle - getattr(times, "iowait", 0.0)


@dataclass
class PhaseReport:
    """One phase's figures; `to_dict` is what goes into the results JSON."""

    name: str
    wall: float  # seconds
    peak_rss: dict[str, int]  # bytes, per group
    cpu: dict[str, float]  # seconds, per group
    other_cpu: float  # seconds of CPU the rest of the machine used during the phase
    load_start: tuple[float, float, float]
    load_end: tuple[float, float, float]
    samples: int
    extra: dict[str, object] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return {
            "wall_s": round(self.wall, 3),
            "peak_rss_mib": {k: round(v / MiB, 1) for k, v in self.peak_rss.items()},
            "cpu_s": {k: round(v, 2) for k, v in self.cpu.items()},
            "own_cpu_s": round(sum(self.cpu.values()), 2),
            "other_processes_cpu_s": round(self.other_cpu, 2),
            "machine_cpu_available_s": round(self.wall * (os.cpu_count() or 1), 2),
            "loadavg_start": [round(x, 2) for x in self.load_start],
            "loadavg_end": [round(x, 2) for x in self.load_end],
            "rss_samples": self.samples,
            **self.extra,
        }


class PhaseMonitor:
    """Times a phase and samples its processes; use as a context manager.

    Examples:
        >>> with PhaseMonitor("raw drain") as phase:
        ...     drain()
        >>> phase.report.peak_rss["driver"]
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.report: PhaseReport | None = None
        self._me = psutil.Process()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"sampler-{name}", daemon=True)
        self._peak = dict.fromkeys(GROUPS, 0)
        self._cpu_first: dict[int, tuple[str, float]] = {}  # pid -> (group, cpu at first sight)
        self._cpu_last: dict[int, float] = {}
        self._samples = 0

    def __enter__(self) -> PhaseMonitor:
        jvm = find_jvm(self._me)
        self._jvm_pid = jvm.pid if jvm else None
        self._load_start = os.getloadavg()
        self._busy_start = _busy_seconds()
        self._sample()  # the CPU baseline of processes alive at the start
        self._started = time.monotonic()
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        wall = time.monotonic() - self._started
        self._stop.set()
        self._thread.join()
        self._sample()
        cpu = dict.fromkeys(GROUPS, 0.0)
        for pid, (group, first) in self._cpu_first.items():
            cpu[group] += self._cpu_last[pid] - first
        ours = sum(cpu.values())
        self.report = PhaseReport(
            name=self.name,
            wall=wall,
            peak_rss=dict(self._peak),
            cpu=cpu,
            other_cpu=max(0.0, _busy_seconds() - self._busy_start - ours),
            load_start=self._load_start,
            load_end=os.getloadavg(),
            samples=self._samples,
        )

    def _run(self) -> None:
        while not self._stop.wait(INTERVAL):
            self._sample()

    def _sample(self) -> None:
        rss = dict.fromkeys(GROUPS, 0)
        try:
            procs = [self._me, *self._me.children(recursive=True)]
        except psutil.Error:
            return
        if self._jvm_pid not in {p.pid for p in procs}:
            # The JVM starts during Spark's start-up, after a short-lived `java` launcher
            # (spark-submit's command builder): take the live one, the largest if several.
            javas = [p for p in procs if _name(p) == "java"]
            self._jvm_pid = max(javas, key=_rss).pid if javas else None
        for proc in procs:
            group = _group(proc, self._me.pid, self._jvm_pid)
            if group is None:
                continue
            try:
                with proc.oneshot():
                    rss[group] += proc.memory_info().rss
                    times = proc.cpu_times()
            except psutil.Error:
                continue
            used = times.user + times.system
            # A process first seen mid-phase started during it: count its CPU from zero.
            self._cpu_first.setdefault(proc.pid, (group, used if self._samples == 0 else 0.0))
            self._cpu_last[proc.pid] = used
        for group, value in rss.items():
            self._peak[group] = max(self._peak[group], value)
        self._samples += 1


def python_speed_ms(iterations: int = 3_000_000) -> float:
    """CPU milliseconds of a fixed pure-Python loop: how fast this machine is right now.

    The VM's cores are shared with other tenants, and their speed drifts between runs and
    even within one; comparing this figure tells runs made on a slow machine from runs of
    slow code. Lower is faster.
    """
    started = time.process_time()
    total = 0
    for i in range(iterations):
        total += i
    return round((time.process_time() - started) * 1000, 1)


def time_calls(
    spent: dict[str, float], calls: dict[str, int], module: ModuleType, name: str, *also
) -> None:
    """Wraps `module.<name>` so each call adds its seconds to `spent[name]` and counts in
    `calls[name]`; modules in `also` that imported the same function by name get the wrapper
    too (where the step's caller looks it up)."""
    step = getattr(module, name)

    @functools.wraps(step)
    def timed(*args, **kwargs):
        started = time.perf_counter()
        try:
            return step(*args, **kwargs)
        finally:
            spent[name] += time.perf_counter() - started
            calls[name] += 1

    setattr(module, name, timed)
    for other in also:
        if getattr(other, name, None) is step:
            setattr(other, name, timed)


def stop_on_signal(signum: int, frame: object) -> None:
    """Unwinds as on Ctrl-C, once: a second SIGTERM during the unwinding (a `timeout` that
    signals the whole process group) is ignored, so the servers' stopping is not cut short.
    Installed with `signal.signal(signal.SIGTERM, stop_on_signal)` by benchmarks that start
    a Spark Connect server or a daemon, each in a process group of its own: killed with the
    default handler, they would leave it running."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.exit(128 + signum)
