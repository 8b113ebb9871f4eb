"""Auth and TLS against a real nats-server, through `JetStreamResource(...).client()`.

Each test starts its own `EmbeddedNatsServer` whose configuration requires the method under
test, connects the way a Dagster run does, and proves the connection by a JetStream call.
Failures must be the right `ConnectionFailedError` subclass, name the server, and come back
within the connect timeout (a 30 s watchdog fails the test instead of hanging the suite).
"""

from __future__ import annotations

import json
import os
import socket
import socketserver
import struct
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import nkeys
import pytest

from resources.jetstream import (
    ConnectionSettings,
    EmbeddedNatsServer,
    JetStreamClient,
    JetStreamResource,
    StreamSpec,
)
from resources.jetstream.errors import (
    AuthenticationError,
    ConnectionFailedError,
    InvalidArgumentError,
    JetStreamError,
    TLSError,
)
from tests.resources.jetstream.certs import Pki, make_operator_setup, make_pki, new_keypair

HANG_LIMIT = 30.0  # seconds; far beyond any connect_timeout used here
CONNECT_TIMEOUT = 3.0  # seconds


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """A throwaway CA with a server certificate for 127.0.0.1/localhost and a client one."""
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[Callable[[str], EmbeddedNatsServer]]:
    """Starts servers with the given extra configuration; all stop after the test."""
    servers: list[EmbeddedNatsServer] = []

    def start(extra_config: str = "") -> EmbeddedNatsServer:
        store_dir = tmp_path / f"store-{len(servers)}"
        server = EmbeddedNatsServer(store_dir=store_dir, extra_config=extra_config)
        servers.append(server)
        return server.start()

    yield start
    for server in servers:
        server.stop()


def resource(servers: str, **options: object) -> JetStreamResource:
    settings = {"connect_timeout": CONNECT_TIMEOUT, "request_timeout": 5.0, **options}
    return JetStreamResource(servers=servers, **settings)


def use_jetstream(resource: JetStreamResource) -> str:
    """Connects, adds a stream and reads it back; returns the stream's name."""
    name = f"AUTH_{os.urandom(4).hex().upper()}"
    with resource.client() as client:
        client.streams.add(StreamSpec(name=name, subjects=(f"{name.lower()}.>",)))
        return client.streams.info(name).name


def connect_error(connect: Callable[[], object]) -> JetStreamError:
    """Runs `connect`, which must raise, on a watchdog thread; returns what it raised."""
    outcome: dict[str, BaseException | None] = {}

    def attempt() -> None:
        try:
            connect()
        except BaseException as error:
            outcome["error"] = error
        else:
            outcome["error"] = None

    thread = threading.Thread(target=attempt, daemon=True)
    thread.start()
    thread.join(HANG_LIMIT)
    assert not thread.is_alive(), f"connecting hung for more than {HANG_LIMIT}s"
    error = outcome["error"]
    assert isinstance(error, JetStreamError), f"expected a JetStreamError, got {error!r}"
    return error


def closed_port_url() -> str:
    """A loopback URL on which nothing listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"nats://127.0.0.1:{port}"


def user_keypair() -> nkeys.KeyPair:
    return new_keypair(nkeys.PREFIX_BYTE_USER)


# -- user and password -----------------------------------------------------------------

PASSWORD_AUTH = "authorization { users: [ { user: lakehouse, password: s3cr3t-pw } ] }"


def test_user_and_password_connect_and_use_jetstream(start_server) -> None:
    server = start_server(PASSWORD_AUTH)

    name = use_jetstream(resource(server.url, user="lakehouse", password="s3cr3t-pw"))

    assert name.startswith("AUTH_")


def test_wrong_password_raises_authentication_error_naming_server(start_server) -> None:
    server = start_server(PASSWORD_AUTH)

    jetstream = resource(server.url, user="lakehouse", password="wr0ng-pa55")

    error = connect_error(lambda: use_jetstream(jetstream))

    assert isinstance(error, AuthenticationError)
    assert error.server == server.url
    assert server.url in str(error)
    assert "rejected the user/password of user 'lakehouse'" in str(error)
    assert "wr0ng-pa55" not in str(error)


def test_no_credentials_for_a_server_that_requires_them_says_none_are_configured(
    start_server,
) -> None:
    server = start_server(PASSWORD_AUTH)

    error = connect_error(lambda: use_jetstream(resource(server.url)))

    assert isinstance(error, AuthenticationError)
    assert "no credentials are configured" in str(error)
    assert server.url in str(error)


def test_password_without_user_is_rejected_before_any_io() -> None:
    with pytest.raises(InvalidArgumentError, match="needs both `user` and `password`"):
        resource(closed_port_url(), password="s3cr3t-pw").connection_settings()


# -- token -----------------------------------------------------------------------------

TOKEN_AUTH = 'authorization { token: "t0ken-for-the-lakehouse" }'


def test_token_connects_and_uses_jetstream(start_server) -> None:
    server = start_server(TOKEN_AUTH)

    assert use_jetstream(resource(server.url, token="t0ken-for-the-lakehouse"))


def test_wrong_token_raises_authentication_error(start_server) -> None:
    server = start_server(TOKEN_AUTH)

    error = connect_error(lambda: use_jetstream(resource(server.url, token="not-the-token")))

    assert isinstance(error, AuthenticationError)
    assert server.url in str(error)
    assert "rejected the token" in str(error)
    assert "not-the-token" not in str(error)


def test_two_auth_methods_at_once_are_rejected_before_any_io() -> None:
    with pytest.raises(InvalidArgumentError, match=r"several ways to authenticate.*token"):
        resource(closed_port_url(), user="u", password="p", token="t").connection_settings()


# -- NKey ------------------------------------------------------------------------------


def nkey_auth(keypair: nkeys.KeyPair) -> str:
    return f"authorization {{ users: [ {{ nkey: {keypair.public_key.decode()} }} ] }}"


def test_nkey_seed_string_connects_and_uses_jetstream(start_server) -> None:
    keypair = user_keypair()
    server = start_server(nkey_auth(keypair))

    assert use_jetstream(resource(server.url, nkey_seed=keypair.seed.decode()))


def test_nkey_seed_file_connects_and_uses_jetstream(start_server, tmp_path: Path) -> None:
    keypair = user_keypair()
    seed_file = tmp_path / "user.nk"
    seed_file.write_text(keypair.seed.decode() + "\n")
    server = start_server(nkey_auth(keypair))

    assert use_jetstream(resource(server.url, nkey_seed_file=str(seed_file)))


def test_nkey_unknown_to_the_server_raises_authentication_error(start_server) -> None:
    server = start_server(nkey_auth(user_keypair()))

    error = connect_error(
        lambda: use_jetstream(resource(server.url, nkey_seed=user_keypair().seed.decode()))
    )

    assert isinstance(error, AuthenticationError)
    assert "NKey seed" in str(error)
    assert server.url in str(error)


@pytest.mark.parametrize(
    "seed, reason",
    [
        ("SUnot-a-seed", "is not an NKey seed"),
        (
            nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_ACCOUNT).decode(),
            "not a user's",
        ),
    ],
    ids=["garbage", "account-seed"],
)
def test_malformed_nkey_seed_raises_invalid_argument_before_any_io(seed: str, reason: str) -> None:
    # The URL is a closed port: any network I/O would end in a ConnectionFailedError.
    error = connect_error(lambda: use_jetstream(resource(closed_port_url(), nkey_seed=seed)))

    assert isinstance(error, InvalidArgumentError)
    assert reason in str(error)
    assert seed not in str(error)


def test_missing_nkey_seed_file_names_the_option_and_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope.nk"

    error = connect_error(
        lambda: use_jetstream(resource(closed_port_url(), nkey_seed_file=str(missing)))
    )

    assert isinstance(error, InvalidArgumentError)
    assert f"nkey_seed_file {str(missing)!r}" in str(error)


# -- decentralised JWT auth (.creds) ---------------------------------------------------


def test_creds_file_connects_with_operator_jwt_auth_and_uses_jetstream(
    start_server, tmp_path: Path
) -> None:
    setup = make_operator_setup(tmp_path / "jwt")
    server = start_server(setup.server_config)

    assert use_jetstream(resource(server.url, creds_file=str(setup.creds_file)))


def test_creds_of_an_account_the_server_does_not_know_raise_authentication_error(
    start_server, tmp_path: Path
) -> None:
    trusted = make_operator_setup(tmp_path / "trusted")
    stranger = make_operator_setup(tmp_path / "stranger")
    server = start_server(trusted.server_config)

    error = connect_error(
        lambda: use_jetstream(resource(server.url, creds_file=str(stranger.creds_file)))
    )

    assert isinstance(error, AuthenticationError)
    assert f"credentials file {str(stranger.creds_file)!r}" in str(error)


def test_creds_file_without_jwt_block_raises_instead_of_hanging(
    start_server, tmp_path: Path
) -> None:
    # nats-py would loop forever looking for the JWT block, blocking the event loop.
    setup = make_operator_setup(tmp_path / "jwt")
    server = start_server(setup.server_config)
    seed_only = tmp_path / "seed-only.creds"
    seed_only.write_text(
        f"-----BEGIN USER NKEY SEED-----\n{setup.user_seed}\n------END USER NKEY SEED------\n"
    )

    error = connect_error(lambda: use_jetstream(resource(server.url, creds_file=str(seed_only))))

    assert isinstance(error, InvalidArgumentError)
    assert "is not a NATS credentials file" in str(error)


# -- TLS -------------------------------------------------------------------------------


def tls_config(pki: Pki, *extra: str) -> str:
    options = [
        f"cert_file: {json.dumps(str(pki.server_cert))}",
        f"key_file: {json.dumps(str(pki.server_key))}",
    ]
    return "tls { " + ", ".join([*options, *extra]) + " }"


def test_tls_with_the_ca_connects_and_uses_jetstream(start_server, pki: Pki) -> None:
    server = start_server(tls_config(pki))

    assert server.url.startswith("tls://")
    assert server.monitoring_url.startswith("http://")  # readiness stays plain HTTP
    assert use_jetstream(resource(server.url, tls_ca_file=str(pki.ca_cert)))
    assert use_jetstream(
        resource(server.url.replace("tls://", "nats://"), tls_ca_file=str(pki.ca_cert))
    )


def test_tls_by_host_name_localhost_matches_the_certificate(start_server, pki: Pki) -> None:
    server = start_server(tls_config(pki))

    url = server.url.replace("127.0.0.1", "localhost")
    assert use_jetstream(resource(url, tls_ca_file=str(pki.ca_cert)))


@pytest.mark.parametrize("trust", ["system CAs", "another CA"])
def test_tls_without_trusting_the_ca_raises_tls_error_naming_server(
    start_server, pki: Pki, trust: str
) -> None:
    server = start_server(tls_config(pki))
    ca_file = str(pki.other_ca_cert) if trust == "another CA" else None

    error = connect_error(lambda: use_jetstream(resource(server.url, tls_ca_file=ca_file)))

    assert isinstance(error, TLSError)
    assert error.server == server.url
    assert server.url in str(error)
    assert "CERTIFICATE_VERIFY_FAILED" in str(error)
    assert "set tls_ca_file" in str(error)


def test_mutual_tls_with_a_client_certificate_connects(start_server, pki: Pki) -> None:
    server = start_server(
        tls_config(pki, f"ca_file: {json.dumps(str(pki.ca_cert))}", "verify: true")
    )

    jetstream = resource(
        server.url,
        tls_ca_file=str(pki.ca_cert),
        tls_cert_file=str(pki.client_cert),
        tls_key_file=str(pki.client_key),
    )

    assert use_jetstream(jetstream)


def test_mutual_tls_without_a_client_certificate_raises_tls_error(start_server, pki: Pki) -> None:
    server = start_server(
        tls_config(pki, f"ca_file: {json.dumps(str(pki.ca_cert))}", "verify: true")
    )

    error = connect_error(lambda: use_jetstream(resource(server.url, tls_ca_file=str(pki.ca_cert))))

    assert isinstance(error, TLSError)
    assert server.url in str(error)
    assert "set tls_cert_file and tls_key_file" in str(error)


def test_client_certificate_and_key_that_do_not_match_raise_invalid_argument(
    pki: Pki,
) -> None:
    jetstream = resource(
        closed_port_url(),
        tls_ca_file=str(pki.ca_cert),
        tls_cert_file=str(pki.client_cert),
        tls_key_file=str(pki.server_key),
    )

    error = connect_error(lambda: use_jetstream(jetstream))

    assert isinstance(error, InvalidArgumentError)
    assert "the key must belong to the certificate" in str(error)


def test_missing_ca_file_raises_invalid_argument_naming_it(tmp_path: Path) -> None:
    missing = str(tmp_path / "ca.pem")

    error = connect_error(lambda: use_jetstream(resource(closed_port_url(), tls_ca_file=missing)))

    assert isinstance(error, InvalidArgumentError)
    assert f"tls_ca_file {missing!r}" in str(error)


def test_tls_handshake_first_connects_to_a_handshake_first_server(start_server, pki: Pki) -> None:
    server = start_server(tls_config(pki, "handshake_first: true"))

    jetstream = resource(server.url, tls_ca_file=str(pki.ca_cert), tls_handshake_first=True)

    assert use_jetstream(jetstream)


def test_handshake_first_server_without_the_client_option_hints_at_it(
    start_server, pki: Pki
) -> None:
    server = start_server(tls_config(pki, "handshake_first: true"))

    jetstream = resource(server.url, tls_ca_file=str(pki.ca_cert), connect_timeout=1)

    error = connect_error(lambda: use_jetstream(jetstream))

    assert isinstance(error, ConnectionFailedError)
    assert server.url in str(error)
    assert "tls_handshake_first=True" in str(error)


def test_tls_asked_for_but_not_offered_refuses_to_send_the_password(start_server) -> None:
    server = start_server(PASSWORD_AUTH + "\ntrace: true")  # the log shows each CONNECT
    tls_url = server.url.replace("nats://", "tls://")

    error = connect_error(
        lambda: use_jetstream(resource(tls_url, user="lakehouse", password="s3cr3t-pw"))
    )

    assert isinstance(error, TLSError)
    assert server.url.replace("nats://", "tls://") in str(error)
    assert "does not use TLS" in str(error)
    assert "CONNECT" not in server.log_path.read_text()


def test_tls_asked_for_but_not_offered_is_refused_without_credentials(
    start_server, pki: Pki
) -> None:
    server = start_server()

    error = connect_error(lambda: use_jetstream(resource(server.url, tls_ca_file=str(pki.ca_cert))))

    assert isinstance(error, TLSError)
    assert server.url in str(error)


def test_tls_hostname_overrides_the_name_checked_against_the_certificate(
    start_server, pki: Pki
) -> None:
    # Not a resource field (yet): the setting is exercised through the client it feeds.
    server = start_server(tls_config(pki))

    def settings(hostname: str) -> ConnectionSettings:
        return ConnectionSettings(
            servers=(server.url,),
            connect_timeout=CONNECT_TIMEOUT,
            tls_ca_file=str(pki.ca_cert),
            tls_hostname=hostname,
        )

    with JetStreamClient(settings("localhost")) as client:
        assert client.streams.add(StreamSpec(name="BY_NAME", subjects=("by-name.>",)))

    def wrong_name() -> None:
        with JetStreamClient(settings("nats.example.com")):
            pass

    error = connect_error(wrong_name)
    assert isinstance(error, TLSError)
    assert "set tls_hostname" in str(error)


# -- reachability and URLs -------------------------------------------------------------


def test_embedded_server_with_tls_and_auth_is_ready_despite_an_http_proxy_in_the_env(
    start_server, pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The readiness check uses the plain-HTTP monitoring port and must not go via a proxy.
    for variable in ("http_proxy", "HTTP_PROXY"):
        monkeypatch.setenv(variable, closed_port_url().replace("nats://", "http://"))
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)

    server = start_server(tls_config(pki) + "\n" + TOKEN_AUTH)

    assert server.monitoring_url.startswith("http://")
    assert use_jetstream(
        resource(server.url, tls_ca_file=str(pki.ca_cert), token="t0ken-for-the-lakehouse")
    )


def test_unreachable_server_raises_connection_failed_naming_it() -> None:
    url = closed_port_url()

    error = connect_error(lambda: use_jetstream(resource(url, connect_timeout=1)))

    assert type(error) is ConnectionFailedError
    assert error.server == url
    assert f"cannot connect to NATS server {url}" in str(error)
    assert "start the server" in str(error)


@pytest.mark.parametrize(
    "servers",
    ["", " , ", "http://127.0.0.1:4222", "nats://:4222", "nats://127.0.0.1:port", "nats://h:99999"],
)
def test_invalid_url_raises_invalid_argument_before_any_io(servers: str) -> None:
    with pytest.raises(InvalidArgumentError, match="NATS server"):
        resource(servers).connection_settings()


def test_first_server_down_connects_to_the_next_in_the_list(start_server) -> None:
    server = start_server()

    assert use_jetstream(resource(f"{closed_port_url()},{server.url}", reconnect_time_wait=0.1))


def test_wrong_password_on_every_server_of_a_list_raises_authentication_error(
    start_server,
) -> None:
    first, second = start_server(PASSWORD_AUTH), start_server(PASSWORD_AUTH)

    error = connect_error(
        lambda: use_jetstream(
            resource(f"{first.url},{second.url}", user="lakehouse", password="wrong")
        )
    )

    assert isinstance(error, AuthenticationError)
    assert first.url in str(error) and second.url in str(error)


# -- a rejection whose -ERR is lost to a connection reset ------------------------------


class ResettingServer(socketserver.ThreadingTCPServer):
    """A fake NATS server that rejects every CONNECT by resetting the connection.

    A real server's -ERR is sometimes lost the same way under load: nats-py sends PING
    right after CONNECT, the server closes with it unread, and the kernel resets. Like a
    real server, this one answers a verbose CONNECT's verdict before closing, unless
    `tell_verbose` is off.
    """

    daemon_threads = True
    tell_verbose = True

    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            self.wfile.write(b'INFO {"server_id":"FAKE","version":"2.15.1","proto":1,')
            self.wfile.write(b'"max_payload":1048576,"auth_required":true}\r\n')
            connect = self.rfile.readline().replace(b" ", b"")
            if b'"verbose":true' in connect and self.server.tell_verbose:
                self.wfile.write(b"-ERR 'Authorization Violation'\r\n")
                self.wfile.flush()
                return
            linger_zero = struct.pack("ii", 1, 0)  # close() now sends a reset
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger_zero)


@pytest.fixture
def resetting_server() -> Iterator[ResettingServer]:
    server = ResettingServer(("127.0.0.1", 0), ResettingServer.Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def fake_url(server: ResettingServer) -> str:
    return f"nats://127.0.0.1:{server.server_address[1]}"


@pytest.mark.parametrize("allow_reconnect", [True, False])
def test_a_rejection_lost_to_a_reset_is_still_reported_as_authentication_error(
    resetting_server: ResettingServer, allow_reconnect: bool
) -> None:
    jetstream = resource(
        fake_url(resetting_server),
        user="lakehouse",
        password="wr0ng-pa55",
        allow_reconnect=allow_reconnect,
    )

    error = connect_error(lambda: use_jetstream(jetstream))

    assert isinstance(error, AuthenticationError)
    assert fake_url(resetting_server) in str(error)


def test_a_server_that_only_resets_says_it_dropped_the_handshake(
    resetting_server: ResettingServer,
) -> None:
    resetting_server.tell_verbose = False
    jetstream = resource(
        fake_url(resetting_server), user="lakehouse", password="pw", connect_timeout=1
    )

    error = connect_error(lambda: use_jetstream(jetstream))

    assert type(error) is ConnectionFailedError
    assert "dropped the connection during the handshake" in str(error)
