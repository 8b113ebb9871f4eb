"""The SparkSession factory: explicit local defaults, overridable by config and environment;
the executors' Python and driver host on any master, the table-root check, the jar cache and
the shipped code."""

import sys
import zipfile

import pytest
from delta.tables import DeltaTable

from resources.spark import (
    DELTA_CATALOG,
    DELTA_EXTENSION,
    SparkResource,
    SparkSettings,
    TableRootNotSharedError,
    session_builder,
)
from resources.spark_artifacts import build_code_zip, cached_jars, delta_package, store_jars


def test_defaults_size_the_driver_turn_on_delta_and_arrow_skip_the_write_sort_keep_code():
    conf = SparkSettings.resolve(environ={}).conf()
    assert conf["spark.driver.memory"] == "4g"
    assert conf["spark.sql.shuffle.partitions"] == "4"
    assert conf["spark.sql.execution.arrow.pyspark.enabled"] == "true"
    assert conf["spark.ui.enabled"] == "false"
    assert conf["spark.sql.extensions"] == DELTA_EXTENSION
    assert conf["spark.sql.catalog.spark_catalog"] == DELTA_CATALOG
    assert conf["spark.sql.session.timeZone"] == "UTC"
    assert conf["spark.sql.maxConcurrentOutputFileWriters"] == "8"  # no sort before writing
    assert conf["spark.sql.codegen.cache.maxEntries"] == "2000"  # generated code reused


def test_environment_overrides_defaults_and_config_overrides_environment():
    env = {
        "JSL_SPARK_MASTER": "spark://cluster:7077",
        "JSL_SPARK_DRIVER_MEMORY": "8g",
        "JSL_SPARK_SHUFFLE_PARTITIONS": "64",
        "JSL_SPARK_UI": "true",
        "JSL_SPARK_CONF": '{"spark.sql.ansi.enabled": "true", "spark.x": "env"}',
        "JSL_SPARK_JARS": "/jars/delta-spark.jar, /jars/delta-storage.jar",
        "SPARK_REMOTE": "sc://connect:15002",
    }
    from_env = SparkSettings.resolve(environ=env)
    assert from_env.master == "spark://cluster:7077"
    assert from_env.remote == "sc://connect:15002"
    assert from_env.conf()["spark.driver.memory"] == "8g"
    assert from_env.conf()["spark.sql.shuffle.partitions"] == "64"
    assert from_env.conf()["spark.ui.enabled"] == "true"
    assert from_env.conf()["spark.sql.ansi.enabled"] == "true"
    assert from_env.conf()["spark.jars"] == "/jars/delta-spark.jar,/jars/delta-storage.jar"
    assert "spark.driver.host" not in from_env.conf()  # only pinned to loopback when local

    from_config = SparkSettings.resolve(
        master="local[1]", driver_memory="2g", extra_conf={"spark.x": "config"}, environ=env
    )
    assert from_config.master == "local[1]"
    assert from_config.conf()["spark.driver.memory"] == "2g"
    assert from_config.conf()["spark.x"] == "config"


def test_extra_packages_from_the_environment_are_resolved_beside_deltas():
    hadoop_aws = "org.apache.hadoop:hadoop-aws:3.4.1"
    env = {"JSL_SPARK_CONF": f'{{"spark.jars.packages": "{hadoop_aws}"}}'}

    packages = session_builder(SparkSettings.resolve(environ=env))._options["spark.jars.packages"]

    assert hadoop_aws in packages.split(",")
    assert any(p.startswith("io.delta:delta-spark_") for p in packages.split(","))


def test_resource_session_writes_and_reads_a_delta_table(spark, tmp_path):
    session = SparkResource().get_session()
    assert session is spark  # one session per process
    assert session.conf.get("spark.sql.extensions") == DELTA_EXTENSION
    path = str(tmp_path / "t")
    session.range(5).write.format("delta").save(path)
    assert DeltaTable.isDeltaTable(session, path)
    assert DeltaTable.forPath(session, path).toDF().count() == 5


def test_executors_get_this_python_and_a_loopback_driver_on_a_cluster_master_too():
    on_loopback = SparkSettings.resolve(master="spark://127.0.0.1:7077", environ={}).conf()
    assert on_loopback["spark.pyspark.python"] == sys.executable
    assert on_loopback["spark.driver.host"] == "127.0.0.1"
    assert on_loopback["spark.driver.bindAddress"] == "127.0.0.1"

    env = {"JSL_SPARK_PYTHON": "/opt/venv/bin/python", "JSL_SPARK_DRIVER_HOST": "10.0.0.7"}
    remote = SparkSettings.resolve(master="spark://spark-master:7077", environ=env).conf()
    assert remote["spark.pyspark.python"] == "/opt/venv/bin/python"
    assert remote["spark.driver.host"] == "10.0.0.7"
    assert "spark.driver.bindAddress" not in remote  # Spark binds to the driver host itself
    from_pyspark_env = SparkSettings.resolve(environ={"PYSPARK_PYTHON": "/usr/bin/python3.11"})
    assert from_pyspark_env.python == "/usr/bin/python3.11"


def test_a_local_table_root_on_a_cluster_master_is_refused_naming_the_opt_out():
    settings = SparkSettings.resolve(
        master="spark://10.0.0.5:7077", table_root="/data/lakehouse", environ={}
    )
    with pytest.raises(TableRootNotSharedError) as refused:
        settings.check_table_root(settings.master)
    message = str(refused.value)
    assert "'/data/lakehouse'" in message and "'spark://10.0.0.5:7077'" in message
    assert "JSL_SPARK_SHARED_FS=1" in message and "LAKEHOUSE_ROOT" in message
    assert (refused.value.root, refused.value.master) == ("/data/lakehouse", settings.master)

    # Not refused: a shared filesystem, a URI, a local master, or no root given.
    env = {"JSL_SPARK_SHARED_FS": "1", "LAKEHOUSE_ROOT": "file:/data/lakehouse"}
    SparkSettings.resolve(master=settings.master, environ=env).check_table_root(settings.master)
    SparkSettings.resolve(table_root="s3a://lake/tables", environ={}).check_table_root(
        settings.master
    )
    SparkSettings.resolve(table_root="/data", environ={}).check_table_root("local[2]")
    SparkSettings.resolve(environ={}).check_table_root(settings.master)


def test_sessions_load_the_cached_jars_when_setup_resolved_exactly_their_packages(tmp_path):
    jars_dir = tmp_path / "jars"
    settings = SparkSettings.resolve(jars_dir=str(jars_dir), environ={})
    assert settings.packages() == (delta_package(),)
    # Not cached yet: Spark resolves the package at start-up.
    assert session_builder(settings)._options["spark.jars.packages"] == delta_package()

    resolved = tmp_path / "ivy"
    resolved.mkdir()
    for name in ("io.delta_delta-spark.jar", "io.delta_delta-storage.jar"):
        (resolved / name).write_bytes(b"jar")
    store_jars(jars_dir, settings.packages(), [f"file:{p}" for p in sorted(resolved.iterdir())])

    options = session_builder(settings)._options
    assert "spark.jars.packages" not in options
    assert [j.rsplit("/", 1)[1] for j in options["spark.jars"].split(",")] == [
        "io.delta_delta-spark.jar",
        "io.delta_delta-storage.jar",
    ]
    # Another package list (an extra package) is another cache entry, not resolved yet.
    extra = {"JSL_SPARK_CONF": '{"spark.jars.packages": "org.apache.hadoop:hadoop-aws:3.4.1"}'}
    with_extra = SparkSettings.resolve(jars_dir=str(jars_dir), environ=extra)
    assert cached_jars(jars_dir, with_extra.packages()) is None
    assert "hadoop-aws" in session_builder(with_extra)._options["spark.jars.packages"]


def test_the_shipped_code_zip_holds_the_projects_packages_and_is_named_by_its_content(tmp_path):
    code = build_code_zip(tmp_path)
    assert build_code_zip(tmp_path) == code  # unchanged project: the same file
    names = set(zipfile.ZipFile(code).namelist())
    for module in (
        "pipelines/ingest/reader.py",
        "resources/jetstream/client.py",
        "assets/bronze.py",
        "sensors/stream.py",
    ):
        assert module in names
    assert not any("__pycache__" in name or not name.endswith(".py") for name in names)
