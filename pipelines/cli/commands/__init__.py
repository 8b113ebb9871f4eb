"""Subcommands of the `jsl` CLI, one module each, and what they share."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from pathlib import Path

from pipelines.settings import Settings
from resources.data_dir import dg_project_root
from resources.jetstream import EmbeddedNatsServer, JetStreamResource


def project_dir(args: argparse.Namespace) -> Path:
    """The dg project a subcommand works on: the root of the one `--project DIR` is in, else
    of the one the working directory is in (as `dg` finds it), else the working directory."""
    return dg_project_root(getattr(args, "project", None)).resolve()


def settings_for(args: argparse.Namespace) -> Settings:
    """The settings of a subcommand: the environment's, and with `LAKEHOUSE_DATA_DIR` unset,
    the data directory `.data` in the root of `--project DIR`'s dg project, else the working
    directory's (`project_dir`).

    Raises:
        ValueError: a setting of `pipelines.settings` is invalid.
    """
    return Settings.from_env(start=project_dir(args))


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the options of every subcommand that talks to NATS: `--nats-url`, `--embedded`
    (read by `server_url`) and `--timeout` (seconds for the connect and each request).

    Args:
        parser: the subcommand's parser.
    """
    parser.add_argument(
        "--nats-url", help="NATS server(s), comma-separated (default: $NATS_URL or the local one)"
    )
    parser.add_argument(
        "--embedded",
        action="store_true",
        help="start a nats-server on the demo's store (.data/nats) for this command",
    )
    parser.add_argument(
        "--timeout", type=float, default=5.0, help="seconds for the connect and for each request"
    )


@contextlib.contextmanager
def server_url(args: argparse.Namespace, *, create_store: bool) -> Iterator[str]:
    """The NATS URL a subcommand talks to: `--nats-url`, `$NATS_URL`, or with `--embedded`, an
    embedded nats-server on the demo's store (`$LAKEHOUSE_DATA_DIR/nats`) for the command's
    duration.

    Args:
        args: the parsed arguments (`nats_url`, `embedded`).
        create_store: create the demo's store if it is missing (False: a missing store is an
            error, for commands that only read what the demo left).

    Raises:
        ValueError: both --nats-url and --embedded, or no demo store to read.
    """
    settings = settings_for(args)
    if not args.embedded:
        yield args.nats_url or settings.nats_url
        return
    if args.nats_url:
        raise ValueError("give either --nats-url or --embedded, not both")
    if create_store:
        settings.nats_store_dir.mkdir(parents=True, exist_ok=True)
    elif not settings.nats_store_dir.is_dir():
        raise ValueError(
            f"no demo store at {str(settings.nats_store_dir)!r}; run `make demo` first, or set "
            "LAKEHOUSE_DATA_DIR"
        )
    with EmbeddedNatsServer(store_dir=settings.nats_store_dir) as server:
        yield server.url


def jetstream_resource(args: argparse.Namespace, url: str) -> JetStreamResource:
    """The resource a subcommand connects with: `url` (from `server_url`), `--timeout`, and
    the credentials and TLS files of the environment (`NATS_USER`, `NATS_CREDS`, `NATS_CA`,
    ...; see `resources.jetstream.environment`), except on the embedded server, which has
    neither auth nor TLS.

    Raises:
        InvalidArgumentError: the environment's connection variables contradict each other.
    """
    timeouts = {"connect_timeout": args.timeout, "request_timeout": args.timeout}
    if args.embedded:
        return JetStreamResource(servers=url, **timeouts)
    return JetStreamResource.from_env(servers=url, **timeouts)
