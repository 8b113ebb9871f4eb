"""A cluster of embedded nats-servers on loopback, for tests of replicated (R3) streams.

Each node is an `EmbeddedNatsServer` with its own store directory, a server name, and a
`cluster` block whose routes point at every other node. Client and route ports are chosen
once, when the cluster is built, and kept across restarts: a node killed and started again
comes back at the same URL, and the other nodes' routes find it.

Examples:
    >>> with EmbeddedNatsCluster(store_dir=Path("/tmp/js-cluster")) as cluster:
    ...     print(cluster.url)  # nats://127.0.0.1:40123,nats://127.0.0.1:40125,...
    ...     cluster.node("n2").kill()  # SIGKILL: no leadership hand-over, no flush
    ...     cluster.node("n2").start()
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.error
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from resources.jetstream.errors import EmbeddedServerError
from resources.jetstream.server.embedded import _DIRECT, EmbeddedNatsServer


def free_port() -> int:
    """A loopback TCP port nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class ClusterNode(EmbeddedNatsServer):
    """One server of an `EmbeddedNatsCluster`: fixed client and route ports, routes to peers.

    Args:
        name: the server name (what JetStream reports as a stream's or consumer's leader).
        port: the client port, kept across restarts.
        cluster_port: the route port, kept across restarts.
        routes: the other nodes' route ports.
        cluster_name: the cluster's name.
    """

    name: str = "n1"
    port: int = 0
    cluster_port: int = 0
    routes: tuple[int, ...] = ()
    cluster_name: str = "jsl"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def kill(self) -> None:
        """SIGKILLs the server (no leadership hand-over, nothing flushed); its store stays."""
        process = self._process
        if process is not None:
            process.kill()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired as error:  # pragma: no cover - the kernel's job
                raise EmbeddedServerError(f"nats-server {self.name!r} survived SIGKILL") from error
        self.stop()

    def _config_text(self) -> str:
        assert self._run_dir is not None
        routes = ", ".join(f'"nats-route://127.0.0.1:{port}"' for port in self.routes)
        return "\n".join(
            [
                f"server_name: {json.dumps(self.name)}",
                f'listen: "127.0.0.1:{self.port}"',
                'http: "127.0.0.1:-1"',
                f"ports_file_dir: {json.dumps(str(self._run_dir))}",
                f"jetstream {{ store_dir: {json.dumps(str(self.store_dir))} }}",
                "cluster {",
                f"  name: {json.dumps(self.cluster_name)}",
                f'  listen: "127.0.0.1:{self.cluster_port}"',
                f"  routes: [{routes}]",
                "}",
                self.extra_config,
                "",
            ]
        )


@dataclass
class EmbeddedNatsCluster:
    """`size` nats-servers with JetStream in one cluster on loopback.

    Use it as a context manager: every node starts, and the cluster is ready once each node
    reports healthy with a JetStream meta leader; on exit every node stops.

    Args:
        store_dir: one sub-directory per node (`n1`, `n2`, ...) holds its JetStream store.
        size: how many servers (3 for R3 streams).
        startup_timeout: seconds for the whole cluster to become ready.
        extra_config: nats-server configuration appended to every node's.
    """

    store_dir: Path
    size: int = 3
    startup_timeout: float = 60.0  # seconds
    extra_config: str = ""
    nodes: list[ClusterNode] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        if self.size < 1:
            raise EmbeddedServerError(f"a cluster needs at least one node, got {self.size!r}")
        ports = [(free_port(), free_port()) for _ in range(self.size)]
        self.nodes = [
            ClusterNode(
                store_dir=Path(self.store_dir) / f"n{i + 1}",
                extra_config=self.extra_config,
                startup_timeout=self.startup_timeout,
                name=f"n{i + 1}",
                port=client,
                cluster_port=route,
                routes=tuple(r for j, (_, r) in enumerate(ports) if j != i),
            )
            for i, (client, route) in enumerate(ports)
        ]

    @property
    def url(self) -> str:
        """Every node's client URL, comma-separated (what `NATS_URL` takes)."""
        return ",".join(f"nats://127.0.0.1:{node.port}" for node in self.nodes)

    def node(self, name: str) -> ClusterNode:
        """The node called `name` (as JetStream names leaders: 'n1', 'n2', ...)."""
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(f"no node {name!r} in the cluster; nodes: {[n.name for n in self.nodes]}")

    def start(self) -> EmbeddedNatsCluster:
        """Starts every node that is not running and waits until the cluster is ready."""
        try:
            # Each node waits only for its own JetStream; the meta group forms once a quorum
            # is up, so the nodes start one after another and readiness is checked after.
            for node in self.nodes:
                if not node.running:
                    node.start()
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def wait_ready(self, timeout: float | None = None) -> None:
        """Waits until every running node reports healthy (meta leader known, assets current)
        and the meta leader sees every running node as a current, online peer.

        The second condition matters after a restart: each node can be healthy while the
        meta leader still counts the restarted one offline, and a stream or bucket created
        then with three replicas is refused ("no suitable peers for placement").

        Raises:
            EmbeddedServerError: a node is not healthy within `timeout` (default: the
                cluster's startup timeout).
        """
        deadline = time.monotonic() + (timeout or self.startup_timeout)
        for node in self.nodes:
            if not node.running:
                continue
            while not _healthy(node):
                if time.monotonic() >= deadline:
                    raise EmbeddedServerError(
                        f"nats-server {node.name!r} of the cluster did not become healthy "
                        f"within {timeout or self.startup_timeout}s; its log ends with:\n"
                        f"{node._log_tail()}"
                    )
                time.sleep(0.1)
        running = {node.name for node in self.nodes if node.running}
        while not self._leader_sees(running):
            if time.monotonic() >= deadline:
                raise EmbeddedServerError(
                    f"the cluster's meta leader did not see {sorted(running)} as current "
                    f"peers within {timeout or self.startup_timeout}s"
                )
            time.sleep(0.1)

    def _leader_sees(self, running: set[str]) -> bool:
        """Whether some running node is the meta leader and reports every other running
        node as a current peer that is not offline."""
        for node in self.nodes:
            if node.name not in running:
                continue
            meta = _meta_cluster(node)
            if meta is None or meta.get("leader") != node.name:
                continue
            peers = {
                replica["name"]
                for replica in meta.get("replicas", ())
                if replica.get("current") and not replica.get("offline")
            }
            return running - {node.name} <= peers
        return False

    def stop(self) -> None:
        """Stops every node (SIGTERM, then SIGKILL); the stores stay."""
        for node in self.nodes:
            node.stop()

    def __enter__(self) -> EmbeddedNatsCluster:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _healthy(node: ClusterNode) -> bool:
    """Whether `/healthz` is 200: JetStream on, the meta group has a leader, and the
    streams and consumers this node holds are current."""
    try:
        with _DIRECT.open(f"{node.monitoring_url}/healthz", timeout=1) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def _meta_cluster(node: ClusterNode) -> dict | None:
    """The node's view of the JetStream meta group (`/jsz`'s `meta_cluster`), or None."""
    try:
        with _DIRECT.open(f"{node.monitoring_url}/jsz", timeout=1) as response:
            return json.loads(response.read()).get("meta_cluster")
    except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError):
        return None


__all__ = ["ClusterNode", "EmbeddedNatsCluster", "free_port"]
