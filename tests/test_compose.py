"""docker-compose.yml cannot run here (no Docker engine): check that its parts line up."""

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

PROJECT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((PROJECT / "docker-compose.yml").read_text())


def test_compose_has_nats_postgres_code_location_webserver_and_daemon(compose):
    assert set(compose["services"]) == {"nats", "postgres", "code-location", "webserver", "daemon"}


def test_nats_service_runs_jetstream_on_a_volume_with_monitoring(compose):
    nats = compose["services"]["nats"]
    assert "--jetstream" in nats["command"]
    store = nats["command"][nats["command"].index("--store_dir") + 1]
    assert any(v.endswith(f":{store}") for v in nats["volumes"])
    assert "8222:8222" in nats["ports"] and "4222:4222" in nats["ports"]


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
    import tomllib

    workspace = yaml.safe_load((PROJECT / "workspace.yaml").read_text())
    [entry] = workspace["load_from"]
    dagster_cfg = tomllib.loads((PROJECT / "pyproject.toml").read_text())["tool"]["dagster"]
    assert entry["python_module"]["module_name"] == dagster_cfg["module_name"]
    assert entry["python_module"]["location_name"] == dagster_cfg["code_location_name"]


def test_services_point_at_nats_and_postgres_that_compose_defines(compose):
    env = compose["services"]["code-location"]["environment"]
    assert env["NATS_URL"] == "nats://nats:4222"
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


def test_nats_image_is_new_enough_for_consumer_reset(compose):
    tag = compose["services"]["nats"]["image"].split(":")[1]
    major, minor = (int(part) for part in tag.split("-")[0].split(".")[:2])
    assert (major, minor) >= (2, 14)
