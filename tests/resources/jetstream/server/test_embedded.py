"""The embedded nats-server: JetStream on, a free port, its store dir, a clean stop."""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import urllib.request

import psutil
import pytest

from resources.jetstream import EmbeddedNatsServer, JetStreamResource, StreamSpec
from resources.jetstream.errors import EmbeddedServerError


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def test_two_embedded_servers_get_different_free_ports_and_report_jetstream_healthy(tmp_path):
    with (
        EmbeddedNatsServer(store_dir=tmp_path / "a") as a,
        EmbeddedNatsServer(store_dir=tmp_path / "b") as b,
    ):
        assert port_of(a.url) != port_of(b.url)
        with urllib.request.urlopen(f"{a.monitoring_url}/healthz?js-enabled-only=true") as r:
            assert r.status == 200


def test_streams_survive_a_restart_on_the_same_store_dir(tmp_path):
    with (
        EmbeddedNatsServer(store_dir=tmp_path) as server,
        JetStreamResource(servers=server.url).client() as js,
    ):
        js.streams.add(StreamSpec("KEPT", ("kept.>",)))
        js.publish("kept.one", b"1")
    with (
        EmbeddedNatsServer(store_dir=tmp_path) as server,
        JetStreamResource(servers=server.url).client() as js,
    ):
        assert js.streams.info("KEPT").last_seq == 1


def test_stopped_server_no_longer_accepts_connections(tmp_path):
    server = EmbeddedNatsServer(store_dir=tmp_path).start()
    port = port_of(server.url)
    server.stop()
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        pass


def test_bad_config_fails_start_with_the_server_log(tmp_path):
    with pytest.raises(EmbeddedServerError, match="nats-server exited"):
        EmbeddedNatsServer(store_dir=tmp_path, extra_config="this is { not valid").start()


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux's")
def test_the_server_stops_when_its_owner_is_killed(tmp_path):
    # The server has a session of its own (a terminal's Ctrl-C reaches only its owner), so a
    # SIGKILL of the owner's process group would miss it; it stops with its owner instead.
    code = (
        "import sys, time; from resources.jetstream import EmbeddedNatsServer; "
        f"server = EmbeddedNatsServer(store_dir={str(tmp_path / 'nats')!r}).start(); "
        "print(server._process.pid, flush=True); time.sleep(300)"
    )
    owner = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    server = psutil.Process(int(owner.stdout.readline()))
    try:
        assert server.is_running() and os.getsid(server.pid) == server.pid
        os.killpg(owner.pid, signal.SIGKILL)
        owner.wait(timeout=10)
        server.wait(timeout=15)  # psutil.TimeoutExpired if it outlived its owner
    finally:
        owner.kill()
        with contextlib.suppress(psutil.Error):
            server.kill()
