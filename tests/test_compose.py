"""docker-compose.yml cannot run here (no Docker engine): check that its parts line up."""

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from resources.jetstream import JetStreamResource
from resources.jetstream.server.embedded import find_nats_server_binary

PROJECT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((PROJECT / "docker-compose.yml").read_text())


NATS_NODES = ("nats-1", "nats-2", "nats-3")
CLUSTER_CONF = PROJECT / "docker" / "nats-cluster.conf"


def test_compose_has_a_nats_cluster_spark_postgres_provisioning_and_dagster(compose):
    assert set(compose["services"]) == {
        *NATS_NODES,
        "postgres",
        "provision",
        "spark-master",
        "spark-worker",
        "code-location",
        "webserver",
        "daemon",
    }


@pytest.mark.parametrize("node", NATS_NODES)
def test_each_nats_node_runs_the_cluster_config_with_its_own_name_and_store(compose, node):
    service = compose["services"][node]
    command = service["command"]
    config = command[command.index("-c") + 1]
    assert f"./docker/nats-cluster.conf:{config}:ro" in service["volumes"]
    store = command[command.index("--store_dir") + 1]
    assert f"{node}-data:{store}" in service["volumes"]
    assert service["environment"] == {"NATS_SERVER_NAME": node}
    text = CLUSTER_CONF.read_text()
    assert f"nats-route://{node}:6222" in text


def test_the_first_node_publishes_the_client_and_monitoring_ports(compose):
    assert {"4222:4222", "8222:8222"} <= set(compose["services"]["nats-1"]["ports"])


def test_the_code_location_reaches_every_node_and_starts_after_provisioning(compose):
    env = compose["services"]["code-location"]["environment"]
    assert env["NATS_URL"].split(",") == [f"nats://{node}:4222" for node in NATS_NODES]
    assert env["JSL_NATS_REPLICAS"] == "3"
    depends = compose["services"]["code-location"]["depends_on"]
    assert depends["provision"] == {"condition": "service_completed_successfully"}
    provision = compose["services"]["provision"]
    assert provision["command"] == ["jsl", "provision", "--yes"]
    assert provision["environment"] == env
    assert set(provision["depends_on"]) == set(NATS_NODES)


def test_the_spark_worker_joins_the_master_and_shares_the_lakehouse_volume(compose):
    env = compose["services"]["code-location"]["environment"]
    master = compose["services"]["spark-master"]["command"]
    host, port = master[master.index("--host") + 1], master[master.index("--port") + 1]
    assert env["JSL_SPARK_MASTER"] == f"spark://{host}:{port}"
    worker = compose["services"]["spark-worker"]
    assert env["JSL_SPARK_MASTER"] in worker["command"]
    data_volume = f"lakehouse-data:{env['LAKEHOUSE_DATA_DIR']}"
    assert data_volume in worker["volumes"]
    assert data_volume in compose["services"]["code-location"]["volumes"]
    assert env["LAKEHOUSE_ROOT"].startswith(env["LAKEHOUSE_DATA_DIR"] + "/")
    assert env["JSL_SPARK_SHARED_FS"] == "true"  # the worker sees the same local table root
    # The code server launches the runs (docker/dagster.yaml's DefaultRunLauncher), so the
    # Spark drivers live in the code location's container.
    assert env["JSL_SPARK_DRIVER_HOST"] == "code-location"
    instance = yaml.safe_load((PROJECT / "docker" / "dagster.yaml").read_text())
    assert instance["run_launcher"]["class"] == "DefaultRunLauncher"


def test_webserver_and_daemon_reach_the_code_location_named_in_the_workspace(compose):
    workspace = yaml.safe_load((PROJECT / "docker" / "workspace.yaml").read_text())
    [entry] = workspace["load_from"]
    grpc = entry["grpc_server"]
    code = compose["services"]["code-location"]
    command = code["command"]
    assert grpc["host"] == "code-location"
    assert str(grpc["port"]) == command[command.index("-p") + 1]
    assert grpc["location_name"] == command[command.index("--location-name") + 1]
    assert command[command.index("-m") + 1] == "pipelines.definitions"
    for service in ("webserver", "daemon"):
        cmd = compose["services"][service]["command"]
        mounted = compose["services"][service]["volumes"]
        assert cmd[cmd.index("-w") + 1] == "/opt/dagster/workspace.yaml"
        assert "./docker/workspace.yaml:/opt/dagster/workspace.yaml:ro" in mounted


def test_local_workspace_and_pyproject_name_the_same_module_and_location():
    from resources.backports import tomllib

    workspace = yaml.safe_load((PROJECT / "workspace.yaml").read_text())
    [entry] = workspace["load_from"]
    dagster_cfg = tomllib.loads((PROJECT / "pyproject.toml").read_text())["tool"]["dagster"]
    assert entry["python_module"]["module_name"] == dagster_cfg["module_name"]
    assert entry["python_module"]["location_name"] == dagster_cfg["code_location_name"]


def test_services_point_at_postgres_that_compose_defines(compose):
    env = compose["services"]["code-location"]["environment"]
    assert env["DAGSTER_POSTGRES_HOST"] == "postgres"
    instance = yaml.safe_load((PROJECT / "docker" / "dagster.yaml").read_text())
    assert instance["storage"]["postgres"]["postgres_db"]["hostname"] == {
        "env": "DAGSTER_POSTGRES_HOST"
    }


def test_dockerfile_copies_every_package_of_the_code_location():
    dockerfile = (PROJECT / "docker" / "Dockerfile").read_text()
    for package in ("pipelines", "resources", "assets", "sensors"):
        assert f"COPY {package} ./{package}" in dockerfile


def compose_client() -> list[str] | None:
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True)
        if probe.returncode == 0:
            return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return None


def test_compose_file_parses_with_the_docker_compose_client():
    client = compose_client()
    if client is None:
        pytest.skip("no docker compose client here (docker compose plugin or docker-compose)")
    result = subprocess.run(
        [*client, "-f", str(PROJECT / "docker-compose.yml"), "config", "-q"],
        capture_output=True,
        text=True,
        cwd=PROJECT,
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("node", NATS_NODES)
def test_nats_image_is_new_enough_for_consumer_reset(compose, node):
    tag = compose["services"][node]["image"].split(":")[1]
    major, minor = (int(part) for part in tag.split("-")[0].split(".")[:2])
    assert (major, minor) >= (2, 14)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def healthy(http_port: int) -> bool:
    url = f"http://127.0.0.1:{http_port}/healthz?js-enabled-only=true"
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return response.status == 200
    except OSError:
        return False


@pytest.fixture
def compose_cluster(tmp_path: Path) -> Iterator[tuple[str, list[int]]]:
    """docker-compose.yml's three NATS nodes on loopback: its config file and node names, with
    the ports, routes and store dirs (which compose sets per container) moved to this host.

    Yields the NATS URL of all three and their monitoring ports, once each is healthy (the
    compose healthcheck's probe).
    """
    ports = [(free_port(), free_port(), free_port()) for _ in NATS_NODES]
    routes = ",".join(f"nats://127.0.0.1:{cluster}" for _, _, cluster in ports)
    processes = []
    try:
        for node, (client, http, cluster) in zip(NATS_NODES, ports, strict=True):
            command = [str(find_nats_server_binary()), "-c", str(CLUSTER_CONF)]
            command += ["--port", str(client), "--http_port", str(http)]
            command += ["--cluster", f"nats://127.0.0.1:{cluster}", "--routes", routes]
            command += ["--store_dir", str(tmp_path / node), "-l", str(tmp_path / f"{node}.log")]
            env = {**os.environ, "NATS_SERVER_NAME": node}
            processes.append(subprocess.Popen(command, env=env, stderr=subprocess.PIPE))
        deadline = time.monotonic() + 30
        while not all(healthy(http) for _, http, _ in ports):
            assert time.monotonic() < deadline, "the compose NATS cluster did not become healthy"
            time.sleep(0.2)
        yield ",".join(f"nats://127.0.0.1:{c}" for c, _, _ in ports), [h for _, h, _ in ports]
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=30)


def test_the_compose_cluster_config_forms_a_cluster_that_provision_fills_with_r3(
    compose, compose_cluster, tmp_path
):
    url, http_ports = compose_cluster
    compose_env = compose["services"]["provision"]["environment"]
    env = {**os.environ, "NATS_URL": url, "JSL_NATS_REPLICAS": compose_env["JSL_NATS_REPLICAS"]}
    env["LAKEHOUSE_DATA_DIR"] = str(tmp_path / "data")
    command = compose["services"]["provision"]["command"]
    assert command[0] == "jsl"
    done = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", *command[1:]],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr

    with JetStreamResource(servers=url).client() as js:
        streams = {s.spec.name: s for s in js.streams.list()}
    # The stream and the buckets (KV and Object Store buckets are streams too): all R3.
    assert "FILE_EVENTS" in streams
    assert {name: s.config["num_replicas"] for name, s in streams.items()} == {
        name: 3 for name in streams
    }
    for http in http_ports:
        with urllib.request.urlopen(f"http://127.0.0.1:{http}/jsz", timeout=5) as response:
            jsz = json.load(response)
        assert jsz["config"]["sync_always"] is True
