"""`jsl generate`: publish a mix of good and bad file events to FILE_EVENTS, with msg-ids.

    jsl generate [--count N] [--rate R] [--bad-share F] [--seed S] [--nats-url URL]
                 [--provision] [--embedded] [--timeout SECONDS]

The server is `--nats-url`, else `$NATS_URL`, else nats://127.0.0.1:4222; `--embedded`
starts a nats-server on the demo's store instead (`$LAKEHOUSE_DATA_DIR/nats`). The stream
must exist (`make demo` and `jsl dev` provision it), or pass `--provision` to reconcile the
file trash topology first. A progress bar shows on a terminal; the last line sums up what
was published. Errors are one line on stderr with exit code 1.

With the same `--seed`, a second run publishes the same msg-ids: inside the stream's
duplicate window (2 minutes) the server drops them all and the summary counts duplicates.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys

from tqdm import tqdm

from pipelines.cli.commands import add_server_arguments, jetstream_resource, server_url
from pipelines.file_trash.events import FILE_DELETED_SUBJECT
from pipelines.file_trash.generator import (
    PublishSummary,
    check_publish_args,
    generate_event_mix,
    publish_events,
    require_stream,
    summarize,
)
from pipelines.file_trash.topology import FILE_EVENTS, FILE_TRASH_TOPOLOGY
from resources.jetstream import reconcile
from resources.jetstream.errors import JetStreamError

PROG = "jsl generate"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the `generate` options to `parser`.

    Args:
        parser: the `generate` subparser of `jsl` (or a standalone parser).
    """
    parser.add_argument("--count", type=int, default=1000, help="events to publish (default 1000)")
    parser.add_argument(
        "--rate",
        type=float,
        default=None,
        help="messages per second (default: as fast as the server acknowledges)",
    )
    parser.add_argument(
        "--bad-share",
        type=float,
        default=0.0,
        help="share of bad events, 0 to 1: malformed JSON, missing fields, wrong types, "
        "negative sizes, unknown eventType, duplicate eventIds, deletedAt in the future",
    )
    parser.add_argument(
        "--seed", type=int, default=None, help="seed for reproducible events (and msg-ids)"
    )
    parser.add_argument(
        "--provision",
        action="store_true",
        help="reconcile the file trash topology (stream, consumers, buckets) before publishing",
    )
    add_server_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Runs `jsl generate`.

    Args:
        args: the parsed arguments (see `add_arguments`).

    Returns:
        The exit code: 0 when every event was acknowledged, 1 with a one-line message on
        stderr otherwise (bad arguments, no server, no stream, a failed publish).
    """
    try:
        if args.timeout <= 0:
            raise ValueError(f"--timeout must be positive, got {args.timeout!r}")
        check_publish_args(args.rate, batch_size=1)
        events = generate_event_mix(
            args.count,
            bad_share=args.bad_share,
            now=dt.datetime.now(dt.timezone.utc),
            seed=args.seed,
        )
        with server_url(args, create_store=True) as url:
            resource = jetstream_resource(args, url)
            with resource.client() as js:
                if args.provision:
                    for change in reconcile(js, FILE_TRASH_TOPOLOGY):
                        print(f"{PROG}: {change}")
                require_stream(js, FILE_EVENTS.name)
                with tqdm(
                    total=len(events), unit="msg", desc=FILE_DELETED_SUBJECT, disable=None
                ) as bar:
                    summary = publish_events(
                        js,
                        events,
                        rate=args.rate,
                        on_progress=lambda done: bar.update(done - bar.n),
                    )
    except (JetStreamError, OSError, ValueError) as error:
        message = " ".join(str(error).split())
        print(f"{PROG}: error: {message}", file=sys.stderr)
        return 1
    print(summary_line(summary, summarize(events)))
    return 0


def summary_line(summary: PublishSummary, kinds: dict[str, int]) -> str:
    """One line: published, duplicates, events per kind and the stream sequences stored."""
    where = (
        f"seq {summary.first_seq}-{summary.last_seq}"
        if summary.first_seq is not None
        else "nothing new stored"
    )
    mix = ", ".join(f"{kind} {n}" for kind, n in kinds.items() if n)
    return (
        f"{PROG}: published {summary.published} to {FILE_EVENTS.name} ({FILE_DELETED_SUBJECT}), "
        f"{summary.duplicates} duplicates; {where}; kinds: {mix or 'none'}"
    )
