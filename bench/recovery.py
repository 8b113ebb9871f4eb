"""Recovery after a kill during bronze (issue 51): from the SIGKILL to the range landed.

A real nats-server and `dagster-daemon run` with the stream sensor of
`tests/sensors/daemon_location.py`, at the project's defaults unless told otherwise (lease
and liveness TTL 30 s, a sensor tick every 30 s). Each round publishes `--events` events,
arms the kill and lets a run take them; the run SIGKILLs itself once it has planned its
range (no `finally`, no lease release, its JVM gone with it). Two kinds of round:

- `orphan`: a `dagster job execute` run, with no code server to notice its death (the
  daemon is started right after the kill, as after a `make dev` that died with it); only
  the sensor's liveness verdict can fail it;
- `launched`: a run the sensor launched, whose code server marks it failed at once; the
  recovery then waits out its lease.

For each kill: when the killed run was marked failed, when the recovery run was requested
(created) and started (its process began executing), and when the range landed (committed
and the consumer moved), all from the kill; the goal (issue 51)
is the range landed within lease_ttl + one sensor interval + a run's own time. Before
issue 51 an orphan was never failed, and a relaunch by hand within the lease failed after
starting Spark: recovery took 30-66 s (median 54.5 s) of relaunching until one got in.

    .venv/bin/python bench/recovery.py                      # 3 rounds of each, the defaults
    .venv/bin/python bench/recovery.py --connect            # runs on one Spark Connect server
    .venv/bin/python bench/recovery.py --rounds 1 --lease-ttl 6 --interval 1

`--connect` runs them as `make dev` does, on one long-lived Spark Connect server (started
and warmed up here), so a recovery run starts no JVM of its own.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(REPO))

from dagster import DagsterEventType, DagsterInstance, RunsFilter  # noqa: E402

from pipelines.cli.demo import spark_server  # noqa: E402
from pipelines.cli.supervise import stop_group  # noqa: E402
from pipelines.ingest.spec import IngestSpec  # noqa: E402
from pipelines.settings import Settings  # noqa: E402
from resources.jetstream import (  # noqa: E402
    EmbeddedNatsServer,
    JetStreamResource,
    StreamSpec,
    Topology,
    reconcile,
)
from tests.pipelines.ingest.harness import publish_events  # noqa: E402
from tests.sensors.test_daemon import (  # noqa: E402
    DAGSTER_YAML,
    daemon_env,
    execute_ingest_job,
    start_daemon,
)

WAIT = 600  # seconds for one round, at most


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="kills of each kind")
    parser.add_argument("--events", type=int, default=1000, help="events per round")
    parser.add_argument("--lease-ttl", type=float, default=30.0)
    parser.add_argument("--interval", type=int, default=30, help="seconds between ticks")
    parser.add_argument("--connect", action="store_true", help="runs on a Spark Connect server")
    parser.add_argument("--out", type=Path, default=None, help="the JSON (bench/results/...)")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="jsl-recovery-"))
    stream = f"R_{uuid.uuid4().hex[:8]}"
    home, armed = work / "dagster_home", work / "kill-armed"
    home.mkdir()
    (home / "dagster.yaml").write_text(DAGSTER_YAML)
    rows: list[dict] = []
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(EmbeddedNatsServer(store_dir=work / "nats"))
        remote = None
        if args.connect:
            settings = Settings.from_env({"LAKEHOUSE_DATA_DIR": str(work)})
            remote = stack.enter_context(spark_server(settings, say=print))
        spec = IngestSpec(name=stream.lower(), stream=stream, durable="bronze", table="t")
        topology = Topology(
            streams=(StreamSpec(stream, (f"{stream}.files.>",)),),
            consumers=(spec.consumer_spec(),),
        )
        env = daemon_env(
            home,
            server.url,
            stream,
            work / "lakehouse",
            JSL_TEST_LEASE_TTL=str(args.lease_ttl),
            JSL_TEST_SENSOR_INTERVAL=str(args.interval),
            JSL_TEST_KILL_ARMED=str(armed),
            **({"SPARK_REMOTE": remote} if remote else {}),
        )
        log = work / "daemon.log"
        with JetStreamResource(servers=server.url).client() as js:
            reconcile(js, topology)
            daemon = None
            try:
                for kind in ["orphan"] * args.rounds + ["launched"] * args.rounds:
                    if kind == "orphan" and daemon is not None:
                        stop_group(daemon)
                        daemon = None
                    armed.touch()
                    last = publish_events(js, stream, args.events, seed=len(rows))[-1]
                    if kind == "orphan":
                        killed_at = execute_killed(stream, env)
                        daemon = start_daemon(home, env, log)
                    else:
                        killed_at = wait_for(lambda: not armed.exists())
                    landed_at = wait_for(lambda last=last: floor(js, spec) >= last)
                    rows.append(measure(home, stream, kind, killed_at, landed_at))
                    print(json.dumps(rows[-1]), flush=True)
            finally:
                if daemon is not None:
                    stop_group(daemon)
    summary = report(rows, args)
    out = args.out or BENCH / "results" / f"recovery-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"args": vars(args) | {"out": str(out)}, "rounds": rows, **summary}))
    print(f"saved {out}")
    return 0


def execute_killed(stream: str, env: dict) -> float:
    """Runs the ingest's job with `dagster job execute`; returns when it killed itself."""
    done = execute_ingest_job(stream, env)
    if done.returncode != -9:
        raise SystemExit(f"the run was not killed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return time.time()


def floor(js, spec: IngestSpec) -> int:
    return js.consumers.info(spec.stream, spec.durable).ack_floor_stream_seq


def wait_for(condition) -> float:
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"not within {WAIT} s")
        time.sleep(0.2)
    return time.time()


def measure(home: Path, stream: str, kind: str, killed_at: float, landed_at: float) -> dict:
    """Seconds from the kill: the killed run marked failed, its recovery requested, and the
    range landed (committed, and the consumer moved past it)."""
    with DagsterInstance.from_config(str(home)) as instance:
        records = instance.get_run_records(RunsFilter(tags={"jsl/ingest": f"{stream}:bronze"}))
        recovery = max(
            (r for r in records if "jsl/recovers-run" in r.dagster_run.tags),
            key=lambda r: r.create_timestamp,
        )
        killed = recovery.dagster_run.tags["jsl/recovers-run"]
        [failure] = instance.all_logs(killed, of_type=DagsterEventType.RUN_FAILURE)
        started = recovery.start_time or 0.0  # the run's process began executing
    return {
        "kind": kind,
        "marked_failed_s": round(failure.timestamp - killed_at, 1),
        "failed_by": "sensor" if "marks this run failed" in failure.message else "code server",
        "recovery_requested_s": round(recovery.create_timestamp.timestamp() - killed_at, 1),
        "recovery_started_s": round(started - killed_at, 1),
        "landed_s": round(landed_at - killed_at, 1),
    }


def report(rows: list[dict], args) -> dict:
    spark = "one Spark Connect server" if args.connect else "a Spark JVM per run"
    print(f"\nlease_ttl {args.lease_ttl:g} s, sensor interval {args.interval} s, {spark}, medians:")
    print(f"{'kind':10} {'marked failed':>14} {'requested':>10} {'started':>8} {'landed':>8}")
    summary = {}
    for kind in ("orphan", "launched"):
        mine = [row for row in rows if row["kind"] == kind]
        if not mine:
            continue
        medians = {
            key: statistics.median(row[key] for row in mine)
            for key in ("marked_failed_s", "recovery_requested_s", "recovery_started_s", "landed_s")
        }
        summary[kind] = medians
        print(
            f"{kind:10} {medians['marked_failed_s']:>13.1f}s "
            f"{medians['recovery_requested_s']:>9.1f}s {medians['recovery_started_s']:>7.1f}s "
            f"{medians['landed_s']:>7.1f}s"
        )
    goal = args.lease_ttl + args.interval
    print(f"goal: recovery requested within lease_ttl + one interval = {goal:g} s")
    return {"medians": summary, "goal_requested_s": goal}


if __name__ == "__main__":
    sys.exit(main())
