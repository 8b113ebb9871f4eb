"""Fixtures for the UI and CLI tests: the code location run as Dagster's own processes do.

Each environment has its own embedded nats-server (temp store, provisioned with the file
trash topology, because the code location's stream `FILE_EVENTS` on `files.>` would clash
with other tests' streams on the shared server), its own data directory and DAGSTER_HOME.
The `dagster` and `dagster-webserver` subprocesses get these through the same environment
variables `make dev` sets (NATS_URL, LAKEHOUSE_DATA_DIR, LAKEHOUSE_ROOT, DAGSTER_HOME).

One `dagster-webserver` serves the whole session (`webserver`), shared by test_webserver.py
and test_asset_graph.py; every CLI test gets a fresh environment (`cli_env`) so the stream's
sequences, and so the commands in docs/dagster.md, are the same whatever ran before.
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
import requests

from pipelines.demo import publish_sample
from pipelines.file_trash.topology import BRONZE_FILE_EVENTS, FILE_TRASH_TOPOLOGY
from resources.jetstream import EmbeddedNatsServer, JetStreamResource, reconcile

PROJECT_DIR = Path(__file__).resolve().parents[2]
BIN_DIR = Path(sys.executable).parent
WORKSPACE = "workspace.yaml"
REPOSITORY = "__repository__"

WEBSERVER_START_TIMEOUT = 240.0  # seconds: imports the code location (pyspark, dagster)
COMMAND_TIMEOUT = 600.0  # seconds: one `dagster` CLI command, JVM start-up included

# Variables of the caller that would point the subprocesses elsewhere.
_INHERITED_OUT = ("NATS_URL", "DAGSTER_HOME", "LAKEHOUSE_DATA_DIR", "LAKEHOUSE_ROOT")
# DAGSTER_HOME/dagster.yaml of the test deployments. Dagster 1.13's default coordinator
# queues runs for the daemon; the tests run no daemon, so runs launched through the
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

    def dagster(self, *args: str, timeout: float = COMMAND_TIMEOUT) -> subprocess.CompletedProcess:
        """Runs `dagster ARGS` from the project directory, as a CI job would.

        Args:
            *args: the arguments after `dagster`.
            timeout: seconds before the command is killed.

        Returns:
            The completed process, with text stdout and stderr.
        """
        return subprocess.run(
            [str(BIN_DIR / "dagster"), *args],
            cwd=PROJECT_DIR,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    @contextlib.contextmanager
    def instance(self) -> Iterator[Any]:
        """The DagsterInstance in DAGSTER_HOME (what the subprocesses recorded)."""
        from dagster import DagsterInstance

        with DagsterInstance.from_config(str(self.dagster_home)) as instance:
            yield instance


def subprocess_env(data_dir: Path, nats_url: str) -> dict[str, str]:
    """The environment `make dev` gives Dagster, pointed at `data_dir` and `nats_url`.

    Spark is kept small (1 GiB driver, 2 shuffle partitions): other JVMs share the machine.
    """
    env = {k: v for k, v in os.environ.items() if k not in _INHERITED_OUT}
    env.update(
        NATS_URL=nats_url,
        LAKEHOUSE_DATA_DIR=str(data_dir),
        LAKEHOUSE_ROOT=str(data_dir / "lakehouse"),
        DAGSTER_HOME=str(data_dir / "dagster_home"),
        JSL_SPARK_DRIVER_MEMORY="1g",
        JSL_SPARK_SHUFFLE_PARTITIONS="2",
        PYTHONUNBUFFERED="1",
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
        yield CodeLocationEnv(
            nats_url=server.url,
            data_dir=data_dir,
            dagster_home=dagster_home,
            lakehouse_root=data_dir / "lakehouse",
            env=subprocess_env(data_dir, server.url),
        )


@pytest.fixture
def cli_env(tmp_path: Path) -> Iterator[CodeLocationEnv]:
    """A fresh deployment (server, DAGSTER_HOME, tables) for one CLI test."""
    with code_location_env(tmp_path / "data") as env:
        yield env


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def stop_process_group(process: subprocess.Popen, grace: float = 30.0) -> None:
    """Stops a process started with `start_new_session=True` and everything it started.

    SIGINT first (Dagster's processes shut their children down on it), then SIGKILL.
    """
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    # Whatever the leader left behind in its group (code server, run workers, JVMs).
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=10)


class GraphQLError(AssertionError):
    """The webserver answered a GraphQL request with errors."""


@dataclass
class Webserver:
    """A running `dagster-webserver` and a small GraphQL client for it.

    Attributes:
        base_url: e.g. `http://127.0.0.1:40123`.
        env: the deployment it serves (server, DAGSTER_HOME, tables).
        log_path: the webserver's combined stdout and stderr.
    """

    base_url: str
    env: CodeLocationEnv
    log_path: Path
    process: subprocess.Popen = field(repr=False)
    location_name: str = ""
    http: requests.Session = field(default_factory=requests.Session, repr=False)

    def __post_init__(self) -> None:
        # Loopback only: an http_proxy in the environment (common in CI) must not see it.
        self.http.trust_env = False

    def log_tail(self, chars: int = 6000) -> str:
        """The end of the webserver's log, for failure messages."""
        with contextlib.suppress(OSError):
            return self.log_path.read_text(errors="replace")[-chars:]
        return "<no webserver log>"

    def graphql(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        """Posts a GraphQL request to `/graphql` and returns its `data`.

        Raises:
            GraphQLError: the response carries `errors` (the schema or the resolver failed).
        """
        response = self.http.post(
            f"{self.base_url}/graphql",
            json={"query": query, "variables": variables or {}},
            timeout=60,
        )
        response.raise_for_status()
        body = response.json()
        if body.get("errors"):
            raise GraphQLError(f"GraphQL errors: {body['errors']}")
        return body["data"]

    def wait_until_loaded(self, timeout: float) -> None:
        """Waits until the webserver answers and the code location has loaded.

        Raises:
            AssertionError: the process exited, the location failed to load, or `timeout`
                seconds passed; the message carries the webserver's log.
        """
        deadline = time.monotonic() + timeout
        last_problem = "no answer yet"
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(
                    f"dagster-webserver exited with {self.process.returncode} at start-up; "
                    f"its log ends with:\n{self.log_tail()}"
                )
            try:
                entries = self.graphql(WORKSPACE_QUERY)["workspaceOrError"]["locationEntries"]
            except (requests.RequestException, GraphQLError, KeyError) as error:
                last_problem = repr(error)
                time.sleep(1)
                continue
            for entry in entries:
                location = entry["locationOrLoadError"]
                if location and location["__typename"] == "PythonError":
                    raise AssertionError(
                        f"code location {entry['name']!r} failed to load in the webserver: "
                        f"{location['message']}\n{''.join(location.get('stack') or [])}"
                    )
                if location and location["__typename"] == "RepositoryLocation":
                    self.location_name = entry["name"]
                    return
                last_problem = f"location {entry['name']!r} is {entry['loadStatus']}"
            time.sleep(1)
        raise AssertionError(
            f"dagster-webserver at {self.base_url} did not load the code location within "
            f"{timeout}s ({last_problem}); its log ends with:\n{self.log_tail()}"
        )


WORKSPACE_QUERY = """
query Workspace {
  workspaceOrError {
    __typename
    ... on Workspace {
      locationEntries {
        name
        loadStatus
        locationOrLoadError {
          __typename
          ... on RepositoryLocation { name repositories { name } }
          ... on PythonError { message stack }
        }
      }
    }
    ... on PythonError { message }
  }
}
"""


@pytest.fixture(scope="session")
def webserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Webserver]:
    """`dagster-webserver -w workspace.yaml` on a free loopback port, for the whole session.

    It runs with the default run launcher and coordinator: a launched run executes in a
    subprocess of the webserver's code server, with no daemon.
    """
    data_dir = tmp_path_factory.mktemp("ui-deployment")
    with code_location_env(data_dir) as env:
        port = free_port()
        log_path = data_dir / "webserver.log"
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
                env=env.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        server = Webserver(
            base_url=f"http://127.0.0.1:{port}", env=env, log_path=log_path, process=process
        )
        try:
            server.wait_until_loaded(WEBSERVER_START_TIMEOUT)
            yield server
        finally:
            server.http.close()
            stop_process_group(process)


BROWSER_SKIP_ENV = "JSL_SKIP_BROWSER_TESTS"
BROWSER_NAMES = ("chromium", "chromium-browser")


@pytest.fixture(scope="session")
def chromium() -> Path:
    """Debian's headless-capable Chromium; fails (or skips, if asked) when it is missing."""
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
