"""The demo and `make dev`: an embedded nats-server, the topology, sample events, Dagster.

`run_demo` does what the README's first command promises: start an embedded nats-server
(unless `NATS_URL` is set), provision the topology, publish sample FileDeletedEvents,
materialise every asset through the `dagster` CLI, print a summary, and stop the server.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from pipelines.file_trash.events import FILE_DELETED_SUBJECT, generate_file_deleted_events
from pipelines.file_trash.topology import BRONZE_FILE_EVENTS, FILE_TRASH_TOPOLOGY
from pipelines.settings import PROJECT_DIR, Settings
from resources.jetstream import EmbeddedNatsServer, JetStreamClient, JetStreamResource, reconcile
from resources.jetstream.messages import MSG_ID_HEADER

DEFINITIONS_MODULE = "pipelines.definitions"


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


def publish_sample(js: JetStreamClient, count: int) -> None:
    """Publishes `count` fresh FileDeletedEvents (with msg-ids), reporting progress."""
    events = generate_file_deleted_events(count, now=dt.datetime.now(dt.UTC))
    step = max(count // 4, 1)
    published = 0
    batch: list[tuple[str, bytes, dict[str, str]]] = []
    for event in events:
        batch.append((FILE_DELETED_SUBJECT, event.to_json(), {MSG_ID_HEADER: event.eventId}))
        if len(batch) == step:
            acks = js.publish_batch(batch)
            published += len(batch)
            batch.clear()
            say(f"  published {published}/{count} (last seq {acks[-1].seq})")
    if batch:
        acks = js.publish_batch(batch)
        say(f"  published {count}/{count} (last seq {acks[-1].seq})")


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


def materialize_all(settings: Settings, nats_url: str) -> None:
    """Materialises every asset of the code location through the dagster CLI."""
    command = dagster_command("asset", "materialize", "-m", DEFINITIONS_MODULE, "--select", "*")
    say(f"running: {' '.join(command[1:])}")
    subprocess.run(command, env=dagster_env(settings, nats_url), cwd=PROJECT_DIR, check=True)


def summarize(settings: Settings, js: JetStreamClient) -> bool:
    """Prints rows per table and the consumer's position; True if the consumer caught up."""
    from dagster import AssetKey, DagsterInstance

    from pipelines.definitions import defs

    instance = DagsterInstance.from_config(str(settings.dagster_home))
    say("summary")
    for key in defs.resolve_all_asset_keys():
        if key.path[0] == "jetstream":
            continue
        event = instance.get_latest_materialization_event(AssetKey(key.path))
        if event is None or event.asset_materialization is None:
            say(f"  {key.to_user_string():<28} not materialised")
            continue
        meta = event.asset_materialization.metadata
        rows = meta.get("dagster/row_count")
        path = meta.get("table_path")
        say(
            f"  {key.to_user_string():<28} {rows.value if rows else '?':>8} rows"
            f"   {path.value if path else ''}"
        )
    stream = js.streams.info(BRONZE_FILE_EVENTS.stream)
    consumer = js.consumers.info(BRONZE_FILE_EVENTS.stream, BRONZE_FILE_EVENTS.durable)
    caught_up = consumer.ack_floor_stream_seq == stream.last_seq
    say(
        f"  stream {stream.name}: {stream.messages} messages, last seq {stream.last_seq}; "
        f"consumer {consumer.name!r}: ack floor {consumer.ack_floor_stream_seq}, "
        f"pending {consumer.num_pending}" + ("" if caught_up else "  <-- NOT CAUGHT UP")
    )
    say(f"  Dagster runs are in {settings.dagster_home} (`make dev` shows them)")
    return caught_up


def run_demo(events: int, settings: Settings | None = None) -> int:
    """Runs the whole demo; returns the process exit code."""
    settings = settings or Settings.from_env()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    with nats_server(settings) as url:
        with JetStreamResource(servers=url).client() as js:
            say("provisioning the topology")
            provision(js)
            say(f"publishing {events} FileDeletedEvents on {FILE_DELETED_SUBJECT!r}")
            publish_sample(js, events)
        try:
            materialize_all(settings, url)
        except subprocess.CalledProcessError as error:
            say(f"dagster exited with {error.returncode}; see its output above")
            return error.returncode or 1
        with JetStreamResource(servers=url).client() as js:
            caught_up = summarize(settings, js)
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
