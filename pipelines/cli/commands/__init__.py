"""Subcommands of the `jsl` CLI, one module each, and what they share."""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import re
import shutil
import subprocess
import sys
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


def written(path: str) -> bool:
    """Whether a Delta table is at `path`, read from its log without Spark (on the local disk
    or through the S3 API); a table root this cannot read (abfss://, ...) counts as written,
    for Spark to tell."""
    from pipelines.lakehouse.delta_log import TableLogError, read_table_version

    try:
        return read_table_version(path) is not None
    except TableLogError:
        return True


def check_java() -> str:
    """Returns `java -version`'s first line; exits with a clear message if Java 17+ is missing."""
    java = shutil.which("java")
    if java is None:
        sys.exit("Java not found: Spark needs Java 17+ (e.g. apt-get install openjdk-17-jre)")
    output = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    match = re.search(r'version "(\d+)', output)
    if match is None or int(match.group(1)) < 17:
        sys.exit(f"Spark 4 needs Java 17 or later; found: {output.splitlines()[0]!r}")
    return output.splitlines()[0]


@contextlib.contextmanager
def spark_session(prog: str, settings: Settings, **fields) -> Iterator:
    """A subcommand's SparkSession (`SparkResource` with `fields`), with Spark's output in a
    log file, as the demo's: the terminal gets one line naming the file.

    Spark's JVM, and the Python workers it starts, write to the stdout and stderr they inherit
    when the session starts; for that moment both point to `<data dir>/logs/<command>-<time>.log`.
    A failure inside Spark in the block (or while starting it) raises `SparkStageError`: one
    line, and the file that holds the whole error (`resources.spark_errors`).

    Args:
        prog: the command (`jsl tables`), in the file's name and the messages.
        settings: the command's settings (the data directory).
        fields: `SparkResource` fields (e.g. `table_root`, `ui_enabled`).
    """
    from resources.spark import SparkResource
    from resources.spark_errors import one_line_spark_errors

    check_java()
    logs = settings.data_dir / "logs"
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    log_file = logs / f"{prog.replace(' ', '_')}-{stamp}.log"
    print(f"{prog}: Spark's log: {log_file}", file=sys.stderr, flush=True)
    with one_line_spark_errors(prog, logs):
        with output_to(log_file):
            session = SparkResource(data_dir=str(settings.data_dir), **fields).get_session()
        yield session


@contextlib.contextmanager
def output_to(log_file: Path) -> Iterator[None]:
    """File descriptors 1 and 2 (stdout, stderr) appended to `log_file` inside the block: a
    process started in it writes there for its whole life."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = {fd: os.dup(fd) for fd in (1, 2)}
    try:
        with log_file.open("ab") as log:
            for fd in saved:
                os.dup2(log.fileno(), fd)
            yield
    finally:
        sys.stdout.flush()  # what Python buffered in the block belongs to the log
        sys.stderr.flush()
        for fd, copy in saved.items():
            os.dup2(copy, fd)
            os.close(copy)
