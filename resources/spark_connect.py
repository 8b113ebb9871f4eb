"""One long-lived Spark Connect server with Delta, shared by every run (`jsl dev` starts it).

Without it, each Dagster run starts its own Spark JVM and pays for it before any work: about
9 s to start and 7 s for the first Delta operation per run on a 2-core machine
(docs/performance.md, "A run's fixed cost"). With `SPARK_REMOTE=sc://...` pointing at this
server, the runs are thin Spark Connect clients of one warm JVM, and `SparkResource` needs no
other change (the ingest already runs over Connect).

The server is a `spark-submit` of Spark's `SparkConnectServer` from the pyspark wheel, with
the same settings a local session gets (`resources.spark.resolved_conf`: driver memory,
Delta's extension and catalog, the jar cache, UTC, the Python of this virtualenv, the
warehouse and Derby's home under the data directory, so the working directory gets no
`spark-warehouse/`, `metastore_db/` or `derby.log`), listening on loopback only. It logs to a
file; `stop()` ends it (SIGTERM to its process group, SIGKILL after `STOP_WAIT` seconds).

`warm_up()` then gives a new server, once, the kinds of work every run's first batch does (a
Delta write of rows a Python `mapInArrow` made, a MERGE, a local checkpoint, an aggregate).
That cost is the JVM's (classes loaded, code compiled, the Python worker daemon started),
not a session's: on a new server the first such write, MERGE and checkpoint took 14.9, 10.9
and 3.5 s, and the same in a second session 2.4, 4.2 and 2.7 s (bench/HISTORY.md, "Issue
35: gold once a minute, a warm server").

Examples:
    >>> with ConnectServer(SparkSettings.resolve(), Path(".data/spark-connect.log")) as server:
    ...     os.environ["SPARK_REMOTE"] = server.url
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pyspark

from resources.backports import Self
from resources.spark import LOOPBACK, SparkSettings, resolved_conf

SPARK_SUBMIT = Path(pyspark.__file__).resolve().parent / "bin" / "spark-submit"
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
READY = "Spark Connect server started at"  # what the server logs once it listens
START_TIMEOUT = 180.0  # seconds; a loaded 2-core machine starts a JVM slowly
STOP_WAIT = 15.0  # seconds between SIGTERM and SIGKILL
# A port picked here is only free when picked: another process (a Spark driver's own ports,
# say) can take it before the JVM binds it. Such a start is tried again on another port.
BIND_ATTEMPTS = 3
WARM_UP_ROWS = 2000  # enough for every step of the warm-up to run real tasks


class SparkConnectServerError(RuntimeError):
    """The Spark Connect server did not start (its log's tail is in the message)."""


def free_port() -> int:
    """A TCP port nothing listens on right now (on loopback)."""
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return sock.getsockname()[1]


def server_command(settings: SparkSettings, port: int) -> list[str]:
    """The `spark-submit` command line of a Connect server with `settings`, on `port`.

    Static settings (master, driver memory, jars, extensions, the warehouse, the driver's Java
    options with Derby's home) can only be set here: a Connect client cannot change them later.
    """
    conf = resolved_conf(settings)
    conf.pop("spark.driver.memory")  # --driver-memory: the launcher sizes the JVM with it
    conf["spark.connect.grpc.binding.address"] = LOOPBACK
    conf["spark.connect.grpc.binding.port"] = str(port)
    command = [str(SPARK_SUBMIT), "--class", SERVER_CLASS, "--name", "jsl-connect-server"]
    command += ["--master", settings.master, "--driver-memory", settings.driver_memory]
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    return command


class ConnectServer:
    """A Spark Connect server process started with `start()` (or `with`), ended by `stop()`.

    Attributes:
        port: the port it listens on (another one after a start whose picked port was taken).
        log: the server's stdout and stderr.
    """

    def __init__(self, settings: SparkSettings, log: Path, *, port: int | None = None) -> None:
        self.settings = settings
        self.log = log
        self._picked = port is None  # a port picked here may be taken by the time it binds
        self.port = port or free_port()
        self._process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        """`sc://127.0.0.1:<port>`, what `SPARK_REMOTE` takes."""
        return f"sc://{LOOPBACK}:{self.port}"

    def start(self, timeout: float = START_TIMEOUT) -> Self:
        """Starts the server and waits until it listens.

        A port picked here (none given) that another process took before the server bound it
        is replaced by another one, and the server started again, up to `BIND_ATTEMPTS`
        starts in all (each waits up to `timeout` seconds); `url` follows the port.

        Raises:
            SparkConnectServerError: it exited or did not listen within `timeout` seconds;
                the message holds the log's tail and its path.
        """
        for attempt in range(1, BIND_ATTEMPTS + 1):
            if self._start(timeout):
                return self
            if not self._picked or attempt == BIND_ATTEMPTS:
                break
            self.port = free_port()
        self._fail(timeout)

    def _port_taken(self) -> bool:
        """Whether the server's log says its port was taken."""
        text = self.log.read_text(errors="replace")
        return f"Failed to bind to address /{LOOPBACK}:{self.port}" in text

    def _start(self, timeout: float) -> bool:
        """One start; True once it listens, False if it exited because its port was taken.

        Raises:
            SparkConnectServerError: it exited otherwise, or did not listen in time.
        """
        self.log.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "PYSPARK_PYTHON": self.settings.python}
        env.pop("SPARK_REMOTE", None)  # the server is not a client of another one
        with self.log.open("wb") as out:
            self._process = subprocess.Popen(
                server_command(self.settings, self.port),
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,  # its own process group: stop() ends its children
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.running:
            if READY in self.log.read_text(errors="replace"):
                return True
            time.sleep(0.5)
        if not self.running and self._port_taken():
            return False  # it exited; `_fail` reads its code if no other start follows
        self._fail(timeout)

    def _fail(self, timeout: float) -> NoReturn:
        """Stops the server and raises, with its exit code (or `timeout`) and its log's tail."""
        code = None if self._process is None else self._process.poll()
        self.stop()
        what = (
            f"exited with code {code}" if code is not None else f"is not up after {timeout:.0f} s"
        )
        tail = self.log.read_text(errors="replace")[-2000:]
        raise SparkConnectServerError(
            f"the Spark Connect server on port {self.port} {what}; its log is {self.log}. "
            "Check Java 17 (`java -version`) and that `jsl setup` cached Delta's jars, or run "
            f"without it (JSL_DEV_SPARK_CONNECT=off). The log ends:\n{tail}"
        )

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def stop(self) -> None:
        """SIGTERM to the server's process group, then SIGKILL after `STOP_WAIT` seconds."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, STOP_WAIT), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                return
            try:
                process.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                continue

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _same_batches(batches: Iterator) -> Iterator:
    """The warm-up's `mapInArrow` function: each Arrow batch as it came (a Python worker's
    round trip, as the ingest's readers make)."""
    yield from batches


def warm_up(url: str, scratch: Path) -> float:
    """Makes a new Connect server at `url` pay, once, what every run's first batch would pay
    on it: a Delta table written under `scratch` from a `mapInArrow` frame, a MERGE into it, a
    local checkpoint of it and an aggregate. The table is deleted afterwards, whatever
    happened. It waits as long as the server takes (`jsl dev` calls it right after `start()`
    saw the server listen).

    Args:
        url: the server's `sc://` URL.
        scratch: a directory the server can write to (the data directory).

    Returns:
        The seconds it took.

    Raises:
        Exception: whatever the Spark Connect client raised; `jsl dev` reports it and goes on.
    """
    from pyspark.sql import SparkSession  # the client only where a server is warmed up

    started = time.monotonic()
    table = scratch / f"spark-connect-warm-up-{uuid.uuid4().hex}"
    spark = SparkSession.builder.remote(url).create()
    try:
        frame = spark.range(WARM_UP_ROWS).selectExpr("id", "CAST(id AS STRING) AS text")
        frame.mapInArrow(_same_batches, frame.schema).write.format("delta").save(str(table))
        spark.sql(
            f"MERGE INTO delta.`{table}` AS t USING (SELECT id, CAST(id AS STRING) AS text "
            f"FROM range({WARM_UP_ROWS // 2}, {WARM_UP_ROWS * 3 // 2})) AS s ON t.id = s.id "
            "WHEN NOT MATCHED THEN INSERT *"
        )
        spark.read.format("delta").load(str(table)).localCheckpoint().groupBy().count().collect()
    finally:
        try:
            spark.stop()
        finally:
            shutil.rmtree(table, ignore_errors=True)
    return time.monotonic() - started
