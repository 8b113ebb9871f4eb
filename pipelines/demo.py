"""The demo and `make dev`: an embedded nats-server, the topology, sample events, Dagster.

`run_demo` does what the README's first command promises: start an embedded nats-server
(unless `NATS_URL` is set), provision the topology, publish sample FileDeletedEvents (a few
of them bad on purpose), materialise every asset through the `dagster` CLI, run the ingests
and silver once more to land the FilePlacedInTrashEvents the first pass published, print a
summary (tables, quarantine, quality checks, artifacts, consumers), and stop the server.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from pipelines.file_trash.events import FILE_DELETED_SUBJECT
from pipelines.file_trash.generator import generate_event_mix, publish_events, summarize
from pipelines.file_trash.topology import FILE_TRASH_TOPOLOGY, INGESTS
from pipelines.settings import PROJECT_DIR, Settings
from resources.jetstream import EmbeddedNatsServer, JetStreamClient, JetStreamResource, reconcile

DEFINITIONS_MODULE = "pipelines.definitions"
DEFAULT_BAD_SHARE = 0.05
# The second pass: the ingests and silver, which take in what the first pass published.
SECOND_PASS = (
    "bronze/file_events,audit/audit_log,silver/file_deleted,silver/file_trashed,silver/quarantine"
)


def say(message: str) -> None:
    print(f"[demo] {message}", flush=True)


@contextlib.contextmanager
def nats_server(settings: Settings) -> Iterator[str]:
    """Yields a NATS URL: `$NATS_URL` if set, else an embedded server's, stopped on exit."""
    if os.environ.get("NATS_URL"):
        say(f"using NATS at {os.environ['NATS_URL']} (NATS_URL)")
        yield os.environ["NATS_URL"]
        return
    with EmbeddedNatsServer(store_dir=settings.nats_store_dir) as server:
        say(f"started embedded nats-server at {server.url} (store: {settings.nats_store_dir})")
        try:
            yield server.url
        finally:
            say("stopping the embedded nats-server")


def provision(js: JetStreamClient) -> None:
    """Reconciles the file trash topology and prints what changed."""
    for change in reconcile(js, FILE_TRASH_TOPOLOGY):
        say(f"  {change}")


def publish_sample(js: JetStreamClient, count: int, bad_share: float = 0.0) -> None:
    """Publishes `count` fresh FileDeletedEvents (with msg-ids), `bad_share` of them bad."""
    events = generate_event_mix(count, bad_share=bad_share, now=dt.datetime.now(dt.UTC))
    kinds = ", ".join(f"{n} {kind}" for kind, n in summarize(events).items() if n)
    say(f"  {kinds}")
    step = max(count // 4, 1)
    reported = 0

    def progress(sent: int) -> None:
        nonlocal reported
        if sent - reported >= step or sent == count:
            reported = sent
            say(f"  published {sent}/{count}")

    summary = publish_events(js, events, on_progress=progress)
    say(f"  stream seq {summary.first_seq}-{summary.last_seq}")


# The local Dagster instance (written once; edit it freely afterwards). The run queue runs
# one run at a time per ingest (tag `jsl/ingest`) and per replay request, so a sensor's
# backfill pieces go one after another (docs/automation.md).
INSTANCE_YAML = """\
# Dagster instance of `make dev` / `make demo` (written by pipelines/demo.py if missing).
run_coordinator:
  module: dagster.core.run_coordinator
  class: QueuedRunCoordinator
  config:
    tag_concurrency_limits:
      - key: jsl/ingest
        value: {applyLimitPerUniqueValue: true}
        limit: 1
      - key: jsl/replay
        value: {applyLimitPerUniqueValue: true}
        limit: 1
telemetry:
  enabled: false
"""


def ensure_instance_config(dagster_home: Path) -> Path:
    """Writes `dagster.yaml` in `dagster_home` unless one exists; returns its path."""
    dagster_home.mkdir(parents=True, exist_ok=True)
    config = dagster_home / "dagster.yaml"
    if not config.exists():
        config.write_text(INSTANCE_YAML)
    return config


def dagster_env(settings: Settings, nats_url: str) -> dict[str, str]:
    """The environment for `dagster` subprocesses: the server, the data dir, DAGSTER_HOME."""
    ensure_instance_config(settings.dagster_home)
    return {
        **os.environ,
        "NATS_URL": nats_url,
        "LAKEHOUSE_DATA_DIR": str(settings.data_dir),
        "LAKEHOUSE_ROOT": settings.lakehouse_root,
        "DAGSTER_HOME": str(settings.dagster_home),
    }


def dagster_command(*args: str) -> list[str]:
    """`dagster ARGS`, using the dagster beside the running interpreter."""
    return [str(Path(sys.executable).parent / "dagster"), *args]


def materialize(settings: Settings, nats_url: str, selection: str = "*") -> None:
    """Materialises the selected assets of the code location through the dagster CLI."""
    command = dagster_command(
        "asset", "materialize", "-m", DEFINITIONS_MODULE, "--select", selection
    )
    say(f"running: {' '.join(command[1:])}")
    subprocess.run(command, env=dagster_env(settings, nats_url), cwd=PROJECT_DIR, check=True)


def summarize_run(settings: Settings, js: JetStreamClient) -> bool:
    """Prints tables, quarantine, checks, artifacts and consumers; True if all caught up."""
    from dagster import DagsterInstance

    from pipelines.definitions import defs

    instance = DagsterInstance.from_config(str(settings.dagster_home))
    say("summary (latest materialisation of each asset)")
    for key in sorted(defs.resolve_all_asset_keys(), key=lambda k: k.path):
        if key.path[0] == "jetstream":
            continue
        event = instance.get_latest_materialization_event(key)
        meta = event.asset_materialization.metadata if event and event.asset_materialization else {}
        if not meta:
            say(f"  {key.to_user_string():<32} not materialised")
            continue
        say(f"  {key.to_user_string():<32} {describe(meta)}")
    checks = list(defs.resolve_asset_graph().asset_check_keys)
    latest = instance.event_log_storage.get_latest_asset_check_execution_by_key(checks)
    failed = sorted(
        key.name
        for key, record in latest.items()
        if record.evaluation and not record.evaluation.passed
    )
    say(f"  quality checks: {len(latest)} evaluated, failed: {', '.join(failed) or 'none'}")
    caught_up = True
    for ingest in INGESTS:
        stream = js.streams.info(ingest.stream)
        consumer = js.consumers.info(ingest.stream, ingest.durable)
        behind = consumer.num_pending
        caught_up &= behind == 0
        say(
            f"  consumer {consumer.name!r} on {stream.name} (last seq {stream.last_seq}): "
            f"ack floor {consumer.ack_floor_stream_seq}, pending {behind}"
            + ("" if behind == 0 else "  <-- NOT CAUGHT UP")
        )
    say(f"  Dagster runs are in {settings.dagster_home} (`make dev` shows them)")
    say("  artifacts: `jsl artifacts list --embedded` (validation reports, run manifests)")
    return caught_up


def describe(meta: dict) -> str:
    """One line from an asset's materialisation metadata: rows, quarantine, events, path."""
    parts = []
    for name, label in (
        ("dagster/row_count", "rows"),
        ("rows_written", "written this run"),
        ("published", "published"),
        ("duplicates", "duplicates"),
    ):
        if name in meta:
            parts.append(f"{meta[name].value} {label}")
    by_rule = sorted(
        (name.removeprefix("quarantined_"), value.value)
        for name, value in meta.items()
        if name.startswith("quarantined_")
    )
    if by_rule:
        parts.append("by rule: " + ", ".join(f"{rule} {rows}" for rule, rows in by_rule))
    return ", ".join(parts)


def run_demo(
    events: int, settings: Settings | None = None, bad_share: float = DEFAULT_BAD_SHARE
) -> int:
    """Runs the whole demo; returns the process exit code."""
    settings = settings or Settings.from_env()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    with nats_server(settings) as url:
        with JetStreamResource(servers=url).client() as js:
            say("provisioning the topology")
            provision(js)
            say(f"publishing {events} FileDeletedEvents on {FILE_DELETED_SUBJECT!r}")
            publish_sample(js, events, bad_share)
        try:
            say("pass 1: every asset (ingests, silver + checks, gold, downstream events)")
            materialize(settings, url)
            say("pass 2: the ingests and silver take in the FilePlacedInTrashEvents of pass 1")
            materialize(settings, url, SECOND_PASS)
        except subprocess.CalledProcessError as error:
            say(f"dagster exited with {error.returncode}; see its output above")
            return error.returncode or 1
        with JetStreamResource(servers=url).client() as js:
            caught_up = summarize_run(settings, js)
    return 0 if caught_up else 1


def run_dev(settings: Settings | None = None, extra_args: list[str] | None = None) -> int:
    """Starts the Dagster UI and daemon (`dagster dev`) against the embedded server."""
    settings = settings or Settings.from_env()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    with nats_server(settings) as url:
        with JetStreamResource(servers=url).client() as js:
            provision(js)
        command = dagster_command("dev", "-w", str(PROJECT_DIR / "workspace.yaml"))
        command += extra_args or []
        say(f"running: {' '.join(command[1:])}  (Ctrl-C stops it and the nats-server)")
        with contextlib.suppress(KeyboardInterrupt):
            return subprocess.call(command, env=dagster_env(settings, url), cwd=PROJECT_DIR)
    return 0
