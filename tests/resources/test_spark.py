"""The SparkSession factory: explicit local defaults, overridable by config and environment;
the executors' Python and driver host on any master, the table-root check, the jar cache,
the shipped code, and Spark's own state (warehouse, Derby) in the data directory."""

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from delta.tables import DeltaTable
from pyspark.errors.utils import is_debugging_enabled

from pipelines.settings import Settings
from resources.object_store.s3 import S3A_PACKAGES
from resources.spark import (
    DELTA_CATALOG,
    DELTA_EXTENSION,
    LISTING_PARALLELISM,
    SparkResource,
    SparkSettings,
    TableRootNotSharedError,
    local_cores,
    session_builder,
)
from resources.spark_artifacts import build_code_zip, cached_jars, delta_package, store_jars
from resources.spark_connect import server_command

WAREHOUSE = "spark.sql.warehouse.dir"
JAVA_OPTIONS = "spark.driver.extraJavaOptions"
STRAYS = ("spark-warehouse", "metastore_db", "derby.log")


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
    # A plan of a large contract's thousands of Columns: no Python call site recorded per
    # Column call, no constraint propagation over its predicates (docs/performance.md).
    assert conf["spark.python.sql.dataFrameDebugging.enabled"] == "false"
    assert conf["spark.sql.constraintPropagation.enabled"] == "false"
    # VACUUM's listing in as many tasks as the shuffle partitions, not Spark's 10,000.
    assert conf[LISTING_PARALLELISM] == "4"
    # Delta's state in one wave of local[2]'s two task slots, not in 4 tasks (or Delta's 50).
    assert conf["spark.databricks.delta.snapshotPartitions"] == "2"


@pytest.mark.parametrize(
    ("master", "slots"),
    [
        ("local", 1),
        ("local[2]", 2),
        ("local[3, 2]", 3),  # with retries
        ("local[3,2]", 3),
        ("local[*,4]", os.cpu_count()),
        ("local[*]", os.cpu_count()),
        ("spark://cluster:7077", None),
        ("local-cluster[2,1,1024]", None),  # executors in JVMs of their own
        ("k8s://https://api:6443", None),
    ],
)
def test_delta_rebuilds_state_in_at_most_a_local_masters_task_slots(master, slots):
    assert local_cores(master) == slots
    settings = SparkSettings.resolve(master=master, shuffle_partitions=8, environ={})
    expected = 8 if slots is None else min(8, slots)
    assert settings.conf()["spark.databricks.delta.snapshotPartitions"] == str(expected)


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
    assert from_env.conf()[LISTING_PARALLELISM] == "64"
    assert from_env.conf()["spark.databricks.delta.snapshotPartitions"] == "64"  # a cluster
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
    assert not is_debugging_enabled()  # PySpark records no call site per Column call
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
    assert settings.packages() == (delta_package(), *S3A_PACKAGES)
    # Not cached yet: Spark resolves the packages at start-up, without the AWS SDK's bundle.
    options = session_builder(settings)._options
    assert options["spark.jars.packages"] == ",".join(settings.packages())
    assert "software.amazon.awssdk:bundle" in options["spark.jars.excludes"].split(",")

    resolved = tmp_path / "ivy"
    resolved.mkdir()
    for name in ("io.delta_delta-spark.jar", "io.delta_delta-storage.jar"):
        (resolved / name).write_bytes(b"jar")
    store_jars(jars_dir, settings.packages(), [f"file:{p}" for p in sorted(resolved.iterdir())])

    options = session_builder(settings)._options
    assert "spark.jars.packages" not in options and "spark.jars.excludes" not in options
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


def test_the_warehouse_and_derbys_home_are_in_the_data_dir(tmp_path):
    data = tmp_path.resolve()

    conf = SparkSettings.resolve(environ={"LAKEHOUSE_DATA_DIR": str(data)}).conf()

    assert conf[WAREHOUSE] == f"file:{data}/spark-warehouse"
    assert conf[JAVA_OPTIONS] == f"-Dderby.system.home={data}/spark-metastore"
    explicit = SparkSettings.resolve(data_dir=str(data / "x"), environ={}).conf()
    assert explicit[WAREHOUSE] == f"file:{data}/x/spark-warehouse"


def test_by_default_spark_keeps_its_state_in_the_dg_projects_data_dir(tmp_path, monkeypatch):
    project = tmp_path / "my-lake"
    (project / "my_lake").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[tool.dg]\ndirectory_type = "project"\n')
    monkeypatch.chdir(project / "my_lake")

    settings = SparkSettings.resolve(environ={})

    assert Path(settings.data_dir) == Settings.from_env({}).data_dir == project.resolve() / ".data"
    assert settings.conf()[WAREHOUSE] == f"file:{project.resolve()}/.data/spark-warehouse"


def test_the_users_java_options_are_kept_and_derbys_home_added_to_them(tmp_path):
    env = {
        "LAKEHOUSE_DATA_DIR": str(tmp_path / "data dir"),
        "JSL_SPARK_CONF": '{"spark.driver.extraJavaOptions": "-Dfrom.env=1 -Xss4m"}',
    }

    options = SparkSettings.resolve(environ=env).conf()[JAVA_OPTIONS]
    from_config = SparkSettings.resolve(
        environ=env, extra_conf={JAVA_OPTIONS: "-Dfrom.config=1"}
    ).conf()[JAVA_OPTIONS]

    home = tmp_path.resolve() / "data dir" / "spark-metastore"
    assert options == f'-Dfrom.env=1 -Xss4m "-Dderby.system.home={home}"'  # quoted: a space
    assert from_config == f'-Dfrom.config=1 "-Dderby.system.home={home}"'


def test_java_options_and_a_warehouse_of_spark_defaults_conf_are_not_dropped(tmp_path):
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    (conf_dir / "spark-defaults.conf").write_text(
        "# the cluster's defaults\n"
        "spark.driver.extraJavaOptions   -Dsite=1 -XX:+UseG1GC\n"
        "spark.sql.warehouse.dir=hdfs:///warehouse\n"
    )
    env = {"SPARK_CONF_DIR": str(conf_dir), "LAKEHOUSE_DATA_DIR": str(tmp_path)}

    conf = SparkSettings.resolve(environ=env).conf()

    # A --conf replaces the file's value: the file's options are carried over into it.
    assert conf[JAVA_OPTIONS] == (
        f"-Dsite=1 -XX:+UseG1GC -Dderby.system.home={tmp_path.resolve()}/spark-metastore"
    )
    assert WAREHOUSE not in conf  # the file's warehouse stays in force
    from_home = SparkSettings.resolve(environ={"SPARK_HOME": str(tmp_path), **env}).conf()
    assert from_home[JAVA_OPTIONS] == conf[JAVA_OPTIONS]  # SPARK_CONF_DIR before SPARK_HOME


def test_a_derby_home_or_warehouse_the_user_sets_wins(tmp_path):
    mine = {JAVA_OPTIONS: "-Dderby.system.home=/mine", WAREHOUSE: "s3a://lake/warehouse"}

    conf = SparkSettings.resolve(extra_conf=mine, environ={}).conf()

    assert conf[JAVA_OPTIONS] == "-Dderby.system.home=/mine"
    assert conf[WAREHOUSE] == "s3a://lake/warehouse"


def test_the_connect_server_keeps_its_state_in_the_data_dir_too(tmp_path):
    settings = SparkSettings.resolve(data_dir=str(tmp_path), environ={}, jars=["/jars/d.jar"])

    command = server_command(settings, 15002)

    confs = {command[i + 1] for i, arg in enumerate(command) if arg == "--conf"}
    data = tmp_path.resolve()
    assert f"{WAREHOUSE}=file:{data}/spark-warehouse" in confs
    assert f"{JAVA_OPTIONS}=-Dderby.system.home={data}/spark-metastore" in confs


# Run in a fresh process (the test session's JVM is shared and started already): a managed
# table, a database and an insert, which make Spark create its warehouse and, with a Hive
# catalog, Derby's metastore_db/ and derby.log.
MANAGED_TABLES = """
import sys
from resources.spark import SparkResource

catalog = {"spark.sql.catalogImplementation": sys.argv[1]}
spark = SparkResource(
    driver_memory="1g", shuffle_partitions=1, ui_enabled=False, extra_conf=catalog
).get_session()
spark.sql("CREATE DATABASE IF NOT EXISTS shop")
spark.sql("CREATE TABLE shop.orders (id INT) USING parquet")
spark.sql("INSERT INTO shop.orders VALUES (1), (2)")
spark.range(3).write.saveAsTable("numbers")
print(spark.table("shop.orders").count() + spark.table("numbers").count())
spark.stop()
"""


@pytest.mark.parametrize("catalog", ["in-memory", "hive"])
def test_managed_tables_leave_nothing_in_the_working_directory(tmp_path, catalog):
    work, data = tmp_path / "work", tmp_path / "data"
    work.mkdir()
    unset = ("SPARK_REMOTE", "JSL_SPARK_MASTER", "JSL_SPARK_CONF", "SPARK_CONF_DIR")
    env = {k: v for k, v in os.environ.items() if k not in unset}
    # Only the tests' JVM options (tests/conftest.py: the class archive, C1), which the Derby
    # home is added to, as to any options of the user's; no other Spark conf of the session's.
    options = json.loads(os.environ.get("JSL_SPARK_CONF") or "{}").get(JAVA_OPTIONS)
    if options:
        env["JSL_SPARK_CONF"] = json.dumps({JAVA_OPTIONS: options})
    env["LAKEHOUSE_DATA_DIR"] = str(data)

    done = subprocess.run(
        [sys.executable, "-c", MANAGED_TABLES, catalog],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )

    assert done.returncode == 0, done.stderr[-5000:]
    assert done.stdout.strip().splitlines()[-1] == "5"
    assert [stray for stray in STRAYS if (work / stray).exists()] == []
    assert list(work.iterdir()) == []
    assert (data / "spark-warehouse" / "numbers").is_dir()
    assert (data / "spark-warehouse" / "shop.db" / "orders").is_dir()
    if catalog == "hive":
        assert (data / "spark-metastore" / "metastore_db").is_dir()
        assert (data / "spark-metastore" / "derby.log").is_file()
