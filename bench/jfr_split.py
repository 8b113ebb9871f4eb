"""Where a Spark JVM's CPU went (issue 14): a Java Flight Recorder recording, split by thread
and by kind of work.

Each execution sample of the recording (`jdk.ExecutionSample`, a running Java thread's
stack) is charged to its thread's group (executor tasks, Spark Connect's request threads,
query stage and scheduler threads) and to the first kind of work, in the order of `KINDS`,
that a frame of its stack belongs to (code generation, Janino compiling, analysis, task
serialization, Delta, regular expressions, ...). Shares are of all samples. Samples cover
Java code only: time in native code, the JIT and GC are not in them.

Record the Spark Connect server's JVM while a benchmark runs (`jcmd` and `jfr` come with
the JDK), then split the recording:

    .venv/bin/python bench/silver_steps.py --remote --batch 4000 --runs 6 &
    server=$(pgrep -f 'java.*SparkConnectServer')
    jcmd $server JFR.start name=p settings=profile filename=/tmp/s.jfr
    jcmd $server JFR.stop name=p      # before the runs end
    .venv/bin/python bench/jfr_split.py /tmp/s.jfr

The `profile` settings sample every 10 ms and slow the JVM down while they record: read
the shares, not the runs' times.
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
from collections.abc import Sequence

# The first match wins, so a sample compiling code inside a task is "codegen compile".
KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("codegen compile (Janino)", ("org.codehaus.janino", "CodeGenerator$.doCompile")),
    ("codegen generate", ("expressions.codegen", "WholeStageCodegenExec.doCodeGen")),
    ("Connect proto -> plan", ("SparkConnectPlanner",)),
    ("analysis", ("catalyst.analysis",)),
    ("optimizer", ("catalyst.optimizer", "QueryExecution.optimizedPlan")),
    ("physical planning", ("QueryExecution.sparkPlan", "QueryExecution$.prepareForExecution")),
    ("cache manager", ("CacheManager",)),
    ("task (de)serialization", ("ObjectInputStream", "ObjectOutputStream", "ClosureCleaner")),
    ("Delta log and commit", ("org.apache.spark.sql.delta", "io.delta")),
    ("Parquet", ("parquet",)),
    ("JSON parsing", ("JacksonParser",)),
    ("regular expressions", ("java.util.regex",)),
    ("Python workers", ("PythonRunner",)),
)
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("executor tasks", ("Executor task",)),
    ("Connect execute threads (plan, run)", ("SparkConnectExecuteThread",)),
    ("gRPC threads (schema, analyze)", ("grpc-default-executor",)),
    (
        "query stage and scheduler threads",
        ("shuffle-exchange", "ResultQueryStage", "broadcast-exchange", "dag-scheduler"),
    ),
)


def samples(path: str) -> list[tuple[str, list[str]]]:
    """(thread name, frames from the leaf out) of each execution sample (`jfr print`).

    Raises:
        SystemExit: `jfr` is missing (it comes with the JDK) or cannot read `path`.
    """
    command = ["jfr", "print", "--json", "--events", "jdk.ExecutionSample", path]
    try:
        printed = subprocess.check_output(command)
    except FileNotFoundError:
        raise SystemExit("`jfr` is not on PATH: it comes with a JDK (17 here)") from None
    except subprocess.CalledProcessError as error:
        raise SystemExit(
            f"`jfr` could not read the recording {path!r} (exit {error.returncode}; its "
            "message is above): check the path, and that JFR.stop or JFR.dump wrote it"
        ) from None
    found = []
    for event in json.loads(printed)["recording"]["events"]:
        values = event["values"]
        thread = values["sampledThread"]
        name = thread.get("javaName") or thread.get("osName") or "?"
        frames = [
            f"{f['method']['type']['name']}.{f['method']['name']}".replace("/", ".")
            for f in values["stackTrace"]["frames"]
        ]
        found.append((name, frames))
    return found


def _first(patterns: Sequence[tuple[str, tuple[str, ...]]], texts: Sequence[str], rest: str):
    for name, marks in patterns:
        if any(mark in text for text in texts for mark in marks):
            return name
    return rest


def split(found: list[tuple[str, list[str]]]) -> dict[str, collections.Counter]:
    """Thread group -> kind of work -> samples."""
    table: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for thread, frames in found:
        group = _first(GROUPS, [thread], "other threads")
        table[group][_first(KINDS, frames, "other work")] += 1
    return table


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("recording", help="a .jfr file")
    parser.add_argument("--kinds", type=int, default=8, help="kinds shown per thread group")
    args = parser.parse_args(argv)
    table = split(samples(args.recording))
    total = sum(sum(kinds.values()) for kinds in table.values()) or 1
    every: collections.Counter = collections.Counter()
    print(f"{total} samples; shares of all of them")
    for group, kinds in sorted(table.items(), key=lambda item: -sum(item[1].values())):
        print(f"{100 * sum(kinds.values()) / total:5.1f}%  {group}")
        for kind, count in kinds.most_common(args.kinds):
            print(f"        {100 * count / total:5.1f}%  {kind}")
        every.update(kinds)
    print("all threads:")
    for kind, count in every.most_common():
        print(f"        {100 * count / total:5.1f}%  {kind}")


if __name__ == "__main__":
    main()
