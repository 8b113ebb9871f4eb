"""One Spark standalone cluster (master + 2 workers) and one Spark Connect server, each for the
test module that uses it (test_spark_standalone.py, test_spark_connect.py) and stopped after
it, both started from the pyspark wheel on loopback (the Connect server by the product's
`resources.spark_connect`, as `jsl dev` starts it), and a way to run ingest steps
against them in a child process (`ingest_child.py`).

Every test here is marked `cluster` (`pytest -m cluster` selects them, `-m "not cluster"`
leaves them out).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from resources.object_store.errors import S3ServerError
from resources.object_store.server import EmbeddedS3Server
from resources.object_store.weed import find_weed_binary
from resources.spark import SparkSettings
from resources.spark_connect import ConnectServer
from tests.cluster.servers import StandaloneCluster, start_standalone
from tests.conftest import session_jvm_conf

REPO = Path(__file__).resolve().parents[2]
CHILD_TIMEOUT = 600  # seconds


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).is_relative_to(Path(__file__).parent):
            item.add_marker(pytest.mark.cluster)


# Module-scoped: one module uses each, and a session-scoped one idled on, with its heap, until
# the last test of the worker (a Connect server 1,420 s, a cluster 805 s in the run of
# 2026-11-27 10:18).
@pytest.fixture(scope="module")
def standalone_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """A standalone master and 2 workers (1 core, 1 GiB each) on loopback."""
    cluster = start_standalone(tmp_path_factory.mktemp("standalone"))
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def connect_s3(request: pytest.FixtureRequest) -> EmbeddedS3Server | None:
    """The worker's S3 server (`s3_server`), whose S3A settings the Connect server starts
    with; None without SeaweedFS (the tests on S3 skip, saying why)."""
    try:
        find_weed_binary()
    except S3ServerError:
        return None
    return request.getfixturevalue("s3_server")


@pytest.fixture(scope="module")
def connect_url(
    tmp_path_factory: pytest.TempPathFactory, connect_s3: EmbeddedS3Server | None
) -> Iterator[str]:
    """A Spark Connect server (local[2], 1 GiB driver) with Delta, as `jsl dev` starts it, with
    the tests' Spark tuning (`JSL_SPARK_CONF`, tests/conftest.py: expressions interpreted, no
    AQE), but C2 kept: like a worker's session JVM, it runs queries for the whole file.

    S3A is pointed at the worker's S3 server (`connect_s3`) as a user points `jsl dev`'s
    server at their object store: its settings in `JSL_SPARK_CONF` (`--conf` at the server's
    start, where a Connect client cannot set them), the credentials in the environment the
    server inherits."""
    conf = json.loads(os.environ.get("JSL_SPARK_CONF") or "{}")
    if connect_s3 is not None:
        conf.update(connect_s3.spark_conf())
    settings = SparkSettings.resolve(
        environ={"JSL_SPARK_CONF": json.dumps(conf)},
        extra_conf=session_jvm_conf(),
        driver_memory="1g",
        shuffle_partitions=2,
    )
    log = tmp_path_factory.mktemp("connect") / "connect-server.log"
    with ConnectServer(settings, log) as server:
        yield server.url


def run_child(
    env: dict[str, str],
    *,
    nats_url: str,
    table_path: str,
    spec: dict[str, Any],
    published: list[int],
    steps: list[dict[str, Any]],
    killed: bool = False,
) -> dict[str, Any]:
    """Runs `ingest_child.py` with `env` over the process's own; returns its JSON report.

    With `killed`, the child is expected to die of SIGKILL (a `crash_at` step), and the
    report is empty.
    """
    plan = dict(
        nats_url=nats_url, table_path=table_path, spec=spec, published=published, steps=steps
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("JSL_SPARK", "SPARK_"))}
    child = subprocess.run(
        [sys.executable, "-m", "tests.cluster.ingest_child", json.dumps(plan)],
        cwd=REPO,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT,
    )
    if killed:
        assert child.returncode == -9, child.stderr[-4000:]
        return {}
    assert child.returncode == 0, child.stderr[-6000:]
    return json.loads(child.stdout.strip().splitlines()[-1])


def spec_fields(spec) -> dict[str, Any]:
    """The `IngestSpec` fields a child needs to rebuild `spec`."""
    return {
        "name": spec.name,
        "stream": spec.stream,
        "durable": spec.durable,
        "table": spec.table,
        "readers": spec.readers,
        "pull_batch": spec.pull_batch,
        "lease_ttl": spec.lease_ttl,
        "lease_wait": spec.lease_wait,
    }
