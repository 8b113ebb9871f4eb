"""The shared Spark Connect server of `jsl dev`: its command line, start, failure and stop.

A real server (a JVM with Delta) is started by tests/cluster/conftest.py and the whole
pipeline runs over it in tests/cluster/test_spark_connect.py; these tests stand in a shell
script for `spark-submit` to check the process handling quickly.
"""

from __future__ import annotations

import contextlib

import pytest

import resources.spark_connect as spark_connect
from pipelines.cli import demo
from pipelines.settings import Settings
from resources.spark import DELTA_EXTENSION, SparkSettings
from resources.spark_connect import ConnectServer, SparkConnectServerError, server_command


def test_the_server_gets_the_local_sessions_settings_on_loopback():
    settings = SparkSettings.resolve(environ={}, jars=["/jars/delta.jar"])

    command = server_command(settings, 15002)

    assert command[command.index("--class") + 1] == spark_connect.SERVER_CLASS
    assert command[command.index("--master") + 1] == "local[2]"
    assert command[command.index("--driver-memory") + 1] == "4g"
    confs = {command[i + 1] for i, arg in enumerate(command) if arg == "--conf"}
    assert {
        "spark.connect.grpc.binding.port=15002",
        "spark.connect.grpc.binding.address=127.0.0.1",
        f"spark.sql.extensions={DELTA_EXTENSION}",
        "spark.sql.session.timeZone=UTC",
        "spark.jars=/jars/delta.jar",
    } <= confs
    assert not any(conf.startswith("spark.driver.memory=") for conf in confs)


def fake_submit(monkeypatch, script: str) -> None:
    monkeypatch.setattr(
        spark_connect, "server_command", lambda settings, port: ["sh", "-c", script]
    )


def test_start_waits_for_the_server_to_listen_and_stop_ends_it(monkeypatch, tmp_path):
    fake_submit(monkeypatch, "sleep 1; echo 'Spark Connect server started at 127.0.0.1'; sleep 600")

    with ConnectServer(SparkSettings.resolve(environ={}), tmp_path / "s.log", port=15999) as server:
        assert server.running
        assert server.url == "sc://127.0.0.1:15999"
    assert not server.running


def test_a_server_that_exits_raises_with_its_log(monkeypatch, tmp_path):
    fake_submit(monkeypatch, "echo 'Error: no Java found'; exit 3")
    log = tmp_path / "s.log"

    with pytest.raises(SparkConnectServerError, match="exited with code 3") as raised:
        ConnectServer(SparkSettings.resolve(environ={}), log).start()

    assert str(log) in str(raised.value)
    assert "no Java found" in str(raised.value)
    assert "JSL_DEV_SPARK_CONNECT=off" in str(raised.value)


def test_a_port_taken_before_the_server_binds_it_is_replaced_by_another(monkeypatch, tmp_path):
    # A port picked here can be taken by another process before the JVM binds it (seen in
    # the suite: "Failed to bind to address /127.0.0.1:36807"); then another is picked.
    picked = iter([41001, 41002, 41003, 41004])
    monkeypatch.setattr(spark_connect, "free_port", lambda: next(picked))
    taken = {41001, 41002}

    def command(settings, port):
        if port in taken:
            return ["sh", "-c", f"echo 'BindException: Failed to bind to address /127.0.0.1:{port}'"
                    "; exit 255"]  # fmt: skip
        return ["sh", "-c", "echo 'Spark Connect server started at 127.0.0.1'; sleep 600"]

    monkeypatch.setattr(spark_connect, "server_command", command)
    with ConnectServer(SparkSettings.resolve(environ={}), tmp_path / "s.log") as server:
        assert server.running
        assert (server.port, server.url) == (41003, "sc://127.0.0.1:41003")

    taken.add(41004)  # a port given by the caller is theirs: not replaced
    with pytest.raises(SparkConnectServerError, match="on port 41004 exited with code 255"):
        ConnectServer(SparkSettings.resolve(environ={}), tmp_path / "t.log", port=41004).start()

    picked = iter([41005, 41006, 41007])  # every port taken: BIND_ATTEMPTS starts, then the error
    taken.update({41005, 41006, 41007})
    with pytest.raises(SparkConnectServerError, match="on port 41007 exited with code 255"):
        ConnectServer(SparkSettings.resolve(environ={}), tmp_path / "u.log").start()


def test_a_server_that_does_not_listen_in_time_is_stopped(monkeypatch, tmp_path):
    fake_submit(monkeypatch, "sleep 600")
    server = ConnectServer(SparkSettings.resolve(environ={}), tmp_path / "s.log")

    with pytest.raises(SparkConnectServerError, match="is not up after 1 s"):
        server.start(timeout=1)

    assert not server.running


class FakeServer:
    started: list[FakeServer] = []

    def __init__(self, settings, log):
        self.url, self.log, self.stopped = "sc://127.0.0.1:1", log, False

    def __enter__(self):
        FakeServer.started.append(self)
        return self

    def __exit__(self, *exc_info):
        self.stopped = True


@pytest.mark.parametrize(
    ("environ", "expected", "starts", "warms"),
    [
        ({}, "sc://127.0.0.1:1", True, True),
        ({"JSL_DEV_SPARK_WARM_UP": "off"}, "sc://127.0.0.1:1", True, False),
        ({"JSL_DEV_SPARK_CONNECT": "off"}, None, False, False),
        ({"SPARK_REMOTE": "sc://spark.example:15002"}, "sc://spark.example:15002", False, False),
    ],
)
def test_dev_uses_spark_remote_or_starts_a_server_unless_turned_off(
    monkeypatch, tmp_path, environ, expected, starts, warms
):
    for name in ("SPARK_REMOTE", "JSL_DEV_SPARK_CONNECT", "JSL_DEV_SPARK_WARM_UP"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(spark_connect, "ConnectServer", FakeServer)
    warmed = []
    monkeypatch.setattr(spark_connect, "warm_up", lambda url, scratch: warmed.append(url) or 1.5)
    FakeServer.started.clear()
    settings = Settings.from_env({"LAKEHOUSE_DATA_DIR": str(tmp_path)})
    said = []

    with contextlib.ExitStack() as stack:
        url = stack.enter_context(demo.spark_server(settings, say=said.append))
        assert url == expected

    assert [server.log for server in FakeServer.started] == (
        [tmp_path / "spark-connect.log"] if starts else []
    )
    assert all(server.stopped for server in FakeServer.started)
    assert said
    # A server started here is warmed up once, unless turned off; one someone else runs is
    # left as it is.
    assert warmed == (["sc://127.0.0.1:1"] if warms else [])
    assert ("Spark Connect server warmed up in 1.5 s (Delta, Python workers)" in said) == warms
    skipped = "Spark Connect server not warmed up (JSL_DEV_SPARK_WARM_UP is off)"
    assert (skipped in said) == (starts and not warms)


def test_a_failed_warm_up_is_reported_and_the_server_still_used(monkeypatch, tmp_path):
    for name in ("SPARK_REMOTE", "JSL_DEV_SPARK_CONNECT", "JSL_DEV_SPARK_WARM_UP"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(spark_connect, "ConnectServer", FakeServer)

    def fails(url, scratch):
        raise RuntimeError("[DELTA_TABLE_NOT_FOUND] no such table")

    monkeypatch.setattr(spark_connect, "warm_up", fails)
    settings = Settings.from_env({"LAKEHOUSE_DATA_DIR": str(tmp_path)})
    said = []

    with demo.spark_server(settings, say=said.append) as url:
        assert url == "sc://127.0.0.1:1"

    warning = next(line for line in said if line.startswith("warning:"))
    assert "[DELTA_TABLE_NOT_FOUND] no such table" in warning
    assert str(tmp_path / "spark-connect.log") in warning
