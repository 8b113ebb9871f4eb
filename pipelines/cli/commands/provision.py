"""`jsl provision`: reconcile the pipeline's topology on a NATS server, showing the plan first.

    jsl provision [--dry-run] [--yes] [--project DIR] [--nats-url URL] [--embedded]
                  [--timeout SECONDS]

The topology is the file trash pipeline's (the FILE_EVENTS stream, its three durable
consumers, the checkpoint and watermark KV buckets and the artifacts Object Store bucket:
`pipelines/file_trash/topology.py`) and that of every stream declared as a `JetStreamStream`
component under `pipelines/defs/` (`pipelines/cli/provisioning.py`); with `--project DIR`, only
the streams declared in that dg project's defs folder instead. The server is `--nats-url`,
else `$NATS_URL`, else nats://127.0.0.1:4222; `--embedded` starts a nats-server on the demo's
store instead.

It prints one line per object (created, updated with each field's old and new value, or
unchanged), read from the server before anything is written. `--dry-run` stops there.
Otherwise the changes are applied on the embedded server, and on any other server only with
`--yes`: without it, the command prints the plan, changes nothing and exits 1. Reconcile only
changes the fields the topology declares, never deletes, and never lowers a stream's
replicas; a declared field the server cannot change fails before any write.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pipelines.cli.commands import (
    add_server_arguments,
    jetstream_resource,
    project_dir,
    server_url,
)
from pipelines.cli.provisioning import declared_topology, project_topology
from resources.jetstream import plan, reconcile
from resources.jetstream.connection.settings import redact_url
from resources.jetstream.errors import JetStreamError
from resources.jetstream.topology.plan import Action

PROG = "jsl provision"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the `provision` options to `parser`.

    Args:
        parser: the `provision` subparser of `jsl` (or a standalone parser).
    """
    parser.add_argument(
        "--dry-run", action="store_true", help="print what would change; change nothing"
    )
    parser.add_argument(
        "--yes",
        action="store_true",
        help="apply the changes on a server that is not the embedded one",
    )
    parser.add_argument(
        "--project",
        type=Path,
        metavar="DIR",
        help="a dg project of your own: provision the streams its JetStreamStream "
        "components declare (default: this project's topology)",
    )
    add_server_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Runs `jsl provision`.

    Args:
        args: the parsed arguments (see `add_arguments`).

    Returns:
        The exit code: 0 when the server matches the topology (after applying, or with
        nothing to change, or after a dry run); 1 with a message on stderr when changes are
        planned on a non-embedded server without `--yes`, or on any error (no server, wrong
        credentials, a refused change).
    """
    try:
        if args.timeout <= 0:
            raise ValueError(f"--timeout must be positive, got {args.timeout!r}")
        with server_url(args, create_store=True) as url:
            resource = jetstream_resource(args, url)
            with resource.client() as js:
                project = getattr(args, "project", None)
                # --project: the root of the dg project DIR is in (DIR may be a subfolder).
                topology = project_topology(project_dir(args)) if project else declared_topology()
                planned = plan(js, topology)
                pending = [c for c in planned if c.action is not Action.UNCHANGED]
                print(f"{PROG}: plan for {redact_url(url)} ({len(pending)} to change):")
                for change in planned:
                    print(f"{PROG}:   {change}")
                if args.dry_run or not pending:
                    print(f"{PROG}: nothing changed" + (" (dry run)" if pending else ""))
                    return 0
                if not (args.embedded or args.yes):
                    print(
                        f"{PROG}: error: {len(pending)} object(s) to create or update on "
                        f"{redact_url(url)}; nothing was changed. Run again with --yes to "
                        "apply the plan above, or --dry-run to only print it",
                        file=sys.stderr,
                    )
                    return 1
                applied = reconcile(js, topology)
                done = [c for c in applied if c.action is not Action.UNCHANGED]
                print(f"{PROG}: applied {len(done)} change(s)")
    except (JetStreamError, OSError, ValueError) as error:
        message = " ".join(str(error).split())
        print(f"{PROG}: error: {message}", file=sys.stderr)
        return 1
    return 0
