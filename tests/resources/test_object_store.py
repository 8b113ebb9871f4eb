"""The S3 server the tests and the demo run (SeaweedFS), and Delta tables on it through S3A."""

from __future__ import annotations

import os

import pytest
from pyarrow import fs

from resources.object_store.errors import S3ServerError
from resources.object_store.s3 import S3Endpoint, s3_filesystem, s3a_spark_conf
from resources.object_store.server import EmbeddedS3Server
from resources.object_store.weed import find_weed_binary, install_weed


def test_spark_writes_and_reads_a_delta_table_in_the_s3_server(spark, s3_lakehouse, s3_server):
    table = f"{s3_lakehouse}/numbers"
    spark.range(100).write.format("delta").save(table)
    spark.range(100, 150).write.format("delta").mode("append").save(table)

    assert spark.read.format("delta").load(table).count() == 150
    history = spark.sql(f"DESCRIBE HISTORY delta.`{table}`").select("version").collect()
    assert sorted(row.version for row in history) == [0, 1]
    # The commits are objects in the bucket, listed through the S3 API (not a local folder).
    key = table.removeprefix("s3a://")
    listed = s3_server.filesystem().get_file_info(fs.FileSelector(f"{key}/_delta_log"))
    names = {info.base_name for info in listed}
    assert {"00000000000000000000.json", "00000000000000000001.json"} <= names
    # Delta's default LogStore for s3a:// (none configured): safe for the writers of one
    # driver only (docs/deploy.md says what keeps the project's runs to one writer a table).
    assert spark.conf.get("spark.delta.logStore.s3a.impl", None) is None
    delegating = spark._jvm.org.apache.spark.sql.delta.storage.DelegatingLogStore
    store = delegating.getDefaultLogStoreClassName("s3a").get()
    assert store == "io.delta.storage.S3SingleDriverLogStore"


def test_the_s3_server_refuses_credentials_it_does_not_know(s3_server):
    endpoint = s3_server.endpoint
    stranger = fs.S3FileSystem(
        endpoint_override=endpoint.url.removeprefix("http://"),
        scheme="http",
        access_key="nobody",
        secret_key="wrong",
    )
    with pytest.raises(OSError, match="access key"):
        stranger.get_file_info(fs.FileSelector(s3_server.bucket))
    # The environment's (the AWS chain's), which the server was given, are accepted.
    assert os.environ["AWS_ACCESS_KEY_ID"] == s3_server.access_key
    s3_filesystem(endpoint).get_file_info(fs.FileSelector(s3_server.bucket))


def test_s3a_settings_round_trip_through_spark_conf():
    endpoint = S3Endpoint(url="http://127.0.0.1:8333")
    conf = s3a_spark_conf(endpoint)

    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "false"
    assert S3Endpoint.from_spark_conf(conf) == endpoint
    assert S3Endpoint.from_spark_conf({}) is None
    # S3A's own form, host:port, with TLS unless switched off.
    bare = {"spark.hadoop.fs.s3a.endpoint": "minio:9000"}
    assert S3Endpoint.from_spark_conf(bare).url == "https://minio:9000"


def test_a_stopped_server_says_so_instead_of_answering_with_no_endpoint(tmp_path):
    server = EmbeddedS3Server(data_dir=tmp_path)
    with pytest.raises(Exception, match="not running"):
        server.spark_conf()


def test_setup_skips_the_s3_servers_build_saying_why_without_go(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no `go` here
    said: list[str] = []

    assert install_weed(say=said.append, target=tmp_path / "weed") is None
    assert len(said) == 1 and "no `go` on PATH" in said[0] and "https://go.dev/dl/" in said[0]


def test_setup_builds_nothing_when_the_s3_server_is_there(tmp_path):
    binary = tmp_path / "weed"
    binary.write_bytes(b"")
    said: list[str] = []

    assert install_weed(say=said.append, target=binary) == binary
    assert said == [f"[setup] SeaweedFS (S3 server for the tests and the demo): {binary}"]


def test_a_weed_binary_named_in_the_environment_must_be_there(tmp_path, monkeypatch):
    monkeypatch.setenv("JSL_WEED_BIN", str(tmp_path / "weed"))
    with pytest.raises(S3ServerError, match=r"JSL_WEED_BIN=.* is not an executable file"):
        find_weed_binary()
