"""Shared fixtures: a real nats-server, a real SparkSession with Delta, a Dagster instance.

The chain follows nats.py's own tests (store dir -> server -> client): one embedded
nats-server per test session on a free port with a temporary store directory, and one
SparkSession with Delta per test session. Tests isolate themselves by name (`unique_name`)
rather than by server.
"""

from __future__ import annotations

import json
import os
import secrets
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from resources.jetstream import EmbeddedNatsServer, JetStreamClient, JetStreamResource
from resources.object_store.errors import S3ServerError
from resources.object_store.s3 import S3Endpoint
from resources.object_store.server import EmbeddedS3Server
from resources.object_store.weed import find_weed_binary
from tests.table_roots import UriRoot

# The tests' Spark JVMs (this process's, and those of the runs, children and servers they
# start, which inherit the environment) are tuned for many queries over a few rows each:
# - C1 only and one GC thread: C2's compilations and parallel GC threads would take the two
#   cores from the other worker (with expressions interpreted, C2 was no faster: 242 s against
#   238 s below); each worker's own session JVM, which lives the whole suite, keeps C2
#   (`session_jvm_conf`): the whole suite took 1740 s before, 1448 s with it and the order
#   of SLOW_FIRST below (2026-11-26, one run each; the files on the session JVMs 20-45%
#   faster, those starting JVMs of their own 5-25% slower);
# - expressions evaluated interpreted (Spark's `factoryMode` NO_CODEGEN, under which Spark
#   runs its own expression tests too), not generated and compiled as Java classes per query:
#   over a few rows the compilation is most of a query's CPU;
# - no adaptive query execution: it re-plans each query between its stages;
# - one shuffle partition (below);
# - Spark's classes mapped from a class-data-sharing archive dumped once (tests/class_archive.py):
#   a JVM's start and first Delta query took 13.2-13.8 CPU-seconds without it, 8.4-9.0 with; three
#   files that start a JVM per run (ui/test_cli, test_nothing_new_skips_spark,
#   test_rejudge_command) 247 and 247 s without, 222 and 214 s with it, alternating; five
#   that share the session's JVM 233 s without, 227 and 225 s with.
# The results are the same; only the plans and how expressions are evaluated differ. Five
# Spark-heavy files on two workers: 290 s with the JVM options alone, 238 s interpreted, 224 s
# also without AQE (2026-11-26, issue #36). `make demo`, `jsl` and the benchmarks keep Spark's
# defaults. A JSL_SPARK_CONF already set wins.
TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
TEST_SPARK_CONF = {
    "spark.driver.extraJavaOptions": TEST_JVM_OPTIONS,
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.sql.adaptive.enabled": "false",
}
if "JSL_SPARK_CONF" not in os.environ and "PYTEST_XDIST_WORKER" not in os.environ:
    # Before the workers start (they inherit the environment): see tests/class_archive.py.
    from tests.class_archive import QUIET, class_archive

    archive = class_archive(TEST_SPARK_CONF)
    if archive is not None:
        TEST_SPARK_CONF["spark.driver.extraJavaOptions"] += (
            f" -XX:SharedArchiveFile={archive} {QUIET}"
        )
os.environ.setdefault("JSL_SPARK_CONF", json.dumps(TEST_SPARK_CONF))
# One shuffle partition (and so one Delta snapshot partition): fewer tasks per query, where
# the workers keep both cores busy anyway. The same five files: 186 and 200 s with two
# partitions, 177 and 178 s with one, alternating (2026-11-26). Tests that start servers of
# their own (the UI's, the cluster's, the daemon's) set theirs.
os.environ.setdefault("JSL_SPARK_SHUFFLE_PARTITIONS", "1")
# A child pytest run by a test whose server was started with an S3 server's S3A settings (the
# Spark Connect server of tests/cluster/test_spark_connect.py) works on that S3 server, not on
# one of its own: the parent puts its endpoint here, and the child keeps the credentials it
# inherits (`s3_server`).
PARENT_S3_ENDPOINT = "JSL_TEST_S3_ENDPOINT"
# The S3 server's credentials (`s3_server`), in the environment before any JVM of this process
# or its children starts: S3A reads them there (the AWS chain), as pyarrow does. Each process
# (each xdist worker) makes its own, for its own server; no test talks to AWS itself.
if not os.environ.get(PARENT_S3_ENDPOINT):
    os.environ.update(
        AWS_ACCESS_KEY_ID=f"jsltest{secrets.token_hex(4)}",
        AWS_SECRET_ACCESS_KEY=secrets.token_hex(16),
    )
os.environ.pop("AWS_SESSION_TOKEN", None)
os.environ.pop("AWS_PROFILE", None)

# `make test` runs the suite on three xdist workers (`--dist loadfile --no-loadscope-reorder`) on
# two cores: a worker waits on its children, servers and I/O, and a third fills that time (the
# CPU was idle 8.1% of a run with two, 1.6% with three; 2026-11-27, docs/performance.md "The
# test suite's time"). A test file's tests run on one worker, so its module fixtures start
# once, and the files go out in the order below (xdist's default reorder hands out the files
# with the most tests first, which left the slowest files, a test or two each, to the end).
# (`--dist loadgroup` would let files share a worker, but pytest-xdist 3.8 cannot group under
# pytest 9: the test ids it renames are not the ones pytest 9 reads.) The files sharing the
# UI's session webserver may start it on more than one worker.
# The slowest files, slowest first (`--durations=0` summed per file, 2026-11-26 21:19, on
# 51f1c21): handed out first, so that no worker starts one while the others are almost done.
SLOW_FIRST = (
    "tests/pipelines/cli/test_demo.py",  # 188 s, + ~140 s for the S3 demo (#53)
    "tests/pipelines/silver/test_rejudge.py",  # 262 s
    "tests/pipelines/silver/test_rejudge_killed.py",  # 143 s, + ~125 s on S3 (#53)
    "tests/test_install.py",  # 239 s: both ways of starting a project (2026-11-28, caches warm)
    "tests/ui/test_cli.py",  # 214 s
    "tests/cluster/test_spark_connect.py",  # 201 s, + ~30 s for maintenance on S3 (#53)
    "tests/cluster/test_spark_standalone.py",  # 75 s, + ~130 s on S3 (#53)
    "tests/pipelines/ingest/test_cluster.py",  # 176 s
    "tests/sensors/test_daemon_recovery.py",  # 75 s, + ~85 s on S3 (#53)
    # 130-164 s (2026-11-28, a busy machine), 17-40 s of it a replay beside a run, both roots (#53)
    "tests/pipelines/ingest/test_concurrency.py",
    "tests/assets/test_nothing_new_skips_spark.py",  # 70 s, + ~110 s on S3 (#53)
    "tests/pipelines/silver/test_evolution.py",  # 141 s
    "tests/pipelines/wiring/test_maintenance.py",  # 107 s
    "tests/pipelines/lakehouse/test_refresh.py",  # 107 s
    "tests/assets/test_contract_silver.py",  # 92 s
    # 49 s, + ~30 s for the retry and the rebuild on S3 (#53; alone on a busy machine, where the
    # file took 178 s, their S3 variants took 34 + 23 s beside 47 + 18 s for the local ones)
    "tests/pipelines/cli/commands/test_rejudge_command.py",
    "tests/pipelines/components/test_orders_end_to_end.py",  # 78 s
    "tests/pipelines/components/test_json_schema_end_to_end.py",  # 72 s
    "tests/pipelines/file_trash/test_silver.py",  # 71 s
    "tests/pipelines/ingest/test_crash_recovery.py",  # 66 s
    "tests/resources/test_quality_engines.py",  # 64 s
    "tests/assets/test_follow.py",  # 96 s on 2026-11-27, when every file took ~1.6x its time here
    "tests/pipelines/silver/test_stage.py",  # 58 s
    "tests/assets/test_stage_with_nothing_new.py",  # 58 s
    "tests/test_file_trash_end_to_end.py",  # 50 s
    "tests/pipelines/silver/test_gold_after_change.py",  # 49 s
    "tests/pipelines/components/test_stream_component.py",  # 49 s
    "tests/ui/test_webserver.py",  # 43 s
    "tests/resources/test_spark.py",  # 43 s
    "tests/pipelines/components/test_asyncapi_end_to_end.py",  # 42 s
    "tests/pipelines/silver/test_drift.py",  # 40 s
    "tests/pipelines/file_trash/test_gold_stage.py",  # 37 s
    "tests/ui/test_asset_graph.py",  # 33 s
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


C1_ONLY = "-XX:TieredStopAtLevel=1"


def session_jvm_conf() -> dict[str, str]:
    """The session JVM's options: the tests' (`JSL_SPARK_CONF`) without C1_ONLY, if they have
    it. Unlike the JVMs of runs, children and servers, which live a minute or two, each
    worker's session JVM runs queries for the whole suite, long enough for C2's compiled code
    to pay for its compilations."""
    options = json.loads(os.environ.get("JSL_SPARK_CONF") or "{}").get(
        "spark.driver.extraJavaOptions", ""
    )
    if C1_ONLY not in options.split():
        return {}
    kept = " ".join(option for option in options.split() if option != C1_ONLY)
    return {"spark.driver.extraJavaOptions": kept}


@pytest.fixture(scope="session")
def spark():
    """One SparkSession with Delta for the whole test session (UI off)."""
    from resources.spark import SparkResource

    session = SparkResource(
        ui_enabled=False,
        shuffle_partitions=int(os.environ["JSL_SPARK_SHUFFLE_PARTITIONS"]),
        extra_conf=session_jvm_conf(),
    ).get_session()
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


@pytest.fixture(scope="session")
def weed_binary() -> Path:
    """SeaweedFS's `weed`; skips, saying why, without it (`make setup` builds it where Go is
    installed)."""
    try:
        return find_weed_binary()
    except S3ServerError as error:
        pytest.skip(str(error))


@pytest.fixture(scope="session")
def s3_server(
    weed_binary: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[EmbeddedS3Server]:
    """A real S3 server (SeaweedFS) for the whole test session (one per xdist worker), with
    the credentials of the environment; in a child pytest given `PARENT_S3_ENDPOINT`, the
    parent's server (not started or stopped here: its endpoint set, for `root`,
    `spark_conf`, `filesystem` and `env`)."""
    if os.environ.get(PARENT_S3_ENDPOINT):
        parent = EmbeddedS3Server(
            data_dir=tmp_path_factory.mktemp("parent-s3"),
            access_key=os.environ["AWS_ACCESS_KEY_ID"],
            secret_key=os.environ["AWS_SECRET_ACCESS_KEY"],
        )
        parent.endpoint = S3Endpoint(url=os.environ[PARENT_S3_ENDPOINT])
        yield parent
        return
    with EmbeddedS3Server(
        data_dir=tmp_path_factory.mktemp("seaweedfs"),
        access_key=os.environ["AWS_ACCESS_KEY_ID"],
        secret_key=os.environ["AWS_SECRET_ACCESS_KEY"],
    ) as server:
        yield server


@pytest.fixture
def s3_lakehouse(s3_server: EmbeddedS3Server, monkeypatch: pytest.MonkeyPatch) -> UriRoot:
    """A fresh `s3a://` table root on the session's S3 server (a `str` that joins with `/`, as
    `table_root` does), and the environment that points
    Spark at it: `LAKEHOUSE_ROOT`, and the server's S3A settings added to `JSL_SPARK_CONF` (for
    the runs and children started from here, and the no-JVM paths that read it). A Spark
    session this process has started already gets them in its Hadoop configuration."""
    root = UriRoot(s3_server.root(f"t-{uuid.uuid4().hex[:12]}"))
    conf = {**json.loads(os.environ.get("JSL_SPARK_CONF") or "{}"), **s3_server.spark_conf()}
    monkeypatch.setenv("JSL_SPARK_CONF", json.dumps(conf))
    monkeypatch.setenv("LAKEHOUSE_ROOT", root)
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None and not type(active).__module__.startswith("pyspark.sql.connect"):
        hadoop = active.sparkContext._jsc.hadoopConfiguration()
        for key, value in s3_server.spark_conf().items():
            hadoop.set(key.removeprefix("spark.hadoop."), value)
    return root


@pytest.fixture(params=["local", "s3"])
def any_root(request: pytest.FixtureRequest, table_root: Path) -> Path | UriRoot:
    """A test's table root twice: a local folder, then a root on the session's S3 server
    (SeaweedFS), where a commit is a PUT with no atomic rename and Delta's
    S3SingleDriverLogStore is in charge."""
    return request.getfixturevalue("s3_lakehouse") if request.param == "s3" else table_root
