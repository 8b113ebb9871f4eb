"""The demo and `make dev`: an embedded nats-server, the topology, sample events, Dagster.

`run_demo` does what the README's first command promises: start an embedded nats-server
(unless `NATS_URL` is set; with `--s3`, an embedded S3 server too, which holds the tables),
provision the topology, publish sample FileDeletedEvents (a few of them bad on purpose;
pipelines/cli/demo_sample.py), materialise every asset through the
`dagster` CLI, run the ingests and silver once more to land the FilePlacedInTrashEvents the
first pass published, print a summary (pipelines/cli/demo_summary.py) and what to try next, and
stop the server. The console gets a line per step and per asset materialised; Dagster's,
Spark's and Ivy's output goes to a log file under the data dir (pipelines/cli/demo_output.py).

`run_dev` runs `dagster dev` against the embedded server and, on Ctrl-C, stops Dagster and
everything it started (pipelines/cli/supervise.py) before it stops the server.

Both run from this repository's checkout (`SOURCE_DIR`: its `workspace.yaml` and
`pyproject.toml`, which `dg launch` loads), and keep their state in the data directory
(`pipelines.settings`; the Dagster home is its `dagster_home`), which they hand to every
`dagster` process through `LAKEHOUSE_DATA_DIR`, `LAKEHOUSE_ROOT` and `DAGSTER_HOME`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from pipelines.cli.demo_output import DemoError, DemoOutput, StepFailed
from pipelines.cli.demo_sample import publish_sample
from pipelines.cli.demo_summary import RunReport, describe, print_next_steps, summarize_run
from pipelines.cli.provisioning import declared_topology
from pipelines.cli.supervise import Supervisor
from pipelines.file_trash.events import FILE_DELETED_SUBJECT
from pipelines.settings import SOURCE_DIR, Settings
from resources.jetstream import EmbeddedNatsServer, JetStreamClient, JetStreamResource, reconcile
from resources.jetstream.connection.settings import redact_url
from resources.jetstream.environment import CREDENTIAL_VARIABLES
from resources.object_store.server import EmbeddedS3Server

DEFAULT_BAD_SHARE = 0.05
# The second pass: the ingests and silver, which take in what the first pass published.
SECOND_PASS = (
    "bronze/file_events,audit/audit_log,silver/file_deleted,silver/file_trashed,silver/quarantine"
)


def say(message: str) -> None:
    """Prints `[demo] message` (what `make dev` prints; the demo prints through DemoOutput)."""
    print(f"[demo] {message}", flush=True)


@contextlib.contextmanager
def nats_server(settings: Settings, say: Callable[[str], None] = say) -> Iterator[str]:
    """Yields a NATS URL: `$NATS_URL` if set, else an embedded server's, stopped on exit."""
    if os.environ.get("NATS_URL"):
        say(f"using NATS at {redact_url(os.environ['NATS_URL'])} (NATS_URL)")
        yield os.environ["NATS_URL"]
        return
    with EmbeddedNatsServer(store_dir=settings.nats_store_dir) as server:
        say(f"started embedded nats-server at {server.url} (store: {settings.nats_store_dir})")
        yield server.url


OFF = {"0", "off", "false", "no"}


@contextlib.contextmanager
def s3_server(settings: Settings) -> Iterator[tuple[EmbeddedS3Server, Settings]]:
    """An embedded S3 server (SeaweedFS) on the demo's data (`<data dir>/s3`), for `--s3`.

    While it runs, this process's environment points every run at it, as a user's would
    point them at their object store: the credentials the server was given in the AWS
    chain's variables, its endpoint in `JSL_SPARK_CONF` (S3A's settings, kept beside any
    already there); the settings returned put the tables in its bucket. All is put back after.
    """
    with EmbeddedS3Server(data_dir=settings.data_dir / "s3") as server:
        conf = json.loads(os.environ.get("JSL_SPARK_CONF") or "{}")
        changed = {
            **server.env(),
            "JSL_SPARK_CONF": json.dumps({**conf, **server.spark_conf()}),
        }
        before = {name: os.environ.get(name) for name in changed}
        os.environ.update(changed)
        try:
            yield server, dataclasses.replace(settings, lakehouse_root=server.root("lakehouse"))
        finally:
            for name, value in before.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def turned_off(variable: str) -> bool:
    """Whether the environment variable `variable` is set to off (`0`, `off`, `false`, `no`)."""
    return os.environ.get(variable, "").lower() in OFF


@contextlib.contextmanager
def spark_server(settings: Settings, say: Callable[[str], None] = say) -> Iterator[str | None]:
    """Yields the Spark Connect URL the runs should use, or None for a JVM per run.

    `$SPARK_REMOTE` if set (a server someone else runs); None if `JSL_DEV_SPARK_CONNECT` is
    off; else a server started here (`resources/spark_connect.py`, log in the data dir) and
    warmed up (`warm_up`, a scratch table in the data dir; not if `JSL_DEV_SPARK_WARM_UP` is
    off, when the first run pays for it), stopped on exit.
    """
    if os.environ.get("SPARK_REMOTE"):
        say(f"using Spark Connect at {os.environ['SPARK_REMOTE']} (SPARK_REMOTE)")
        yield os.environ["SPARK_REMOTE"]
        return
    if turned_off("JSL_DEV_SPARK_CONNECT"):
        say("Spark: a JVM per run (JSL_DEV_SPARK_CONNECT is off)")
        yield None
        return
    from resources.spark import SparkSettings  # pyspark: only for `jsl dev`, not every jsl
    from resources.spark_connect import ConnectServer

    log = settings.data_dir / "spark-connect.log"
    say(f"starting a Spark Connect server for the runs (log: {log})")
    with ConnectServer(SparkSettings.resolve(data_dir=str(settings.data_dir)), log) as server:
        say(f"Spark Connect server at {server.url}; runs use it (SPARK_REMOTE)")
        if turned_off("JSL_DEV_SPARK_WARM_UP"):
            say("Spark Connect server not warmed up (JSL_DEV_SPARK_WARM_UP is off)")
        else:
            _warm(server.url, settings.data_dir, log, say)
        try:
            yield server.url
        finally:
            say("stopping the Spark Connect server")


def _warm(url: str, scratch: Path, log: Path, say: Callable[[str], None]) -> None:
    """Warms the server at `url` up (`warm_up`, its scratch table under `scratch`); a failure
    is reported, not raised."""
    from resources.spark_connect import warm_up

    try:
        seconds = warm_up(url, scratch)
    except Exception as error:  # the server still serves; only its first run is slower
        say(
            f"warning: warming the Spark Connect server up failed ({error}); its first run "
            f"pays for it. The server's log is {log}"
        )
    else:
        say(f"Spark Connect server warmed up in {seconds:.1f} s (Delta, Python workers)")


def jetstream(url: str) -> JetStreamResource:
    """The resource for `url` from `nats_server`: on `$NATS_URL`, with the credentials and TLS
    files of the environment (`NATS_USER`, `NATS_CREDS`, `NATS_CA`, ...); on the embedded
    server, which has neither auth nor TLS, without them."""
    if os.environ.get("NATS_URL"):
        return JetStreamResource.from_env()
    return JetStreamResource(servers=url)


def provision(js: JetStreamClient) -> str:
    """Reconciles the declared topology (the file trash pipeline's and every declared
    stream's, `pipelines/cli/provisioning.py`); returns what it did, e.g. `created 1 stream, ...`.

    Changes that update an object are spelled out (field: old -> new).
    """
    by_action: dict[str, dict[str, int]] = {}
    updates = []
    for change in reconcile(js, declared_topology()):
        kinds = by_action.setdefault(change.action.value, {})
        kinds[change.kind] = kinds.get(change.kind, 0) + 1
        if change.diff:
            updates.append(str(change))
    counts = "; ".join(
        action + " " + ", ".join(f"{n} {kind}{'s' if n > 1 else ''}" for kind, n in kinds.items())
        for action, kinds in by_action.items()
    )
    return "; ".join([counts, *updates])


# The local Dagster instance (written once; edit it freely afterwards). The run queue runs
# one run at a time per ingest (tag `jsl/ingest`) and per replay request, so a sensor's
# backfill pieces go one after another, and the daemon looks at it every second, not every
# 5 s (Dagster's default): a requested run waits less (docs/automation.md).
INSTANCE_YAML = """\
# Dagster instance of `make dev` / `make demo` (written by pipelines/cli/demo.py if missing).
run_coordinator:
  module: dagster.core.run_coordinator
  class: QueuedRunCoordinator
  config:
    dequeue_interval_seconds: 1
    tag_concurrency_limits:
      - key: jsl/ingest
        value: {applyLimitPerUniqueValue: true}
        limit: 1
      - key: jsl/replay
        value: {applyLimitPerUniqueValue: true}
        limit: 1
# Run monitoring: a run that never got going (its process died while it started) is marked
# failed after start_timeout_seconds. A run killed while it works is the stream sensor's to
# see (its `jsl/alive-until` tag stops moving): docs/operations.md.
run_monitoring:
  enabled: true
  start_timeout_seconds: 180
  cancel_timeout_seconds: 180
  max_resume_run_attempts: 0
  poll_interval_seconds: 30
telemetry:
  enabled: false
"""


def ensure_instance_config(dagster_home: Path) -> Path:
    """Writes `dagster.yaml` in `dagster_home` unless one exists; returns its path. A file
    this module wrote before run monitoring was in it gets that section added (a file
    someone else wrote is left as it is)."""
    dagster_home.mkdir(parents=True, exist_ok=True)
    config = dagster_home / "dagster.yaml"
    if not config.exists():
        config.write_text(INSTANCE_YAML)
        return config
    text = config.read_text()
    ours = text.startswith(INSTANCE_YAML.splitlines()[0])
    if ours and "\nrun_monitoring:" not in text:
        start = INSTANCE_YAML.index("# Run monitoring")
        config.write_text(text + INSTANCE_YAML[start : INSTANCE_YAML.index("telemetry:")])
    return config


def dagster_env(settings: Settings, nats_url: str) -> dict[str, str]:
    """The environment for `dagster` subprocesses: the server, the data dir, DAGSTER_HOME.

    On the embedded server, the environment's NATS credentials and TLS files are left out:
    they are meant for the server `$NATS_URL` names, and the embedded one has neither.
    """
    ensure_instance_config(settings.dagster_home)
    embedded = not os.environ.get("NATS_URL")
    inherited = {
        name: value
        for name, value in os.environ.items()
        if not (embedded and name in CREDENTIAL_VARIABLES)
    }
    return {
        **inherited,
        "NATS_URL": nats_url,
        "LAKEHOUSE_DATA_DIR": str(settings.data_dir),
        "LAKEHOUSE_ROOT": settings.lakehouse_root,
        "DAGSTER_HOME": str(settings.dagster_home),
    }


def dagster_command(*args: str) -> list[str]:
    """`dagster ARGS`, using the dagster beside the running interpreter."""
    return [str(Path(sys.executable).parent / "dagster"), *args]


def materialize(out: DemoOutput, settings: Settings, nats_url: str, selection: str) -> RunReport:
    """Materialises the selected assets with `dg launch`, with a progress bar.

    The CLI's output goes to the log; what the run did is read from the instance's event
    log afterwards (and polled for the progress bar), then printed one line per asset.

    Raises:
        DemoError: the command failed; the message has the failing step's error if the run
            got that far, else the command's last line of output.
    """
    from dagster import DagsterInstance

    # dg finds the code location through pyproject.toml's [tool.dg] (pipelines.definitions).
    command = [str(Path(sys.executable).parent / "dg"), "launch", "--assets", selection]
    env = dagster_env(settings, nats_url)  # writes DAGSTER_HOME/dagster.yaml if missing
    started = dt.datetime.now(dt.timezone.utc)
    with DagsterInstance.from_config(str(settings.dagster_home)) as instance:
        report = RunReport(instance, started)
        total = report.selected_assets(selection)
        with out.progress(total, "materialising", unit="asset") as bar:

            def poll() -> None:
                bar.update(report.poll() - bar.n)

            code, last_line = out.run(command, env=env, cwd=SOURCE_DIR, poll=poll)
        for key, meta in report.materializations():
            out.say(f"  {key:<30} {describe(meta)}")
        if code != 0:
            raise DemoError(
                f"`dg launch --assets {selection}` exited with {code}: "
                + (report.failure() or last_line or "no output")
            )
    return report


def run_demo(
    events: int,
    settings: Settings | None = None,
    bad_share: float = DEFAULT_BAD_SHARE,
    verbose: bool = False,
    s3: bool = False,
) -> int:
    """Runs the whole demo; returns the process exit code.

    Args:
        events: sample FileDeletedEvents to publish.
        settings: where the data lives (default: from the environment).
        bad_share: the share of them that is bad on purpose (quarantined by silver).
        verbose: show Dagster's, Spark's and Ivy's output live, not only in the log.
        s3: keep the tables in an embedded S3 server (SeaweedFS, `s3_server`), not a folder.

    Returns:
        0 when every step worked and the consumers caught up, else 1.
    """
    settings = settings or Settings.from_env()
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    log_path = settings.data_dir / "logs" / f"demo-{stamp}.log"
    with DemoOutput(log_path, verbose=verbose) as out:
        out.log(settings.locations(settings.dagster_home))  # `jsl`'s first line, in the log too
        out.say(f"full output (Dagster, Spark, Ivy) goes to {log_path}")
        try:
            caught_up = _run_steps(out, settings, events, bad_share, s3)
        except StepFailed:
            out.say(f"full log: {log_path}")
            return 1
        except KeyboardInterrupt:
            out.say(f"interrupted; full log: {log_path}")
            return 130
        out.say(f"full log: {log_path}")
        return 0 if caught_up else 1


def _run_steps(
    out: DemoOutput, settings: Settings, events: int, bad_share: float, s3: bool
) -> bool:
    """The demo's steps; True if the consumers caught up with their streams."""
    embedded = not os.environ.get("NATS_URL")
    with contextlib.ExitStack() as stack:
        if s3:
            with out.step("S3 server") as step:
                server, settings = stack.enter_context(s3_server(settings))
                step.result = (
                    f"SeaweedFS at {server.endpoint.url}, tables at {settings.lakehouse_root}, "
                    f"data {server.data_dir}"
                )
        with out.step("nats-server") as step:
            url = stack.enter_context(nats_server(settings, say=out.log))
            step.result = (
                f"embedded at {url}, store {settings.nats_store_dir}"
                if embedded
                else f"{redact_url(url)} (NATS_URL)"
            )
        with contextlib.ExitStack() as connection:
            with out.step("topology") as step:
                js = connection.enter_context(jetstream(url).client())
                step.result = provision(js)
            with out.step(
                f"published {events} FileDeletedEvents on {FILE_DELETED_SUBJECT!r}"
            ) as step:
                with out.progress(events, "publishing", unit="event") as bar:
                    published = publish_sample(
                        js, events, bad_share, on_progress=lambda n: bar.update(n - bar.n)
                    )
                step.result = f"stream seq {published.first_seq}-{published.last_seq}"
        passes = []
        for title, selection in (
            ("pass 1: every asset (ingests, silver + checks, gold, events)", "*"),
            ("pass 2: ingests and silver take in pass 1's FilePlacedInTrashEvents", SECOND_PASS),
        ):
            with out.step(title, long=True) as step:
                passes.append(materialize(out, settings, url, selection))
                step.result = passes[-1].outcome()
        with (
            out.step("summary", long=True, timed=False),
            jetstream(url).client() as js,
        ):
            caught_up = summarize_run(out, settings, js, passes, published)
        print_next_steps(out, settings, url if not embedded else None)
        return caught_up


def run_dev(settings: Settings | None = None, extra_args: list[str] | None = None) -> int:
    """Starts the Dagster UI and daemon (`dagster dev`) against the embedded server.

    The runs share one Spark Connect server started and warmed up here (`spark_server`; a JVM
    per run with `JSL_DEV_SPARK_CONNECT=off`, no warm-up with `JSL_DEV_SPARK_WARM_UP=off`).
    Ctrl-C (SIGINT), SIGTERM or SIGHUP go to `dagster dev`'s own process group; it gets a grace
    period to shut down its webserver, daemon and code servers, then SIGTERM and SIGKILL;
    whatever it left is killed; only then do the Spark Connect server and the nats-server stop.

    Returns:
        `dagster dev`'s exit code, or 128 + the signal's number when a signal stopped it.
    """
    settings = settings or Settings.from_env()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    with nats_server(settings) as url, spark_server(settings) as remote:
        with jetstream(url).client() as js:
            say(f"topology: {provision(js)}")
        command = dagster_command("dev", "-w", str(SOURCE_DIR / "workspace.yaml"))
        command += extra_args or []
        say(f"running: {' '.join(command[1:])}  (Ctrl-C stops it and the servers)")
        env = dagster_env(settings, url) | ({"SPARK_REMOTE": remote} if remote else {})
        supervisor = Supervisor(command, env=env, cwd=SOURCE_DIR, say=say)
        code = supervisor.run()
        say(f"dagster dev exited ({code})")
        if not os.environ.get("NATS_URL"):
            say("stopping the embedded nats-server")
    return code
