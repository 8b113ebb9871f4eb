"""Which processes used the machine's CPU while a command ran (issue 14).

Runs the command after `--` and, every `--every` seconds until it ends, reads every
process's cumulative CPU time (`ps -eo pid,times,args`). Then it prints the CPU seconds
used in that window by each kind of process (the Spark JVM, the Dagster daemon, the code
servers, run processes, ...) against what the cores could have given, so a benchmark's wall
time can be told apart into "busy" and "waiting". A process seen in the first sample counts
from there; one that started later counts whole; one that ended and was reaped between two
samples loses its seconds since the last (at most `--every`). The window ends at the last
sample after the command ended: to measure a run only, end the command with it.

    .venv/bin/python bench/cpu_split.py -- .venv/bin/python bench/freshness.py
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import signal
import subprocess
import time

# The first pattern that matches a process's command line names its kind.
KINDS = (
    ("Spark JVM (driver / Connect server)", r"\bjava\b"),
    ("pyspark Python workers", r"pyspark\.daemon|pyspark\.worker"),
    ("nats-server", r"nats-server"),
    ("dagster-daemon", r"dagster-daemon"),
    ("code servers (dagster api grpc)", r"dagster api grpc"),
    ("run and step processes", r"spawn_main|execute_run|execute_step"),
    ("other dagster commands", r"dagster"),
    ("kernel threads", r"^\["),
)


def sample() -> dict[str, tuple[str, int]]:
    """pid -> (command line, cumulative CPU seconds), for every process now."""
    out = subprocess.run(
        ["ps", "-eo", "pid,times,args", "--no-headers"], capture_output=True, text=True
    ).stdout
    found = {}
    for line in out.splitlines():
        pid, times, *args = line.split(None, 2)
        # An ended process not yet reaped (`<defunct>`) still shows its CPU time, whole.
        found[pid] = ((args[0] if args else "")[:200], int(times))
    return found


def kind(command: str) -> str:
    return next((name for name, pattern in KINDS if re.search(pattern, command)), "other")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--every", type=float, default=5.0, help="seconds between samples")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    first = sample()
    # A pid keeps the first name it was seen with (a kernel worker renames itself, an ended
    # process shows as `[name] <defunct>`); a pid reused meanwhile is counted as its first.
    last = dict(first)
    started = time.monotonic()
    process = subprocess.Popen(command)
    # Stopped (SIGTERM, or Ctrl-C, which reaches the command too), it waits for the command
    # to stop and still reports the window so far.
    signal.signal(signal.SIGTERM, lambda *_: process.terminate())
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while process.poll() is None:
        time.sleep(args.every)
        for pid, (name, seconds) in sample().items():
            known = last.get(pid)
            last[pid] = (known[0] if known else name, max(known[1] if known else 0, seconds))
    window = time.monotonic() - started
    used: collections.Counter = collections.Counter()
    for pid, (name, seconds) in last.items():
        named = "the command itself" if pid == str(process.pid) else kind(name)
        used[named] += seconds - first.get(pid, (name, 0))[1]
    cores = os.cpu_count() or 1
    print(
        f"CPU while it ran: {window:.0f} s x {cores} cores = {window * cores:.0f} CPU-s; "
        f"used {sum(used.values())} ({sum(used.values()) / (window * cores):.0%})"
    )
    for name, seconds in used.most_common():
        print(f"  {seconds:7d} CPU-s  {seconds / window:4.2f} cores  {name}")
    raise SystemExit(process.returncode)


if __name__ == "__main__":
    main()
