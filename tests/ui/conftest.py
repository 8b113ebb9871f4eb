"""Fixtures for the UI and CLI tests: the code location run as Dagster's own processes run it.

Each deployment has its own embedded nats-server (temp store, provisioned with the file
trash topology: the code location's stream `FILE_EVENTS` on `files.>` would clash with other
tests' streams on the shared server), its own data directory and DAGSTER_HOME. The `dagster`
and `dagster-webserver` subprocesses get them through the variables `make dev` sets
(NATS_URL, LAKEHOUSE_DATA_DIR, LAKEHOUSE_ROOT, DAGSTER_HOME).

One `dagster-webserver` serves the whole session (`webserver` on `ui_env`), shared by
test_webserver.py and test_asset_graph.py; every CLI test gets a fresh deployment
(`cli_env`), so stream sequences, and so the commands in docs/dagster.md, are the same
whatever ran before.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pipelines.cli.demo_sample import publish_sample
from pipelines.file_trash.topology import BRONZE_FILE_EVENTS, FILE_TRASH_TOPOLOGY
from resources.jetstream import EmbeddedNatsServer, JetStreamResource, reconcile
from tests.ui import Webserver

PROJECT_DIR = Path(__file__).resolve().parents[2]
BIN_DIR = Path(sys.executable).parent
WORKSPACE = "workspace.yaml"
WEBSERVER_START_TIMEOUT = 240.0  # seconds: the code server imports pyspark and dagster
COMMAND_TIMEOUT = 600.0  # seconds: one `dagster` CLI command, JVM start-up included

# Variables of the caller that would point the subprocesses elsewhere.
_INHERITED_OUT = ("NATS_URL", "DAGSTER_HOME", "LAKEHOUSE_DATA_DIR", "LAKEHOUSE_ROOT")
# DAGSTER_HOME/dagster.yaml of the test deployments. Dagster 1.13's default coordinator
# queues runs for the daemon; these deployments run no daemon, so runs launched through the
# webserver or `dagster job launch` start at once (DefaultRunLauncher: a subprocess of the
# code server). No telemetry, and no 'join the community' dialog over screenshots.
INSTANCE_YAML = """\
run_coordinator:
  module: dagster._core.run_coordinator
  class: DefaultRunCoordinator
telemetry:
  enabled: false
nux:
  enabled: false
"""


def kill_process_group(pgid: int) -> None:
    """SIGKILLs what is left of a process group this test session started."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def processes_in_group(pgid: int) -> list[str]:
    """`pid command` of each live process in a process group (read from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if fields[0] != "Z" and int(fields[2]) == pgid:
                cmdline = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ")
                found.append(f"{stat.parent.name} {cmdline.decode(errors='replace')[:160]}")
    return found


def interrupt_process_group(process: subprocess.Popen, grace: float = 60.0) -> list[str]:
    """Sends SIGINT to a process group, as Ctrl-C in a terminal does, and waits for it.

    Returns:
        The processes of the group still alive after `grace` seconds (empty when all
        of them shut down on the interrupt).
    """
    deadline = time.monotonic() + grace
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGINT)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=grace)
    while (left := processes_in_group(process.pid)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


def stop_process_group(process: subprocess.Popen, grace: float = 30.0) -> None:
    """Stops a process started with `start_new_session=True` and everything it started.

    SIGINT first (Dagster's processes shut their children down on it), then SIGKILL for
    whatever is left in the group (code server, runs, JVMs).
    """
    if process.poll() is None:
        interrupt_process_group(process, grace)
    kill_process_group(process.pid)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=10)


@dataclass
class CodeLocationEnv:
    """A provisioned nats-server plus the directories and environment of one deployment.

    Attributes:
        nats_url: the embedded server's client URL.
        data_dir: LAKEHOUSE_DATA_DIR of the subprocesses.
        dagster_home: DAGSTER_HOME of the subprocesses (a sqlite-backed instance).
        lakehouse_root: LAKEHOUSE_ROOT, where the Delta tables go.
        env: the complete environment for `dagster` subprocesses.
    """

    nats_url: str
    data_dir: Path
    dagster_home: Path
    lakehouse_root: Path
    env: dict[str, str] = field(repr=False)
    process_groups: list[int] = field(default_factory=list, repr=False)

    def publish(self, count: int) -> int:
        """Publishes `count` sample FileDeletedEvents; returns the stream's last sequence."""
        with JetStreamResource(servers=self.nats_url).client() as js:
            publish_sample(js, count)
            return js.streams.info(BRONZE_FILE_EVENTS.stream).last_seq

    def consumer_ack_floor(self) -> int:
        """The bronze consumer's ack floor: the stream position committed to Delta."""
        with JetStreamResource(servers=self.nats_url).client() as js:
            info = js.consumers.info(BRONZE_FILE_EVENTS.stream, BRONZE_FILE_EVENTS.durable)
            return info.ack_floor_stream_seq

    @property
    def bronze_table(self) -> Path:
        """Where the bronze file_events Delta table lives."""
        return self.lakehouse_root / BRONZE_FILE_EVENTS.table

    def dagster(
        self, *args: str, cwd: Path = PROJECT_DIR, timeout: float = COMMAND_TIMEOUT
    ) -> subprocess.CompletedProcess:
        """Runs `dagster ARGS` as a CI job would, in its own process group.

        What the command leaves running (a run launched with `dagster job launch` goes on in
        the code server it started) is killed when the deployment is torn down.

        Args:
            *args: the arguments after `dagster`.
            cwd: the working directory (the project, where workspace.yaml is).
            timeout: seconds before the command and its children are killed.

        Returns:
            The completed process, with text stdout and stderr.
        """
        command = [str(BIN_DIR / "dagster"), *args]
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.process_groups.append(process.pid)
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_process_group(process.pid)
            stdout, stderr = process.communicate()
            raise AssertionError(
                f"`dagster {' '.join(args)}` did not finish within {timeout}s:\n"
                f"{stdout[-3000:]}\n{stderr[-3000:]}"
            ) from None
        return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)

    @contextlib.contextmanager
    def instance(self) -> Iterator[Any]:
        """The DagsterInstance in DAGSTER_HOME (what the subprocesses recorded)."""
        from dagster import DagsterInstance

        with DagsterInstance.from_config(str(self.dagster_home)) as instance:
            yield instance


def subprocess_env(data_dir: Path, nats_url: str | None) -> dict[str, str]:
    """The environment `make dev` gives Dagster, pointed at `data_dir` (and `nats_url`).

    Spark is kept small (1 GiB driver, 2 shuffle partitions): other JVMs share the machine.
    """
    env = {k: v for k, v in os.environ.items() if k not in _INHERITED_OUT}
    env.update(
        LAKEHOUSE_DATA_DIR=str(data_dir),
        JSL_SPARK_DRIVER_MEMORY="1g",
        JSL_SPARK_SHUFFLE_PARTITIONS="2",
        PYTHONUNBUFFERED="1",
    )
    if nats_url is not None:
        env.update(
            NATS_URL=nats_url,
            LAKEHOUSE_ROOT=str(data_dir / "lakehouse"),
            DAGSTER_HOME=str(data_dir / "dagster_home"),
        )
    return env


@contextlib.contextmanager
def code_location_env(data_dir: Path) -> Iterator[CodeLocationEnv]:
    """Starts a nats-server on `data_dir/nats`, provisions the topology, yields the env.

    Args:
        data_dir: an empty directory for the server's store, DAGSTER_HOME and the tables.
    """
    dagster_home = data_dir / "dagster_home"
    dagster_home.mkdir(parents=True, exist_ok=True)
    (dagster_home / "dagster.yaml").write_text(INSTANCE_YAML)
    with EmbeddedNatsServer(store_dir=data_dir / "nats") as server:
        with JetStreamResource(servers=server.url).client() as js:
            reconcile(js, FILE_TRASH_TOPOLOGY)
        env = CodeLocationEnv(
            nats_url=server.url,
            data_dir=data_dir,
            dagster_home=dagster_home,
            lakehouse_root=data_dir / "lakehouse",
            env=subprocess_env(data_dir, server.url),
        )
        try:
            yield env
        finally:
            for pgid in env.process_groups:
                kill_process_group(pgid)


@pytest.fixture
def cli_env(tmp_path: Path) -> Iterator[CodeLocationEnv]:
    """A fresh deployment (server, DAGSTER_HOME, tables) for one CLI test."""
    with code_location_env(tmp_path / "data") as env:
        yield env


@pytest.fixture(scope="session")
def ui_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CodeLocationEnv]:
    """The deployment the session's webserver serves."""
    with code_location_env(tmp_path_factory.mktemp("ui-deployment")) as env:
        yield env


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="session")
def webserver(ui_env: CodeLocationEnv) -> Iterator[Webserver]:
    """`dagster-webserver -w workspace.yaml` on a free loopback port, for the whole session.

    It runs with the default run launcher and `DefaultRunCoordinator`: a launched run
    executes in a subprocess of the webserver's code server, with no daemon.
    """
    port = free_port()
    log_path = ui_env.data_dir / "webserver.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                str(BIN_DIR / "dagster-webserver"),
                "-h",
                "127.0.0.1",
                "-p",
                str(port),
                "-w",
                WORKSPACE,
            ],
            cwd=PROJECT_DIR,
            env=ui_env.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = Webserver(f"http://127.0.0.1:{port}", log_path=log_path, process=process)
    try:
        server.wait_until_loaded(WEBSERVER_START_TIMEOUT)
        yield server
    finally:
        server.close()
        stop_process_group(process)


BROWSER_SKIP_ENV = "JSL_SKIP_BROWSER_TESTS"
BROWSER_NAMES = ("chromium", "chromium-browser")


@pytest.fixture(scope="session")
def chromium() -> Path:
    """Debian's Chromium, for headless rendering; fails (or skips, if asked) when missing."""
    for name in BROWSER_NAMES:
        if found := shutil.which(name):
            return Path(found)
    message = (
        "no chromium binary on PATH (looked for: chromium, chromium-browser): install "
        "Debian's package with `apt-get install -y chromium` (as root, or with sudo), or set "
        f"{BROWSER_SKIP_ENV}=1 to skip the browser tests"
    )
    if os.environ.get(BROWSER_SKIP_ENV) == "1":
        pytest.skip(message)
    pytest.fail(message)


@pytest.fixture(scope="session")
def artifacts_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where tests leave artefacts (screenshots): `$JSL_TEST_ARTIFACTS`, else a temp dir."""
    configured = os.environ.get("JSL_TEST_ARTIFACTS")
    path = Path(configured) if configured else tmp_path_factory.mktemp("artifacts")
    path.mkdir(parents=True, exist_ok=True)
    return path
