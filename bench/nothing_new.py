"""A launch with nothing new (issues 34 and 35): `dg launch --assets '*'` on this repository's
code location when nothing is past any watermark, against a launch that lands events.

In a temporary `LAKEHOUSE_DATA_DIR` (its own Dagster home, tables and embedded nats-server
store), with the file trash topology provisioned:

1. `--events` FileDeletedEvents are published and one launch lands them (Spark starts, every
   asset materialises: bronze, silver with its checks, gold, the published
   FilePlacedInTrashEvents);
2. launches follow until one finds nothing new for every asset (the first lands the
   FilePlacedInTrashEvents the landing launch published into the stream itself; at most
   `--settle` of them);
3. `--runs` more launches, each with nothing new, are timed.

With `--s3` the tables are in an embedded S3 server (SeaweedFS), as `jsl demo --s3` keeps
them: the nothing-new launches read the Delta logs through the S3 API.

Every launch is a `dg launch --assets '*'` subprocess, as `make demo` runs it, timed from
start to exit (the CLI's start and the code location's load included); its CPU seconds are
the subprocess tree's as reaped (`RUSAGE_CHILDREN`: the `dg` process; Spark's JVM, which
PySpark does not reap, is not in it), and `PhaseMonitor` tells whether a Spark JVM ran during
it (`jvm_seen`) and its CPU seconds (`jvm_cpu_s`). What each run did is read from the
Dagster instance afterwards (`nothing_new` of each materialisation). Prints the landing
launch, the settling ones, the median nothing-new launch and the ratio landing / nothing
new; saves a JSON in `results/`.

    .venv/bin/python bench/nothing_new.py
    .venv/bin/python bench/nothing_new.py --events 200 --runs 3 --out /tmp/nothing-new.json
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from sampling import PhaseMonitor, python_speed_ms

from pipelines.cli.demo import dagster_env, provision, s3_server
from pipelines.file_trash.events import FILE_DELETED_SUBJECT, generate_file_deleted_events
from pipelines.settings import Settings
from resources.jetstream import EmbeddedNatsServer, JetStreamResource
from resources.jetstream.core.messages import MSG_ID_HEADER

REPO = Path(__file__).resolve().parents[1]
DG = Path(sys.executable).parent / "dg"
SELECTION = "*"


def git_commit() -> str:
    return subprocess.run(
        ["git", "-C", str(REPO), "describe", "--always", "--dirty"], capture_output=True, text=True
    ).stdout.strip()


def publish(url: str, count: int, seed: int) -> None:
    """Publishes `count` FileDeletedEvents on the embedded server."""
    now = dt.datetime.now(dt.timezone.utc)
    events = generate_file_deleted_events(count, now=now, seed=seed)
    with JetStreamResource(servers=url).client() as client:
        client.publish_batch(
            [(FILE_DELETED_SUBJECT, e.to_json(), {MSG_ID_HEADER: e.eventId}) for e in events]
        )


def children_cpu() -> float:
    """CPU seconds of the finished subprocesses of this process, and theirs."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def launch(env: dict[str, str], log: Path) -> dict[str, object]:
    """One `dg launch --assets '*'`: wall and CPU seconds, whether a JVM ran, the exit code."""
    cpu_before = children_cpu()
    with PhaseMonitor("launch") as phase, log.open("ab") as out:
        code = subprocess.run(
            [str(DG), "launch", "--assets", SELECTION],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        ).returncode
    report = phase.report
    return {
        "wall_s": round(report.wall, 3),
        "cpu_s": round(children_cpu() - cpu_before, 2),
        "jvm_seen": report.peak_rss["jvm"] > 0,
        "jvm_cpu_s": round(report.cpu["jvm"], 2),
        "exit_code": code,
        "loadavg_start": [round(x, 2) for x in report.load_start],
        "other_processes_cpu_s": round(report.other_cpu, 2),
    }


def last_run(dagster_home: Path) -> dict[str, object]:
    """The latest run on the instance: its id, status, and each asset's `nothing_new`."""
    from dagster import DagsterEventType, DagsterInstance

    with DagsterInstance.from_config(str(dagster_home)) as instance:
        run = instance.get_runs(limit=1)[0]
        assets = {}
        for entry in instance.all_logs(run.run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION):
            materialization = entry.asset_materialization
            value = materialization.metadata.get("nothing_new")
            key = materialization.asset_key.to_user_string()
            assets[key] = None if value is None else value.value
        return {"run_id": run.run_id, "status": run.status.value, "nothing_new": assets}


def timed_launch(env: dict[str, str], settings: Settings, log: Path, label: str) -> dict:
    """A launch, what it did, and a line saying so."""
    figures = launch(env, log) | last_run(settings.dagster_home)
    idle = all_nothing_new(figures)
    jvm = f"{figures['jvm_cpu_s']:.1f} s CPU" if figures["jvm_seen"] else "no"
    print(
        f"  {label:<14} {figures['wall_s']:>7.1f} s wall {figures['cpu_s']:>6.1f} s CPU  "
        f"jvm {jvm:<10}  {figures['status']:<8} {'nothing new' if idle else 'landed work'}",
        flush=True,
    )
    if figures["exit_code"] != 0:
        raise SystemExit(f"`dg launch` failed ({figures['exit_code']}); its output: {log}")
    return figures


def all_nothing_new(figures: dict) -> bool:
    return bool(figures["nothing_new"]) and all(figures["nothing_new"].values())


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=200, help="events the landing launch takes")
    parser.add_argument("--runs", type=int, default=5, help="timed launches with nothing new")
    parser.add_argument("--settle", type=int, default=3, help="launches allowed to settle")
    parser.add_argument("--out", type=Path, default=None, help="results JSON path")
    parser.add_argument(
        "--s3", action="store_true", help="the tables in an embedded S3 server (as `jsl demo --s3`)"
    )
    args = parser.parse_args(argv)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = args.out or REPO / "bench" / "results" / f"nothing-new-{stamp}.json"
    data_dir = Path(tempfile.mkdtemp(prefix="jsl-nothing-new-"))
    settings = Settings.from_env({"LAKEHOUSE_DATA_DIR": str(data_dir)})
    log = data_dir / "launches.log"
    results: dict[str, object] = {
        "started": stamp,
        "git": git_commit(),
        "events": args.events,
        "tables": "s3" if args.s3 else "local",
        "python_speed_ms": python_speed_ms(),
        "loadavg_start": os.getloadavg(),
    }
    try:
        with (
            contextlib.ExitStack() as s3,
            EmbeddedNatsServer(store_dir=settings.nats_store_dir) as server,
        ):
            if args.s3:
                _, settings = s3.enter_context(s3_server(settings))
            env = dagster_env(settings, server.url)
            with JetStreamResource(servers=server.url).client() as client:
                provision(client)
            publish(server.url, args.events, seed=34)
            print(f"dg launch --assets '*' in {data_dir}", flush=True)
            landing = timed_launch(env, settings, log, "lands events")
            settling = []
            while len(settling) < args.settle:
                settling.append(timed_launch(env, settings, log, "settles"))
                if all_nothing_new(settling[-1]):
                    break
            else:
                raise SystemExit(f"still work after {args.settle} launches; see {log}")
            idle = [timed_launch(env, settings, log, "nothing new") for _ in range(args.runs)]
    finally:
        results["loadavg_end"] = os.getloadavg()
        shutil.rmtree(data_dir, ignore_errors=True)
    median = statistics.median(f["wall_s"] for f in idle)
    results.update(
        landing=landing,
        settling=settling,
        nothing_new=idle,
        nothing_new_median_s=median,
        nothing_new_cpu_median_s=statistics.median(f["cpu_s"] for f in idle),
        jvm_in_nothing_new_launches=any(f["jvm_seen"] for f in idle),
        ratio_landing_to_nothing_new=round(landing["wall_s"] / median, 2),
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(
        f"\nnothing new: median {median:.1f} s over {len(idle)} launches "
        f"(range {min(f['wall_s'] for f in idle):.1f}-{max(f['wall_s'] for f in idle):.1f} s, "
        f"JVM started: {'yes' if results['jvm_in_nothing_new_launches'] else 'no'})"
    )
    print(
        f"landing {args.events} events: {landing['wall_s']:.1f} s; "
        f"ratio landing / nothing new: {results['ratio_landing_to_nothing_new']}"
    )
    print(f"git {results['git']}, load {results['loadavg_start']} -> {results['loadavg_end']}")
    print(f"results: {out}")
    return results


if __name__ == "__main__":
    main()
