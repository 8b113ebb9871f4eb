"""Credential and certificate files, checked before any network I/O, and the client TLS context.

`ConnectionSettings.check_credential_files` and `ConnectionSettings.tls_context` call these,
so a missing or malformed NKey seed, `.creds`, CA, certificate or key file is an
`InvalidArgumentError` naming the option instead of a failure in the middle of the handshake.
"""

from __future__ import annotations

import ssl
from pathlib import Path

import nkeys

from resources.jetstream.errors import InvalidArgumentError


def check_credential_files(
    *, nkey_seed: str | None, nkey_seed_file: str | None, creds_file: str | None
) -> None:
    """Reads the NKey seed and `.creds` file once (see `ConnectionSettings`).

    Args:
        nkey_seed: a user NKey seed, or None.
        nkey_seed_file: the path of a file holding one, or None.
        creds_file: the path of a NATS credentials file (JWT and seed), or None.

    Raises:
        InvalidArgumentError: a file is missing or unreadable, or holds no user seed/JWT.
    """
    if nkey_seed:
        _check_user_seed(nkey_seed, "nkey_seed")
    if nkey_seed_file:
        text = _read_text(nkey_seed_file, "nkey_seed_file")
        _check_user_seed(text, f"nkey_seed_file {nkey_seed_file!r}")
    if creds_file:
        text = _read_text(creds_file, "creds_file")
        jwt = _line_after(text, "BEGIN NATS USER JWT")
        seed = _line_after(text, "BEGIN USER NKEY SEED")
        if jwt.count(".") != 2 or not seed:
            raise InvalidArgumentError(
                f"creds_file {creds_file!r} is not a NATS credentials file: it needs a "
                "'-----BEGIN NATS USER JWT-----' block and a '-----BEGIN USER NKEY SEED-----' "
                "block; write it with `nsc generate creds` or your account server"
            )
        _check_user_seed(seed, f"the seed in creds_file {creds_file!r}")


def build_tls_context(
    *, ca_file: str | None, cert_file: str | None, key_file: str | None
) -> ssl.SSLContext:
    """The client TLS context: the CA to trust and, if given, the client certificate.

    Args:
        ca_file: the `tls_ca_file` option (None trusts the system's CAs).
        cert_file: the `tls_cert_file` option.
        key_file: the `tls_key_file` option.

    Raises:
        InvalidArgumentError: a CA, certificate or key file is missing or unusable.
    """
    try:
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=ca_file)
    except OSError as error:  # ssl.SSLError is an OSError
        raise InvalidArgumentError(
            f"cannot use tls_ca_file {ca_file!r} ({error}); point it at a "
            "readable PEM file with the CA certificate that signed the server's certificate"
        ) from error
    if cert_file and key_file:
        try:
            context.load_cert_chain(cert_file, key_file)
        except OSError as error:
            raise InvalidArgumentError(
                f"cannot load the client certificate tls_cert_file {cert_file!r} "
                f"with tls_key_file {key_file!r} ({error}); both must be "
                "readable PEM files and the key must belong to the certificate"
            ) from error
    return context


def _read_text(path: str, option: str) -> str:
    try:
        return Path(path).read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise InvalidArgumentError(
            f"cannot read {option} {path!r} ({error}); fix the path or the file's permissions"
        ) from error


def _line_after(text: str, marker: str) -> str:
    lines = text.splitlines()
    for index, line in enumerate(lines[:-1]):
        if marker in line:
            return lines[index + 1].strip()
    return ""


def _check_user_seed(seed: str, what: str) -> None:
    try:
        prefix, _ = nkeys.decode_seed(bytearray(seed.strip().encode()))
    except (nkeys.NkeysError, ValueError, IndexError) as error:
        raise InvalidArgumentError(
            f"{what} is not an NKey seed; expected 'SU' and 56 more base32 characters, as "
            "written by `nk -gen user` or `nsc`"
        ) from error
    if prefix != nkeys.PREFIX_BYTE_USER:
        raise InvalidArgumentError(
            f"{what} is an NKey seed, but not a user's ('SU...'); clients authenticate with "
            "a user NKey, made with `nk -gen user`"
        )
