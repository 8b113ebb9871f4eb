"""Shared fixtures: a real nats-server, a real SparkSession with Delta, a Dagster instance.

The chain follows nats.py's own tests (store dir -> server -> client): one embedded
nats-server per test session on a free port with a temporary store directory, and one
SparkSession with Delta per test session. Tests isolate themselves by name (`unique_name`)
rather than by server.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from resources.jetstream import EmbeddedNatsServer, JetStreamClient, JetStreamResource


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
