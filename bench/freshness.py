"""Freshness benchmark (issue 14), part 2: from publish to a row in silver, with the real daemon.

In a temporary data directory: an embedded nats-server with the project's topology
provisioned, a Dagster instance configured as `make dev`'s (the queued run coordinator, one
run at a time per ingest), the Spark Connect server `make dev` starts for the runs, warmed up
first (`JSL_DEV_SPARK_CONNECT=off`: a JVM per run, as before; `JSL_DEV_SPARK_WARM_UP=off`: not
warmed up, the first run pays for it; both read from this process's environment, as `jsl dev`
reads them), and `dagster-daemon run` on the project's `workspace.yaml` (the code location
`pipelines.definitions`). The sensors `make dev` users turn on to land
events are started: the stream sensor of the ingest `file_events` (whose runs land bronze,
then silver) and the code location's `lakehouse_automation_sensor` (gold after silver, silver
after any other bronze materialisation); `--stream-sensor-only` leaves the latter off, so no
gold or downstream-event run shares the cores (a diagnosis: what they cost silver).

Then FileDeletedEvents (`generate_event_mix`, `--bad-share` of them bad) are published at
`--rate` per second for `--seconds`, each publish's acknowledgement time recorded. Both
`bronze/file_events` and `silver/file_deleted` are followed by reading their Delta logs as
commits appear (no Spark: the commit's timestamp and the `msg_id`/`event_id` column of the
files it adds), so each good event gets the time its row became visible in bronze and in
silver. It prints the percentiles of publish -> silver (goal: p50 <= 20 s, p95 <= 45 s)
and how that time splits, per event, at the median:

- publish -> ingest run created (the stream sensor's interval and tick);
- ingest run created -> started (run queue, launch);
- ingest run started -> bronze commit (the run process, code location load, Spark start,
  the ingest);
- bronze commit -> silver commit, and of it, for silver made in the ingest run itself (the
  stream sensor's runs take silver too, `silver_in_ingest_run`), the silver step;
- for an event a run that keeps going (`follow_seconds`, `assets.follow`) took in a further
  batch: publish -> bronze commit (no run was created or started for it);
- for silver made in a run of its own (the automation sensor's): bronze commit -> silver run
  created (the sensor's evaluation), silver run created -> started, silver run started ->
  silver commit (the run process, Spark start, the silver stage);

and the ingest and silver runs' wall times (the per-run fixed cost at this rate; an ingest
run includes its silver step and, when it keeps going, its further batches; a silver run
any downstream step the automation sensor requested with it), how many bronze batches the
ingest runs took and how many of them were further batches, with the
split of each run from its event log: queued, launch and code location load, resources, each
step. `--trace` prints the last ingest and silver runs' event logs. At the end, the benchmark
waits for the run that made silver's last commit to finish before it stops the daemon.

A single 1,000-message run (the per-run fixed cost):

    .venv/bin/python bench/freshness.py --rate 1000 --seconds 1 --trace

    .venv/bin/python bench/freshness.py --rate 100 --seconds 300

The throughput point, the highest steady rate whose publish -> silver p95 stays within 45 s
(each rate a whole run as above, lowest first, up to the first that misses):

    .venv/bin/python bench/freshness.py --throughput 25,50,100 --seconds 180
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

import pyarrow.parquet as pq
from sampling import python_speed_ms, stop_on_signal

from pipelines.cli.demo import dagster_env, provision, spark_server
from pipelines.cli.supervise import stop_group
from pipelines.file_trash.generator import GOOD, generate_event_mix, publish_events
from pipelines.settings import Settings
from resources.jetstream import EmbeddedNatsServer, JetStreamResource

REPO = Path(__file__).resolve().parent.parent
SENSORS = ("file_events_stream_sensor", "lakehouse_automation_sensor")
BRONZE, SILVER = ("bronze", "file_events"), ("silver", "file_deleted")
P95_GOAL_S = 45.0  # issue 35: publish -> silver p95 within 45 s


@dataclass
class DeltaLogFollower:
    """The first commit time of each key in a Delta table, read from its log as it grows.

    Reads `_delta_log/<version>.json` files in order; for every `add` with `dataChange`, the
    key column of the Parquet file it adds. Keys map to the commit's timestamp (seconds).
    """

    table: Path
    column: str
    seen: dict[str, float] = field(default_factory=dict)
    commits: list[tuple[int, float]] = field(default_factory=list)
    version: int = 0

    def poll(self) -> None:
        log = self.table / "_delta_log"
        while (commit := log / f"{self.version:020d}.json").exists():
            try:
                actions = [json.loads(line) for line in commit.read_text().splitlines() if line]
            except ValueError:  # being written: read it on the next poll
                return
            at = next(a["commitInfo"]["timestamp"] for a in actions if "commitInfo" in a) / 1000
            for action in actions:
                add = action.get("add")
                if add and add.get("dataChange", True):
                    keys = pq.read_table(self.table / unquote(add["path"]), columns=[self.column])
                    for key in keys.column(0).to_pylist():
                        self.seen.setdefault(key, at)
            self.commits.append((self.version, at))
            self.version += 1


def start_daemon(env: dict[str, str], log: Path) -> subprocess.Popen:
    """`dagster-daemon run` on the project's workspace, in a process group of its own."""
    daemon = Path(sys.executable).parent / "dagster-daemon"
    with log.open("wb") as out:
        return subprocess.Popen(
            [str(daemon), "run", "-w", str(REPO / "workspace.yaml")],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def start_sensors(env: dict[str, str], names: tuple[str, ...] = SENSORS) -> None:
    dagster = Path(sys.executable).parent / "dagster"
    for name in names:
        command = [str(dagster), "sensor", "start", "-w", str(REPO / "workspace.yaml"), name]
        subprocess.run(command, cwd=REPO, env=env, check=True, capture_output=True)


def percentiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"n": 0, "p50": None, "p95": None, "max": None}
    ordered = sorted(values)
    return {
        "n": len(ordered),
        "p50": round(statistics.median(ordered), 1),
        "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 1),
        "max": round(ordered[-1], 1),
    }


def run_times(instance, key: tuple[str, str]) -> list[tuple[float, dict]]:
    """Each materialisation of `key`: its time, its run's create/start/end times, and which
    batch of its run it is (`batch_of_run`: 2, 3, ... for a run that keeps going)."""
    from dagster import AssetKey

    found = []
    records = instance.fetch_materializations(AssetKey(list(key)), limit=10_000).records
    for record in records:
        run = instance.get_run_record_by_id(record.run_id)
        metadata = record.asset_materialization.metadata if record.asset_materialization else {}
        batch = metadata.get("batch_of_run")
        found.append(
            (
                record.timestamp,
                {
                    "created": run.create_timestamp.timestamp(),
                    "started": run.start_time,
                    "ended": run.end_time,
                    "run_id": record.run_id,
                    "batch": batch.value if batch is not None else 1,
                },
            )
        )
    return sorted(found, key=lambda item: item[0])


def run_phases(instance, run_id: str) -> dict[str, float]:
    """Where one run's time went, from its event log: `queued` (created -> handed to the
    launcher: the queue), `launch_and_load` (-> started: a new process imports the code
    location),
    `resources` (started -> first step: the run's resources), one entry per step (its
    STEP_START -> STEP_SUCCESS, Spark's start-up inside the first step that asks for a
    session), and `finish` (last step -> run ended)."""
    from dagster import DagsterEventType

    run = instance.get_run_record_by_id(run_id)
    first: dict[str, float] = {}
    steps: dict[str, float] = {}
    for entry in instance.all_logs(run_id):
        event = entry.dagster_event
        if event is None:
            continue
        first.setdefault(event.event_type_value, entry.timestamp)
        if event.event_type == DagsterEventType.STEP_START:
            steps[event.step_key] = -entry.timestamp
        elif event.event_type == DagsterEventType.STEP_SUCCESS and event.step_key in steps:
            steps[event.step_key] += entry.timestamp
            first["last_step_end"] = entry.timestamp
    phases: dict[str, float] = {}
    dequeued = first.get(DagsterEventType.RUN_DEQUEUED.value)
    starting = first.get(DagsterEventType.RUN_STARTING.value, dequeued)
    started = first.get(DagsterEventType.RUN_START.value)
    step_start = first.get(DagsterEventType.STEP_START.value)
    if starting:
        phases["queued"] = starting - run.create_timestamp.timestamp()
    if starting and started:
        phases["launch_and_load"] = started - starting
    if started and step_start:
        phases["resources"] = step_start - started
    phases.update({f"step {key}": took for key, took in steps.items() if took > 0})
    if run.end_time and "last_step_end" in first:
        phases["finish"] = run.end_time - first["last_step_end"]
    return phases


def phase_percentiles(instance, run_ids: list[str]) -> dict[str, dict[str, float | None]]:
    """`run_phases` of several runs, as percentiles per phase."""
    collected: dict[str, list[float]] = {}
    for run_id in run_ids:
        for name, took in run_phases(instance, run_id).items():
            collected.setdefault(name, []).append(took)
    return {name: percentiles(values) for name, values in collected.items()}


def recorded(instance, table: DeltaLogFollower) -> bool:
    """Whether silver's latest materialisation is at or after its last commit, and the run
    that recorded it has ended."""
    from dagster import AssetKey

    if not table.commits:
        return False
    latest = instance.fetch_materializations(AssetKey(list(SILVER)), limit=1).records
    return (
        bool(latest)
        and latest[0].timestamp >= table.commits[-1][1] - 0.001
        and instance.get_run_record_by_id(latest[0].run_id).end_time is not None
    )


def print_log(instance, run_id: str) -> None:
    """One run's event log, each entry's seconds since the run started (`--trace`)."""
    entries = instance.all_logs(run_id)
    if not entries:
        return
    origin = entries[0].timestamp
    for entry in entries:
        event = entry.dagster_event
        what = event.event_type_value if event else ""
        text = (entry.user_message or "").splitlines()[0][:100] if entry.user_message else ""
        print(f"    {entry.timestamp - origin:7.1f} {entry.step_key or '':32s} {what:24s} {text}")


def run_of(commit_at: float, materialized: list[tuple[float, dict]]) -> dict | None:
    """The run whose materialisation came first at or after a commit (its own)."""
    for at, run in materialized:
        if at >= commit_at - 0.001:
            return run
    return None


def within_goal(point: dict[str, object]) -> bool:
    """Whether a measured rate kept every good event's publish -> silver p95 within the goal,
    with every good event in silver (a run that published no good event has no p95)."""
    p95 = point["p95"]
    return bool(point["all_in_silver"]) and p95 is not None and p95 <= P95_GOAL_S


def measure_rate(command: list[str]) -> int:
    """Runs one rate's measurement (this script, `command`) and returns its exit code. Stopped
    itself (SIGTERM, Ctrl-C), it stops the child first, which then unwinds its daemon, Connect
    server and nats-server as a run of its own does."""
    child = subprocess.Popen(command)
    try:
        return child.wait()
    except SystemExit:  # SIGTERM to this process alone (`kill`): pass it on
        child.send_signal(signal.SIGTERM)
        child.wait()
        raise
    except KeyboardInterrupt:  # Ctrl-C reached the child too: let it unwind
        child.wait()
        raise


def throughput(
    rates: list[float], seconds: int, passed_on: list[str], out: Path | None
) -> dict[str, object]:
    """The throughput point: the highest of `rates` whose publish -> silver p95 stays within
    P95_GOAL_S with every good event in silver.

    Each rate is measured by this script in a process, temp dir, nats-server, Connect server
    and daemon of its own, so no rate inherits another's backlog or warm JVM; `passed_on`
    (the other options) goes to each. The rates go lowest first and stop after the first that
    misses (or fails): above it the backlog only grows.
    """
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = out or REPO / "bench" / "results" / f"throughput-{stamp}.json"
    points: list[dict[str, object]] = []
    for rate in rates:
        point_out = out.with_name(f"{out.stem}-{rate:g}.json")
        command = [sys.executable, str(Path(__file__).resolve()), "--rate", f"{rate:g}"]
        command += ["--seconds", str(seconds), "--out", str(point_out), *passed_on]
        code = measure_rate(command)
        if code != 0 or not point_out.exists():
            points.append({"rate": rate, "failed": f"exit code {code}", "p50": None, "p95": None})
            points[-1].update({"max": None, "all_in_silver": False})
            break
        measured = json.loads(point_out.read_text())
        latency = measured["segments_s"]["publish_to_silver"]
        point = {
            "rate": rate,
            "p50": latency["p50"],
            "p95": latency["p95"],
            "max": latency["max"],
            "all_in_silver": measured["visible_in_silver"] == measured["good_events"],
            "ingest_batches": measured["ingest_runs"]["batches"],
            "python_speed_ms": measured["python_speed_ms"],
            "results": str(point_out),
        }
        points.append(point)
        if not within_goal(point):
            break
    within = [p["rate"] for p in points if within_goal(p)]
    results = {
        "started": stamp,
        "seconds": seconds,
        "options": passed_on,
        "p95_goal_s": P95_GOAL_S,
        "points": points,
        "throughput_events_per_s": max(within) if within else None,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(
        f"throughput (publish -> silver p95 <= {P95_GOAL_S:.0f} s, every good event in silver; "
        f"{seconds} s per rate):"
    )
    for p in points:
        verdict = "within" if within_goal(p) else p.get("failed", "missed")
        print(f"  {p['rate']:>7g}/s  p50 {p['p50']}  p95 {p['p95']}  max {p['max']}  {verdict}")
    point = results["throughput_events_per_s"]
    print(f"throughput point: {f'{point:g} events/s' if point else 'none of the rates tried'}")
    print(f"results: {out}")
    return results


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=100.0, help="events per second")
    parser.add_argument("--seconds", type=int, default=300, help="how long to publish")
    parser.add_argument("--bad-share", type=float, default=0.05)
    parser.add_argument("--drain", type=int, default=600, help="seconds to wait afterwards")
    parser.add_argument("--out", type=Path, default=None, help="results JSON path")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir")
    parser.add_argument(
        "--trace", action="store_true", help="print the last ingest and silver runs' event logs"
    )
    parser.add_argument(
        "--stream-sensor-only",
        action="store_true",
        help="leave the automation sensor off: no gold or downstream-event runs share the "
        "cores (a diagnosis: what they cost silver's freshness)",
    )
    parser.add_argument(
        "--throughput",
        default=None,
        metavar="RATES",
        help="comma-separated rates (events/s), each measured for --seconds in a fresh stack "
        "(the other options passed on), lowest first, up to the first whose publish -> silver "
        f"p95 exceeds {P95_GOAL_S:.0f} s or that leaves a good event out of silver: prints the "
        "throughput point (the highest within)",
    )
    args = parser.parse_args(argv)
    # Stopped by a signal (`kill`, `timeout`), unwind as on Ctrl-C: the daemon and the Spark
    # Connect server each run in a process group of their own and would outlive this one.
    signal.signal(signal.SIGTERM, stop_on_signal)
    if args.throughput:
        rates = sorted(float(rate) for rate in args.throughput.split(","))
        passed_on = ["--bad-share", str(args.bad_share), "--drain", str(args.drain)]
        passed_on += [
            f"--{flag.replace('_', '-')}"
            for flag in ("keep", "trace", "stream_sensor_only")
            if getattr(args, flag)
        ]
        return throughput(rates, args.seconds, passed_on, args.out)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = args.out or REPO / "bench" / "results" / f"freshness-{stamp}.json"
    root = Path(tempfile.mkdtemp(prefix="jsl-freshness-"))
    settings = Settings.from_env({"LAKEHOUSE_DATA_DIR": str(root)})
    count = int(args.rate * args.seconds)
    events = generate_event_mix(
        count, bad_share=args.bad_share, now=dt.datetime.now(dt.timezone.utc)
    )
    good = [e.msg_id for e in events if e.kind == GOOD]
    published: dict[str, float] = {}
    speed_before = python_speed_ms()  # how fast the machine is (bench/sampling.py)
    print(f"rate={args.rate}/s for {args.seconds}s ({count} events) temp={root}", flush=True)
    try:
        with (
            contextlib.ExitStack() as stack,
            EmbeddedNatsServer(store_dir=settings.nats_store_dir) as server,
        ):
            with JetStreamResource(servers=server.url).client() as js:
                print(f"topology: {provision(js)}", flush=True)
            remote = stack.enter_context(spark_server(settings, say=print))
            env = dagster_env(settings, server.url) | ({"SPARK_REMOTE": remote} if remote else {})
            os.environ["DAGSTER_HOME"] = env["DAGSTER_HOME"]
            from dagster import DagsterInstance

            instance = DagsterInstance.get()
            start_sensors(env, SENSORS[:1] if args.stream_sensor_only else SENSORS)
            daemon = start_daemon(env, root / "daemon.log")
            lake = Path(settings.lakehouse_root)
            bronze = DeltaLogFollower(lake.joinpath(*BRONZE), "msg_id")
            silver = DeltaLogFollower(lake.joinpath(*SILVER), "event_id")
            stop_following = threading.Event()

            def follow() -> None:
                while not stop_following.is_set():
                    bronze.poll()
                    silver.poll()
                    stop_following.wait(0.5)

            follower = threading.Thread(target=follow, daemon=True)
            follower.start()
            try:
                started = time.time()
                with JetStreamResource(servers=server.url).client() as js:
                    done = 0

                    def acked(total: int) -> None:
                        nonlocal done
                        now = time.time()
                        for event in events[done:total]:
                            published.setdefault(event.msg_id, now)
                        done = total

                    publish_events(js, events, rate=args.rate, on_progress=acked)
                print(f"published in {time.time() - started:.0f}s; waiting for silver", flush=True)
                deadline = time.time() + args.drain
                while time.time() < deadline and not all(e in silver.seen for e in good):
                    time.sleep(2)
                # The run that committed the last rows records its materialisation after the
                # commit: let it finish before the daemon (and its runs) stop.
                while time.time() < deadline and not recorded(instance, silver):
                    time.sleep(2)
            finally:
                stop_following.set()
                follower.join()
                stop_group(daemon)
        bronze_runs, silver_runs = run_times(instance, BRONZE), run_times(instance, SILVER)
        ingest_run_ids = sorted({run["run_id"] for _, run in bronze_runs})
        own_silver_runs = [item for item in silver_runs if item[1]["run_id"] not in ingest_run_ids]
        segments: dict[str, list[float]] = {
            name: []
            for name in (
                "publish_to_silver",
                "publish_to_bronze",
                "publish_to_ingest_run_created",
                "ingest_run_created_to_started",
                "ingest_run_started_to_bronze_commit",
                "further_batch_publish_to_bronze_commit",
                "bronze_commit_to_silver_commit",
                "silver_in_ingest_run_bronze_commit_to_silver_commit",
                "bronze_commit_to_silver_run_created",
                "silver_run_created_to_started",
                "silver_run_started_to_silver_commit",
            )
        }
        for event_id in good:
            sent, in_bronze, in_silver = (
                published.get(event_id),
                bronze.seen.get(event_id),
                silver.seen.get(event_id),
            )
            if sent is None or in_bronze is None or in_silver is None:
                continue
            segments["publish_to_silver"].append(in_silver - sent)
            segments["publish_to_bronze"].append(in_bronze - sent)
            ingest, refine = run_of(in_bronze, bronze_runs), run_of(in_silver, silver_runs)
            if ingest and ingest["batch"] > 1:  # taken by a run that kept going
                segments["further_batch_publish_to_bronze_commit"].append(in_bronze - sent)
            elif ingest and ingest["started"]:
                segments["publish_to_ingest_run_created"].append(ingest["created"] - sent)
                segments["ingest_run_created_to_started"].append(
                    ingest["started"] - ingest["created"]
                )
                segments["ingest_run_started_to_bronze_commit"].append(
                    in_bronze - ingest["started"]
                )
            segments["bronze_commit_to_silver_commit"].append(in_silver - in_bronze)
            same_run = bool(refine and ingest and refine["run_id"] == ingest["run_id"])
            if same_run:
                segments["silver_in_ingest_run_bronze_commit_to_silver_commit"].append(
                    in_silver - in_bronze
                )
            elif refine and refine["started"]:
                segments["bronze_commit_to_silver_run_created"].append(
                    refine["created"] - in_bronze
                )
                segments["silver_run_created_to_started"].append(
                    refine["started"] - refine["created"]
                )
                segments["silver_run_started_to_silver_commit"].append(
                    in_silver - refine["started"]
                )

        def durations(runs: list[tuple[float, dict]]) -> dict[str, float | None]:
            ended = [r for _, r in runs if r["started"] and r["ended"]]
            walls = {r["run_id"]: r["ended"] - r["started"] for r in ended}  # once per run
            return percentiles(list(walls.values()))

        results = {
            "started": stamp,
            "rate": args.rate,
            "stream_sensor_only": args.stream_sensor_only,
            "seconds": args.seconds,
            "events": count,
            "good_events": len(good),
            "visible_in_silver": sum(1 for e in good if e in silver.seen),
            "segments_s": {name: percentiles(values) for name, values in segments.items()},
            "ingest_runs": {
                "count": len({r["run_id"] for _, r in bronze_runs}),
                "batches": len(bronze_runs),
                "further_batches": sum(1 for _, r in bronze_runs if r["batch"] > 1),
                "wall_s": durations(bronze_runs),
                "phases_s": phase_percentiles(instance, ingest_run_ids),
            },
            "silver_in_ingest_runs": len(silver_runs) - len(own_silver_runs),
            "silver_runs": {
                "count": len(own_silver_runs),
                "wall_s": durations(own_silver_runs),
                "phases_s": phase_percentiles(instance, [r["run_id"] for _, r in own_silver_runs]),
            },
            "bronze_commits": len(bronze.commits),
            "silver_commits": len(silver.commits),
            "loadavg": os.getloadavg(),
            "python_speed_ms": {"before": speed_before, "after": python_speed_ms()},
        }
        if args.trace:
            for kind, runs in (("ingest", bronze_runs), ("silver", own_silver_runs)):
                if runs:
                    print(f"last {kind} run's event log:")
                    print_log(instance, runs[-1][1]["run_id"])
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=2))
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print(f"{results['visible_in_silver']:,} of {len(good):,} good events visible in silver")
    for name, figures in results["segments_s"].items():
        print(f"  {name:40s} p50 {figures['p50']}  p95 {figures['p95']}  max {figures['max']}")
    ingest_runs = results["ingest_runs"]
    print(
        f"  silver materialised {results['silver_in_ingest_runs']} time(s) in ingest runs; "
        f"{ingest_runs['batches']} bronze batches, {ingest_runs['further_batches']} of them "
        "further batches of a run that kept going"
    )
    for kind in ("ingest_runs", "silver_runs"):
        wall = results[kind]["wall_s"]
        print(f"  {kind}: {results[kind]['count']}, wall p50 {wall['p50']} s, max {wall['max']} s")
        for phase, figures in results[kind]["phases_s"].items():
            print(f"    {phase:38s} p50 {figures['p50']}  max {figures['max']}")
    speed = results["python_speed_ms"]
    print(f"  python_speed_ms {speed['before']} before, {speed['after']} after (lower: faster)")
    print(f"results: {out}")
    return results


if __name__ == "__main__":
    main()
