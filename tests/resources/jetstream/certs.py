"""Throwaway certificates and NATS JWTs for the auth and TLS tests.

`make_pki` writes a CA, a server certificate for 127.0.0.1/localhost and a client
certificate, all signed by that CA. `make_operator_setup` builds the operator, account and
user JWTs of decentralised auth (nats-io/jwt v2 claims, signed with Ed25519 NKeys) and a
`.creds` file, so the tests need neither `openssl` nor `nsc`.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import ipaddress
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

import nkeys
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Pki:
    """Paths of the PEM files written by `make_pki`."""

    ca_cert: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca_cert: Path  # a second CA that signed nothing the server presents


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> Path:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return path


def _write_cert(cert: x509.Certificate, path: Path) -> Path:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path


def _ca(common_name: str) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = _key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def _leaf(
    common_name: str,
    ca_cert: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    *,
    server: bool,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = _key()
    now = datetime.datetime.now(datetime.timezone.utc)
    usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
    )
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
    return builder.sign(ca_key, hashes.SHA256()), key


def make_pki(directory: Path) -> Pki:
    """Writes a throwaway CA, server and client certificate (PEM) into `directory`.

    The server certificate is valid for `localhost` and the IP address 127.0.0.1.
    """
    directory.mkdir(parents=True, exist_ok=True)
    ca_cert, ca_key = _ca("jetstream-lakehouse test CA")
    other_ca_cert, _ = _ca("unrelated test CA")
    server_cert, server_key = _leaf("nats-server", ca_cert, ca_key, server=True)
    client_cert, client_key = _leaf("lakehouse-client", ca_cert, ca_key, server=False)
    return Pki(
        ca_cert=_write_cert(ca_cert, directory / "ca.pem"),
        server_cert=_write_cert(server_cert, directory / "server.pem"),
        server_key=_write_key(server_key, directory / "server-key.pem"),
        client_cert=_write_cert(client_cert, directory / "client.pem"),
        client_key=_write_key(client_key, directory / "client-key.pem"),
        other_ca_cert=_write_cert(other_ca_cert, directory / "other-ca.pem"),
    )


# -- decentralised auth (JWT) ------------------------------------------------------------


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def encode_jwt(claims: dict, issuer: nkeys.KeyPair) -> str:
    """Signs nats-io/jwt v2 claims with the issuer's NKey.

    Fills in `iss`, `iat` and `jti` (the base32 SHA-256 of the claims, as nats-io/jwt does).
    """
    claims = {**claims, "iss": issuer.public_key.decode(), "iat": int(time.time())}
    claims.pop("jti", None)
    digest = hashlib.sha256(json.dumps(claims, sort_keys=True).encode()).digest()
    claims["jti"] = base64.b32encode(digest).decode().rstrip("=")
    header = _b64url(json.dumps({"typ": "JWT", "alg": "ed25519-nkey"}).encode())
    payload = _b64url(json.dumps(claims).encode())
    signature = _b64url(issuer.sign(f"{header}.{payload}".encode()))
    return f"{header}.{payload}.{signature}"


def new_keypair(prefix: int) -> nkeys.KeyPair:
    """A fresh NKey pair of the given kind (nkeys.PREFIX_BYTE_USER, ..._ACCOUNT, ...)."""
    return nkeys.from_seed(nkeys.encode_seed(os.urandom(32), prefix))


@dataclass(frozen=True)
class OperatorSetup:
    """An operator, a JetStream-enabled account, the system account and one user."""

    server_config: str  # nats-server configuration text: operator, resolver, preload
    creds_file: Path
    user_seed: str
    user_jwt: str


NO_LIMIT = -1


def make_operator_setup(directory: Path, *, user_name: str = "lakehouse") -> OperatorSetup:
    """Builds operator/account/user JWTs and a `.creds` file for a MEMORY resolver.

    Returns the server configuration (to pass as `EmbeddedNatsServer.extra_config`) and the
    `.creds` file of a user of an account with unlimited JetStream.
    """
    directory.mkdir(parents=True, exist_ok=True)
    operator = new_keypair(nkeys.PREFIX_BYTE_OPERATOR)
    account = new_keypair(nkeys.PREFIX_BYTE_ACCOUNT)
    system = new_keypair(nkeys.PREFIX_BYTE_ACCOUNT)
    user = new_keypair(nkeys.PREFIX_BYTE_USER)
    system_pub = system.public_key.decode()
    account_pub = account.public_key.decode()

    operator_jwt = encode_jwt(
        {
            "sub": operator.public_key.decode(),
            "name": "test-operator",
            "nats": {"type": "operator", "version": 2, "system_account": system_pub},
        },
        operator,
    )
    limits = {"subs": NO_LIMIT, "data": NO_LIMIT, "payload": NO_LIMIT, "imports": NO_LIMIT}
    limits |= {"exports": NO_LIMIT, "wildcards": True, "conn": NO_LIMIT, "leaf": NO_LIMIT}
    jetstream = {"mem_storage": NO_LIMIT, "disk_storage": NO_LIMIT, "streams": NO_LIMIT}
    jetstream |= {"consumer": NO_LIMIT}
    account_jwt = encode_jwt(
        {
            "sub": account_pub,
            "name": "lakehouse-account",
            "nats": {"type": "account", "version": 2, "limits": limits | jetstream},
        },
        operator,
    )
    system_jwt = encode_jwt(
        {
            "sub": system_pub,
            "name": "SYS",
            "nats": {"type": "account", "version": 2, "limits": limits},
        },
        operator,
    )
    user_jwt = encode_jwt(
        {
            "sub": user.public_key.decode(),
            "name": user_name,
            "nats": {
                "type": "user",
                "version": 2,
                "pub": {},
                "sub": {},
                "subs": NO_LIMIT,
                "data": NO_LIMIT,
                "payload": NO_LIMIT,
            },
        },
        account,
    )
    user_seed = user.seed.decode()
    creds_file = directory / f"{user_name}.creds"
    creds_file.write_text(
        "-----BEGIN NATS USER JWT-----\n"
        f"{user_jwt}\n"
        "------END NATS USER JWT------\n"
        "\n"
        "************************* IMPORTANT *************************\n"
        "NKEY Seed printed below can be used to sign and prove identity.\n"
        "NKEYs are sensitive and should be treated as secrets.\n"
        "\n"
        "-----BEGIN USER NKEY SEED-----\n"
        f"{user_seed}\n"
        "------END USER NKEY SEED------\n"
        "\n"
        "*************************************************************\n"
    )
    server_config = "\n".join(
        [
            f"operator: {operator_jwt}",
            f"system_account: {system_pub}",
            "resolver: MEMORY",
            "resolver_preload: {",
            f"  {account_pub}: {account_jwt}",
            f"  {system_pub}: {system_jwt}",
            "}",
        ]
    )
    return OperatorSetup(
        server_config=server_config,
        creds_file=creds_file,
        user_seed=user_seed,
        user_jwt=user_jwt,
    )
