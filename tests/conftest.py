"""Shared fixtures: a real nats-server, a real SparkSession with Delta, a Dagster instance.

The chain follows nats.py's own tests (store dir -> server -> client): one embedded
nats-server per test session on a free port with a temporary store directory, and one
SparkSession with Delta per test session. Tests isolate themselves by name (`unique_name`)
rather than by server.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from resources.jetstream import EmbeddedNatsServer, JetStreamClient, JetStreamResource

# The tests' Spark JVMs (this process's, and those of the runs, children and servers they
# start, which inherit the environment) compile with C1 only and collect with one thread: the
# queries here are many and small, so C2's compilations and parallel GC threads only take the
# two cores from the other worker. A JSL_SPARK_CONF already set wins.
TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
os.environ.setdefault(
    "JSL_SPARK_CONF", json.dumps({"spark.driver.extraJavaOptions": TEST_JVM_OPTIONS})
)

# `make test` runs the suite on two xdist workers (`--dist loadfile`): a test file's tests run
# on one worker, so its module fixtures start once. (`--dist loadgroup` would let files share a
# worker, but pytest-xdist 3.8 cannot group under pytest 9: the test ids it renames are not
# the ones pytest 9 reads.) The files sharing the UI's session webserver may start it on
# both workers.
# The slowest files, slowest first (`--durations`, summed per file, in the last measured run):
# handed out first, so that no worker starts one while the other is almost done.
SLOW_FIRST = (
    "tests/pipelines/cli/test_demo.py",
    "tests/ui/test_cli.py",
    "tests/pipelines/silver/test_rejudge.py",
    "tests/pipelines/silver/test_rejudge_killed.py",
    "tests/assets/test_nothing_new_skips_spark.py",
    "tests/cluster/test_spark_connect.py",
    "tests/pipelines/silver/test_evolution.py",
    "tests/assets/test_contract_silver.py",
    "tests/pipelines/components/test_orders_end_to_end.py",
    "tests/pipelines/components/test_asyncapi_end_to_end.py",
    "tests/pipelines/components/test_json_schema_end_to_end.py",
    "tests/ui/test_webserver.py",
    "tests/test_file_trash_end_to_end.py",
    "tests/pipelines/silver/test_stage.py",
    "tests/pipelines/wiring/test_maintenance.py",
    "tests/assets/test_stage_with_nothing_new.py",
    "tests/cluster/test_spark_standalone.py",
    "tests/pipelines/ingest/test_crash_recovery.py",
    "tests/test_install.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Puts the tests of the slowest files first (stable: the rest as collected)."""
    rank = {path: index for index, path in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


@pytest.fixture(scope="session")
def nats_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedNatsServer]:
    """A real nats-server with JetStream, for the whole test session."""
    with EmbeddedNatsServer(store_dir=tmp_path_factory.mktemp("jetstream")) as server:
        yield server


@pytest.fixture
def jetstream_resource(nats_server: EmbeddedNatsServer) -> JetStreamResource:
    """A JetStreamResource pointed at the session's server."""
    return JetStreamResource(servers=nats_server.url, connect_timeout=5, request_timeout=5)


@pytest.fixture
def js(jetstream_resource: JetStreamResource) -> Iterator[JetStreamClient]:
    """A connected client, closed after the test."""
    with jetstream_resource.client() as client:
        yield client


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> str:
    """A stream/consumer/bucket-safe name unique to this test, e.g. 'T_ab12cd34'."""
    return f"T_{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="session")
def spark():
    """One SparkSession with Delta for the whole test session (UI off)."""
    from resources.spark import SparkResource

    session = SparkResource(ui_enabled=False, shuffle_partitions=2).get_session()
    yield session
    session.stop()


@pytest.fixture
def dagster_instance():
    """An ephemeral Dagster instance (in-memory run and event storage)."""
    from dagster import DagsterInstance

    with DagsterInstance.ephemeral() as instance:
        yield instance


@pytest.fixture
def table_root(tmp_path: Path) -> Path:
    """A fresh directory for this test's Delta tables."""
    root = tmp_path / "lakehouse"
    root.mkdir()
    return root
