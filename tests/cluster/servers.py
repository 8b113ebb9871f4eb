"""A Spark standalone master with workers started from the pyspark wheel (`bin/spark-class`),
as an operator would. (The Spark Connect server is the product's: `resources.spark_connect`.)

Everything listens on loopback, on free ports, with small heaps; each process logs to a file
in its directory, and `stop()` ends it (SIGTERM, then SIGKILL after `STOP_WAIT` seconds).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

from resources.spark_connect import free_port

SPARK_HOME = Path(pyspark.__file__).resolve().parent
SPARK_CLASS = SPARK_HOME / "bin" / "spark-class"
START_TIMEOUT = 180.0  # seconds; a loaded 2-core machine starts a JVM slowly
STOP_WAIT = 15.0  # seconds between SIGTERM and SIGKILL


@dataclass
class SparkProcess:
    """One Spark JVM we started, and its log."""

    name: str
    command: list[str]
    log: Path
    env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen | None = None

    def start(self) -> SparkProcess:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                self.command,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, **self.env},
                start_new_session=True,  # its own process group: stop() ends the JVM's children
            )
        return self

    def wait_for(self, pattern: str, timeout: float = START_TIMEOUT) -> re.Match:
        """Waits until the log matches `pattern`; fails with the log's tail if it exits first."""
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            match = re.search(pattern, self.log.read_text(errors="replace"))
            if match:
                return match
            if self.process.poll() is not None:
                break
            time.sleep(0.5)
        tail = self.log.read_text(errors="replace")[-3000:]
        raise RuntimeError(
            f"{self.name} did not log {pattern!r} within {timeout:.0f} s "
            f"(exit code {self.process.poll()}); log {self.log}:\n{tail}"
        )

    def stop(self) -> None:
        """SIGTERM to its process group, then SIGKILL if it is still there after STOP_WAIT."""
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(STOP_WAIT)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


@dataclass
class StandaloneCluster:
    """A standalone master and its workers."""

    master_url: str
    processes: list[SparkProcess]

    def stop(self) -> None:
        for process in reversed(self.processes):  # workers first (they kill their executors)
            process.stop()


def start_standalone(
    work_dir: Path, *, workers: int = 2, worker_cores: int = 1, worker_memory: str = "1g"
) -> StandaloneCluster:
    """Starts `spark-class ...Master` and `workers` x `spark-class ...Worker` on loopback.

    The daemons themselves get a 256 MiB heap (SPARK_DAEMON_MEMORY); each worker offers
    `worker_cores` cores and `worker_memory` to executors, and works in its own directory.
    """
    env = {"SPARK_DAEMON_MEMORY": "256m", "SPARK_LOG_DIR": str(work_dir)}
    port = free_port()
    master = SparkProcess(
        "spark master",
        [
            str(SPARK_CLASS),
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--webui-port",
            str(free_port()),
        ],
        work_dir / "master.log",
        env,
    ).start()
    cluster = StandaloneCluster(f"spark://127.0.0.1:{port}", [master])
    try:
        master.wait_for(r"I have been elected leader")
        for index in range(workers):
            worker = SparkProcess(
                f"spark worker {index}",
                [
                    str(SPARK_CLASS),
                    "org.apache.spark.deploy.worker.Worker",
                    "--host",
                    "127.0.0.1",
                    "--webui-port",
                    str(free_port()),
                    "--cores",
                    str(worker_cores),
                    "--memory",
                    worker_memory,
                    "--work-dir",
                    str(work_dir / f"worker-{index}"),
                    cluster.master_url,
                ],
                work_dir / f"worker-{index}.log",
                env,
            ).start()
            cluster.processes.append(worker)
        for worker in cluster.processes[1:]:
            worker.wait_for(r"Successfully registered with master")
    except BaseException:
        cluster.stop()
        raise
    return cluster
