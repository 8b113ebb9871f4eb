"""Connection settings from the environment (`JetStreamResource.from_env`), no code edit.

The mapping is checked variable by variable; then the auth tests' servers (one requiring a
password, one a `.creds` file) are reached by the code location, `jsl provision` and a
Dagster run with nothing but environment variables, and the secret is looked for (and must
not be found) in the run's configuration, its event log and the commands' output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from dagster import DagsterInstance, EnvVar, asset, materialize

from pipelines.cli.main import main as jsl
from resources.jetstream import JetStreamResource
from resources.jetstream.connection.settings import redact_url
from resources.jetstream.environment import (
    CREDENTIAL_VARIABLES,
    resource_fields_from_env,
)
from resources.jetstream.errors import InvalidArgumentError
from resources.jetstream.server.embedded import EmbeddedNatsServer
from tests.resources.jetstream.certs import make_operator_setup

PROJECT_DIR = Path(__file__).resolve().parents[3]
SECRET = "s3cr3t-pw-from-env"
PASSWORD_AUTH = "authorization { users: [ { user: lakehouse, password: " + SECRET + " } ] }"


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No NATS variable of the developer's shell leaks into a test."""
    for name in (*CREDENTIAL_VARIABLES, "NATS_URL"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


# -- the mapping -----------------------------------------------------------------------


def test_every_variable_sets_its_field_and_secrets_stay_env_vars() -> None:
    fields = resource_fields_from_env(
        {
            "NATS_URL": "nats://nats-1:4222,nats://nats-2:4222",
            "NATS_USER": "lakehouse",
            "NATS_PASSWORD": SECRET,
            "NATS_TOKEN": "t0ken",
            "NATS_NKEY_SEED": "SUAxxx",
            "NATS_NKEY": "/etc/nats/user.nk",
            "NATS_CREDS": "/etc/nats/user.creds",
            "NATS_CA": "/etc/nats/ca.pem",
            "NATS_TLS_CERT": "/etc/nats/client.pem",
            "NATS_KEY": "/etc/nats/client-key.pem",
            "NATS_TLS_HOSTNAME": "nats.internal",
            "NATS_TLS_HANDSHAKE_FIRST": "yes",
            "UNRELATED": "x",
        }
    )

    assert fields == {
        "servers": "nats://nats-1:4222,nats://nats-2:4222",
        "user": "lakehouse",
        "password": "NATS_PASSWORD",
        "token": "NATS_TOKEN",
        "nkey_seed": "NATS_NKEY_SEED",
        "nkey_seed_file": "/etc/nats/user.nk",
        "creds_file": "/etc/nats/user.creds",
        "tls_ca_file": "/etc/nats/ca.pem",
        "tls_cert_file": "/etc/nats/client.pem",
        "tls_key_file": "/etc/nats/client-key.pem",
        "tls_hostname": "nats.internal",
        "tls_handshake_first": True,
    }
    secrets = {name for name, value in fields.items() if isinstance(value, EnvVar)}
    assert secrets == {"password", "token", "nkey_seed"}
    assert SECRET not in repr(fields)


def test_empty_variables_count_as_unset() -> None:
    assert resource_fields_from_env({"NATS_URL": "", "NATS_USER": "  ", "NATS_CA": ""}) == {}


def test_a_url_with_credentials_is_an_env_var_and_is_redacted_in_messages() -> None:
    fields = resource_fields_from_env({"NATS_URL": f"nats://lakehouse:{SECRET}@nats-1:4222"})

    assert isinstance(fields["servers"], EnvVar)
    assert fields["servers"] == "NATS_URL"
    assert redact_url(f"nats://lakehouse:{SECRET}@nats-1:4222") == (
        "nats://lakehouse:***@nats-1:4222"
    )
    assert redact_url(f"tls://{SECRET}@a:4222,nats://b:4222") == "tls://***@a:4222, nats://b:4222"
    assert redact_url("nats://127.0.0.1:4222") == "nats://127.0.0.1:4222"


def test_two_aliases_that_disagree_are_named_and_a_secret_is_not_shown() -> None:
    with pytest.raises(InvalidArgumentError, match="NATS_CA and NATS_TLS_CA both set"):
        resource_fields_from_env({"NATS_CA": "/a.pem", "NATS_TLS_CA": "/b.pem"})
    assert resource_fields_from_env({"NATS_CA": "/a.pem", "NATS_TLS_CA": "/a.pem"}) == {
        "tls_ca_file": "/a.pem"
    }


def test_a_boolean_variable_that_is_not_one_is_named() -> None:
    with pytest.raises(InvalidArgumentError, match="NATS_TLS_HANDSHAKE_FIRST must be true or"):
        resource_fields_from_env({"NATS_TLS_HANDSHAKE_FIRST": "maybe"})


def test_overrides_win_and_none_overrides_are_ignored() -> None:
    resource = JetStreamResource.from_env(
        {"NATS_URL": "nats://nats-1:4222", "NATS_USER": "me"},
        servers="nats://other:4222",
        user=None,
        request_timeout=3.0,
    )

    assert (resource.servers, resource.user, resource.request_timeout) == (
        "nats://other:4222",
        "me",
        3.0,
    )


# -- real servers, nothing but the environment -------------------------------------------


@pytest.fixture
def password_server(tmp_path: Path):
    with EmbeddedNatsServer(store_dir=tmp_path / "store", extra_config=PASSWORD_AUTH) as server:
        yield server


def test_password_server_is_reached_by_jsl_provision_from_the_environment(
    password_server: EmbeddedNatsServer, clean_env: pytest.MonkeyPatch, capsys
) -> None:
    url = password_server.url
    clean_env.setenv("NATS_URL", url)
    assert jsl(["provision", "--dry-run"]) == 1  # no credentials: refused, and it says so
    assert "requires authentication" in capsys.readouterr().err

    clean_env.setenv("NATS_USER", "lakehouse")
    clean_env.setenv("NATS_PASSWORD", SECRET)

    assert jsl(["provision", "--dry-run"]) == 0
    out = capsys.readouterr()
    assert f"plan for {url}" in out.out
    assert SECRET not in out.out + out.err


def test_password_in_the_url_is_used_and_never_printed(
    password_server: EmbeddedNatsServer, clean_env: pytest.MonkeyPatch, capsys
) -> None:
    host = password_server.url.removeprefix("nats://")
    clean_env.setenv("NATS_URL", f"nats://lakehouse:{SECRET}@{host}")

    assert jsl(["provision", "--dry-run"]) == 0
    out = capsys.readouterr()
    assert f"plan for nats://lakehouse:***@{host}" in out.out
    assert SECRET not in out.out + out.err


def test_creds_server_is_reached_by_the_code_location_from_the_environment(
    tmp_path: Path,
) -> None:
    setup = make_operator_setup(tmp_path / "jwt")
    with EmbeddedNatsServer(store_dir=tmp_path / "store", extra_config=setup.server_config) as s:
        env = {
            name: value
            for name, value in os.environ.items()
            if name not in (*CREDENTIAL_VARIABLES, "NATS_URL")
        }
        env |= {"NATS_URL": s.url, "NATS_CREDS": str(setup.creds_file)}
        env |= {"LAKEHOUSE_DATA_DIR": str(tmp_path / "data")}
        # The code location's own module, imported as `dagster` does: no argument, no edit.
        script = (
            "import json\n"
            "from pipelines.definitions import defs\n"
            "resource = defs.resources['jetstream']\n"
            "with resource.client() as js:\n"
            "    print(json.dumps({'creds': resource.creds_file,\n"
            "                      'streams': js.streams.names()}))\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", script],
            cwd=PROJECT_DIR,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    assert done.returncode == 0, done.stderr[-2000:]
    reported = json.loads(done.stdout.strip().splitlines()[-1])
    assert reported == {"creds": str(setup.creds_file), "streams": []}


def test_a_dagster_run_connects_with_the_env_secret_and_never_records_it(
    password_server: EmbeddedNatsServer, clean_env: pytest.MonkeyPatch
) -> None:
    clean_env.setenv("NATS_URL", password_server.url)
    clean_env.setenv("NATS_USER", "lakehouse")
    clean_env.setenv("NATS_PASSWORD", SECRET)

    @asset
    def stream_names(jetstream: JetStreamResource) -> list[str]:
        return jetstream.get_client().streams.names()

    with DagsterInstance.ephemeral() as instance:
        result = materialize(
            [stream_names],
            resources={"jetstream": JetStreamResource.from_env()},
            instance=instance,
        )
        assert result.success
        assert result.output_for_node("stream_names") == []
        run = instance.get_run_by_id(result.run_id)
        recorded = repr(run) + repr(instance.all_logs(result.run_id))

    assert SECRET not in recorded
