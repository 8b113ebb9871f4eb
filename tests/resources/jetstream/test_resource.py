"""JetStreamResource: settings from config and EnvVar, lazy connection, teardown."""

import pytest
from dagster import EnvVar, asset, materialize

from resources.jetstream import JetStreamResource
from resources.jetstream.errors import InvalidArgumentError


def test_envvar_fields_resolve_outside_a_run(monkeypatch):
    monkeypatch.setenv("JSL_TEST_PASSWORD", "s3cret")
    resource = JetStreamResource(user="lakehouse", password=EnvVar("JSL_TEST_PASSWORD"))
    assert resource.connection_settings().password == "s3cret"


def test_unset_envvar_is_a_clear_error_before_any_io(monkeypatch):
    monkeypatch.delenv("JSL_TEST_UNSET", raising=False)
    resource = JetStreamResource(user="u", password=EnvVar("JSL_TEST_UNSET"))
    with pytest.raises(InvalidArgumentError, match="EnvVar\\('JSL_TEST_UNSET'\\)"):
        resource.connection_settings()


def test_client_in_a_script_connects_through_envvar_servers(nats_server, monkeypatch):
    monkeypatch.setenv("JSL_TEST_NATS_URL", nats_server.url)
    with JetStreamResource(servers=EnvVar("JSL_TEST_NATS_URL")).client() as js:
        assert js.is_connected


def test_run_connects_on_first_use_and_closes_at_teardown(jetstream_resource):
    clients = []

    @asset
    def uses_jetstream(jetstream: JetStreamResource) -> None:
        first = jetstream.get_client()
        assert jetstream.get_client() is first  # one connection per run
        clients.append(first)

    assert materialize([uses_jetstream], resources={"jetstream": jetstream_resource}).success
    [client] = clients
    assert not client.is_connected
