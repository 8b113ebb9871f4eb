"""`jsl artifacts`: list and fetch the run artifacts kept in the JetStream Object Store.

    jsl artifacts list [--run RUN_ID | --prefix P] [--nats-url URL] [--bucket B]
    jsl artifacts get NAME [-o FILE] [--nats-url URL] [--bucket B]

The server is `--nats-url`, else `$NATS_URL`, else nats://127.0.0.1:4222; `--embedded`
starts a nats-server on the demo's store instead (`$LAKEHOUSE_DATA_DIR/nats`, what
`make demo` leaves behind; not while `make dev` runs on it). Errors are one line on stderr
with exit code 1.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from pathlib import Path

from pipelines.cli.commands import add_server_arguments, jetstream_resource, server_url
from pipelines.lakehouse.artifacts import (
    ARTIFACTS_BUCKET,
    ArtifactStore,
    StoredArtifact,
    run_prefix,
)
from resources.jetstream.errors import JetStreamError

PROG = "jsl artifacts"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the `list` and `get` subcommands and their options to `parser`.

    Args:
        parser: the `artifacts` subparser of `jsl` (or a standalone parser).
    """
    common = argparse.ArgumentParser(add_help=False)
    add_server_arguments(common)
    common.add_argument("--bucket", default=ARTIFACTS_BUCKET, help="the Object Store bucket")
    actions = parser.add_subparsers(dest="artifacts_command", required=True, metavar="{list,get}")
    lister = actions.add_parser("list", parents=[common], help="list stored artifacts")
    scope = lister.add_mutually_exclusive_group()
    scope.add_argument("--run", dest="run_id", help="only the artifacts of this Dagster run")
    scope.add_argument("--prefix", default="", help="only names starting with this")
    getter = actions.add_parser("get", parents=[common], help="fetch one artifact")
    getter.add_argument("name", help="the object name, e.g. runs/<run_id>/<asset>/manifest.json")
    getter.add_argument(
        "-o", "--output", help="write to this file (default: the bytes go to stdout)"
    )


def run(args: argparse.Namespace) -> int:
    """Runs `jsl artifacts list` or `jsl artifacts get`.

    Args:
        args: the parsed arguments (see `add_arguments`).

    Returns:
        The exit code: 0 on success, 1 with a one-line message on stderr otherwise.
    """
    try:
        if args.timeout <= 0:
            raise ValueError(f"--timeout must be positive, got {args.timeout!r}")
        listing = args.artifacts_command == "list"
        if listing:
            prefix = run_prefix(args.run_id) if args.run_id else args.prefix
        elif args.output not in (None, "-"):
            _check_output(Path(args.output))
        with server_url(args, create_store=False) as url:
            resource = jetstream_resource(args, url)
            with resource.client() as js:
                store = ArtifactStore(js, args.bucket)
                return _list(store, prefix) if listing else _get(store, args.name, args.output)
    except (JetStreamError, OSError, ValueError) as error:
        message = " ".join(str(error).split())
        print(f"{PROG}: error: {message}", file=sys.stderr)
        return 1


def _list(store: ArtifactStore, prefix: str) -> int:
    artifacts = store.list(prefix)
    if not artifacts:
        where = f" under {prefix!r}" if prefix else ""
        print(f"{PROG}: no artifacts{where} in object store {store.bucket!r}", file=sys.stderr)
        return 0
    print(_table(artifacts))
    return 0


def _table(artifacts: list[StoredArtifact]) -> str:
    rows = [("NAME", "SIZE", "CONTENT TYPE", "SHA256")]
    rows += [(a.name, str(a.size), a.content_type, a.sha256[:12]) for a in artifacts]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return "\n".join(
        f"{name:<{widths[0]}}  {size:>{widths[1]}}  {kind:<{widths[2]}}  {sha}"
        for name, size, kind, sha in rows
    )


def _get(store: ArtifactStore, name: str, output: str | None) -> int:
    data = store.get(name)
    if output in (None, "-"):
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return 0
    _write_atomically(Path(output), data)
    print(f"{name}: {len(data)} bytes -> {output}")
    return 0


def _check_output(path: Path) -> None:
    if path.is_dir() or not path.parent.is_dir():
        raise ValueError(
            f"cannot write to {str(path)!r}: give a file path in an existing directory"
        )


def _write_atomically(path: Path, data: bytes) -> None:
    """Writes `data` to a temporary file beside `path`, then renames it over `path`."""
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
