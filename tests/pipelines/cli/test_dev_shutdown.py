"""`make dev` (`jsl dev`) stops everything it started: Dagster's processes, then the server.

`jsl dev` runs in a session of its own, as in a terminal; Ctrl-C is a SIGINT to its process
group (which includes neither `dagster dev`, whose group is its own, nor the embedded
nats-server, which has a session of its own). Afterwards no process of the session may be
left (not `dagster dev`, its webserver, daemon or code server), and the nats-server is gone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

from pipelines.cli.supervise import Supervisor, stop_group
from tests.ui import Webserver
from tests.ui.conftest import WEBSERVER_START_TIMEOUT, free_port, subprocess_env

PROJECT = Path(__file__).resolve().parents[3]
SHUTDOWN_TIMEOUT = 150.0  # seconds: Dagster's grace (60) + SIGTERM's (10) + the sweep's (10)


def session_processes(sid: int) -> list[str]:
    """`pid name cmdline` of each live process of session `sid`."""
    found = []
    for process in psutil.process_iter(["pid", "name", "cmdline", "status"]):
        with contextlib.suppress(psutil.Error, OSError):
            if os.getsid(process.pid) == sid and process.info["status"] != psutil.STATUS_ZOMBIE:
                command = " ".join(process.info["cmdline"] or [])[:160]
                found.append(f"{process.pid} {process.info['name']} {command}")
    return found


def wait_until_gone(sid: int, timeout: float) -> list[str]:
    """Waits (bounded) until session `sid` has no live process; returns what is left."""
    deadline = time.monotonic() + timeout
    while (left := session_processes(sid)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


def kill_session(sid: int) -> None:
    """SIGKILLs whatever of a session this test started is still alive (cleanup only)."""
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error, OSError):
            if os.getsid(process.pid) == sid:
                process.kill()


def test_ctrl_c_on_jsl_dev_stops_dagster_and_its_children_then_the_server(tmp_path):
    env = subprocess_env(tmp_path / "data", nats_url=None)  # no NATS_URL: the embedded one
    # The Spark Connect server is started and stopped, not warmed up: no run uses it here, and
    # the warm-up (tested in tests/resources/ and tests/cluster/) took 20-30 s of both cores.
    env["JSL_DEV_SPARK_WARM_UP"] = "off"
    port = free_port()
    log_path = tmp_path / "jsl-dev.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pipelines.cli",
                "dev",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            cwd=PROJECT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = None
    try:
        Webserver(f"http://127.0.0.1:{port}", log_path=log_path, process=process).wait_until_loaded(
            WEBSERVER_START_TIMEOUT
        )
        started = session_processes(process.pid)
        assert any("dagster_webserver" in line for line in started), started
        [server] = [p for p in psutil.Process(process.pid).children() if "nats-server" in p.name()]
        assert os.getsid(server.pid) == server.pid  # a Ctrl-C does not reach it directly

        os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C in a terminal does

        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=SHUTDOWN_TIMEOUT)
        left = wait_until_gone(process.pid, timeout=15)
        output = log_path.read_text(errors="replace")
        assert process.returncode is not None, f"jsl dev still runs:\n{output[-3000:]}"
        assert left == [], f"left behind: {left}\n{output[-3000:]}"
        assert not server.is_running() or server.status() == psutil.STATUS_ZOMBIE
        # The first line names the data dir, the tables and jsl dev's own Dagster home.
        data = tmp_path / "data"
        assert output.splitlines()[0] == (
            f"data: {data} (tables: {data}/lakehouse, Dagster home: {data}/dagster_home)"
        )
        # Dagster was stopped (and waited for) before the server.
        assert (
            output.index("SIGINT: stopping dagster")
            < output.index("dagster dev exited")
            < output.index("stopping the embedded nats-server")
        )
    finally:
        kill_session(process.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)
        if server is not None:
            with contextlib.suppress(psutil.Error):
                server.kill()


def test_a_command_that_ignores_signals_is_killed_with_what_it_started(tmp_path):
    # The shell and its children ignore SIGINT and SIGTERM; one child left the process
    # group (setsid). The grace periods run out: SIGKILL for the group, then the sweep.
    pid_file = tmp_path / "escaped.pid"
    script = (
        f'trap "" INT TERM; setsid sh -c "echo \\$\\$ > {pid_file}; exec sleep 300" & sleep 300'
    )
    messages: list[str] = []
    supervisor = Supervisor(
        ["sh", "-c", script],
        env=dict(os.environ),
        cwd=tmp_path,
        say=messages.append,
        grace=1.0,
        term_grace=1.0,
    )
    timer = threading.Timer(2.0, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        code = supervisor.run()
    finally:
        timer.cancel()

    assert code == 128 + signal.SIGINT
    escaped = int(pid_file.read_text())  # started within the 2 s before the SIGINT
    assert not psutil.pid_exists(escaped) or psutil.Process(escaped).status() == "zombie"
    assert any("SIGKILL" in message for message in messages), messages


def test_a_command_stops_on_ctrl_c_even_when_jsl_dev_was_started_ignoring_it(tmp_path):
    # `jsl dev &` from a script, or a CI step run in the background, starts with SIGINT
    # ignored; the command must still get SIGINT's default (Python: KeyboardInterrupt), or
    # Ctrl-C waits out the whole grace period (it did: `dagster dev` ignored it for 60 s).
    messages: list[str] = []
    supervisor = Supervisor(
        [sys.executable, "-c", "import time; time.sleep(300)"],
        env=dict(os.environ),
        cwd=tmp_path,
        say=messages.append,
        grace=60.0,
        term_grace=1.0,
    )
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    timer = threading.Timer(3.0, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        code = supervisor.run()
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, before)

    assert code == 128 + signal.SIGINT
    # It stopped on SIGINT itself: no escalation ("still running after 60s: SIGTERM ...").
    assert messages == [
        "SIGINT: stopping python and what it started (up to 60s, then SIGTERM and SIGKILL; "
        "signal again to hurry)"
    ]


def test_stop_group_ends_a_command_that_ignores_sigterm_and_what_it_started():
    # A daemon's stand-in: it ignores SIGTERM and has a child in its group (as the daemon's
    # code server and runs are): SIGKILL after the grace period, then to the group.
    command = subprocess.Popen(
        ["sh", "-c", 'trap "" TERM; sleep 300 & sleep 300'], start_new_session=True
    )
    time.sleep(0.5)
    group = [p for p in psutil.process_iter() if _in_group(p, command.pid)]

    stop_group(command, grace=1.0)

    assert command.returncode == -signal.SIGKILL
    assert len(group) >= 2  # the shell and at least one sleep
    _, alive = psutil.wait_procs(group, timeout=10)  # a SIGKILL lands asynchronously
    assert not alive


def _in_group(process: psutil.Process, pgid: int) -> bool:
    with contextlib.suppress(psutil.Error, OSError):
        return os.getpgid(process.pid) == pgid
    return False
