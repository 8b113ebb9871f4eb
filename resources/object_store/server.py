"""An embedded S3-compatible server (SeaweedFS), for the tests and `jsl demo --s3`.

`weed server -s3` runs SeaweedFS's master, a volume server, the filer and the S3 gateway in
one process. Each of them listens on loopback on a port picked free just before the start
(SeaweedFS cannot report ports it chose itself; a start that loses a port to another process
is retried with new ones). The server gets one S3 identity, an access key and secret made for
it, which clients read from the environment as the AWS chain does (`env()`), and one bucket.
It is ready once a write through the S3 API succeeds (the gateway answers its health check
before the filer's lock service, which writes need, is up).
"""

from __future__ import annotations

import contextlib
import json
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from resources.jetstream.server.embedded import _stop_with_parent_hook
from resources.object_store.errors import S3ServerError
from resources.object_store.s3 import S3Endpoint, s3a_spark_conf
from resources.object_store.weed import find_weed_binary

PORTS = ("master", "volume", "filer", "s3")  # each with a gRPC port beside its HTTP one
START_ATTEMPTS = 3


def _free_ports(count: int) -> list[int]:
    """`count` distinct ports free on loopback right now (held open together while picked)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


@dataclass
class EmbeddedS3Server:
    """SeaweedFS with its S3 gateway, bound to loopback on free ports, with one bucket.

    Use it as a context manager; the server stops (SIGTERM, then SIGKILL) on exit.

    Args:
        data_dir: SeaweedFS's volumes and metadata; they survive the server.
        bucket: the bucket created at start (if missing).
        startup_timeout: seconds to wait for a write through the S3 API to succeed.

    Examples:
        >>> with EmbeddedS3Server(data_dir=Path("/tmp/s3")) as server:
        ...     os.environ.update(server.env())
        ...     print(server.root("lakehouse"))  # s3a://lakehouse/lakehouse
    """

    data_dir: Path
    bucket: str = "lakehouse"
    startup_timeout: float = 60.0  # seconds
    access_key: str = field(default_factory=lambda: f"jsl{secrets.token_hex(6)}")
    secret_key: str = field(default_factory=lambda: secrets.token_hex(16), repr=False)
    endpoint: S3Endpoint | None = field(init=False, default=None)
    _process: subprocess.Popen[bytes] | None = field(init=False, default=None, repr=False)
    _run_dir: Path | None = field(init=False, default=None, repr=False)
    _ports: tuple[int, ...] = field(init=False, default=(), repr=False)

    @property
    def log_path(self) -> Path:
        """Where the server writes its output (in its run directory)."""
        if self._run_dir is None:
            raise S3ServerError(
                "the embedded S3 server is not running (its log is removed when it stops); "
                "call start() or use it as a context manager"
            )
        return self._run_dir / "weed.log"

    def env(self) -> dict[str, str]:
        """The credentials as the AWS chain reads them from the environment."""
        return {
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_REGION": self._running().region,
        }

    def spark_conf(self) -> dict[str, str]:
        """The Spark conf that points S3A at this server (`s3a_spark_conf`)."""
        return s3a_spark_conf(self._running())

    def root(self, prefix: str) -> str:
        """The `s3a://` URI of `prefix` in the server's bucket."""
        return f"s3a://{self.bucket}/{prefix.strip('/')}"

    def filesystem(self):
        """A pyarrow `S3FileSystem` on this server, with its credentials (it may create
        buckets)."""
        from pyarrow import fs

        endpoint = self._running()
        return fs.S3FileSystem(
            endpoint_override=endpoint.url.split("://", 1)[1],
            scheme="http",
            region=endpoint.region,
            access_key=self.access_key,
            secret_key=self.secret_key,
            allow_bucket_creation=True,
        )

    def start(self) -> EmbeddedS3Server:
        """Starts the server, creates the bucket and waits until a write succeeds."""
        if self._process is not None:
            return self
        self.data_dir = Path(self.data_dir).resolve()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        binary = find_weed_binary()
        self._run_dir = Path(tempfile.mkdtemp(prefix="s3-server-"))
        try:
            config = self._run_dir / "s3.json"
            config.write_text(json.dumps(self._identities()))
            for attempt in range(1, START_ATTEMPTS + 1):
                free = _free_ports(2 * len(PORTS))
                ports = {name: (free[2 * i], free[2 * i + 1]) for i, name in enumerate(PORTS)}
                self._ports = tuple(free)
                self._launch(binary, config, ports)
                self.endpoint = S3Endpoint(url=f"http://127.0.0.1:{ports['s3'][0]}")
                if self._wait_until_ready() or attempt == START_ATTEMPTS:
                    break
                self._terminate()  # a port was taken meanwhile: new ones
            if self._process is None or self._process.poll() is not None:
                raise S3ServerError(
                    f"SeaweedFS ({binary}) exited at start-up {START_ATTEMPTS} times; its "
                    f"output ends with:\n{self._log_tail()}"
                )
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stops the server and removes its run directory (config, log); data stays."""
        run_dir, self._run_dir = self._run_dir, None
        try:
            self._terminate()
        finally:
            self.endpoint = None
            if run_dir is not None:
                shutil.rmtree(run_dir, ignore_errors=True)

    def __enter__(self) -> EmbeddedS3Server:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _identities(self) -> dict:
        """SeaweedFS's S3 config: one identity with every action on every bucket."""
        return {
            "identities": [
                {
                    "name": "jetstream-lakehouse",
                    "credentials": [{"accessKey": self.access_key, "secretKey": self.secret_key}],
                    "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                }
            ]
        }

    def _launch(self, binary: Path, config: Path, ports: dict[str, tuple[int, int]]) -> None:
        assert self._run_dir is not None
        command = [
            str(binary),
            "server",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            f"-dir={self.data_dir}",
            "-filer",
            "-s3",
            f"-s3.config={config}",
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            # Many small files in one bucket: small volumes, and enough of them.
            "-master.volumeSizeLimitMB=64",
            "-volume.max=100",
            "-volume.preStopSeconds=0",
        ]
        for name, (http, grpc) in ports.items():
            command += [f"-{name}.port={http}", f"-{name}.port.grpc={grpc}"]
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                command,
                cwd=self._run_dir,
                stdout=log,
                stderr=subprocess.STDOUT,
                # Its own session, stopped with its owner even on SIGKILL (as nats-server).
                start_new_session=True,
                preexec_fn=_stop_with_parent_hook(),
            )

    def _wait_until_ready(self) -> bool:
        """True once a write through S3 succeeds; False if the process exited (raises on
        a timeout)."""
        assert self._process is not None
        deadline = time.monotonic() + self.startup_timeout
        filesystem = self.filesystem()
        probe = f"{self.bucket}/.jsl-ready"
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                return False
            try:
                filesystem.create_dir(self.bucket)
                with filesystem.open_output_stream(probe) as out:
                    out.write(b"ready")
                filesystem.delete_file(probe)
                return True
            except OSError as error:  # not up yet: refused, 503, no lock server
                last = error
                time.sleep(0.2)
        raise S3ServerError(
            f"SeaweedFS's S3 gateway at {self._running().url} took no write within "
            f"{self.startup_timeout}s (last error: {last}); its output ends with:\n"
            f"{self._log_tail()}"
        )

    def _terminate(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        process.terminate()
        try:
            # Its filer takes 15 s and more to stop; what it acknowledged is on disk already.
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        # The Unix sockets its servers make beside their ports, which a kill leaves behind.
        for port in self._ports:
            for socket_file in Path(tempfile.gettempdir()).glob(f"seaweedfs-*-{port}.sock"):
                socket_file.unlink(missing_ok=True)
        self._ports = ()

    def _running(self) -> S3Endpoint:
        if self.endpoint is None:
            raise S3ServerError("the embedded S3 server is not running; call start() first")
        return self.endpoint

    def _log_tail(self, lines: int = 20) -> str:
        with contextlib.suppress(OSError, S3ServerError):
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        return "(nothing)"
