"""The SparkSession factory: explicit local defaults, overridable by config and environment."""

from delta.tables import DeltaTable

from resources.spark import (
    DELTA_CATALOG,
    DELTA_EXTENSION,
    SparkResource,
    SparkSettings,
    session_builder,
)


def test_defaults_size_the_driver_turn_on_delta_and_arrow_and_skip_the_write_sort():
    conf = SparkSettings.resolve(environ={}).conf()
    assert conf["spark.driver.memory"] == "4g"
    assert conf["spark.sql.shuffle.partitions"] == "4"
    assert conf["spark.sql.execution.arrow.pyspark.enabled"] == "true"
    assert conf["spark.ui.enabled"] == "false"
    assert conf["spark.sql.extensions"] == DELTA_EXTENSION
    assert conf["spark.sql.catalog.spark_catalog"] == DELTA_CATALOG
    assert conf["spark.sql.session.timeZone"] == "UTC"
    assert conf["spark.sql.maxConcurrentOutputFileWriters"] == "8"  # no sort before writing


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
