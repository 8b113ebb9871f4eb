"""The `generate_file_events` job: publish a mix of good and bad file events from the UI.

The same generator as `jsl generate` (`pipelines.file_trash.generator`), launched from the
Dagster launchpad with a count, a rate, a share of bad events and a seed. The op logs its
progress about every 10% and records what it published as output metadata.
"""

import datetime as dt
import math

from dagster import (
    Config,
    DagsterLogManager,
    JobDefinition,
    MetadataValue,
    OpExecutionContext,
    job,
    op,
)
from pydantic import Field

from pipelines.file_trash.events import FILE_DELETED_SUBJECT
from pipelines.file_trash.generator import (
    check_publish_args,
    generate_event_mix,
    publish_events,
    require_stream,
    summarize,
)
from pipelines.file_trash.topology import FILE_EVENTS
from resources.jetstream import JetStreamResource

MAX_BATCH = 500


class GenerateConfig(Config):
    """How many events to publish, how fast, and how many of them bad."""

    count: int = Field(default=1000, description="Events to publish.")
    rate: float | None = Field(
        default=None, description="Messages per second; unset publishes as fast as acked."
    )
    bad_share: float = Field(
        default=0.0,
        description="Share of bad events (0 to 1): malformed JSON, missing fields, wrong "
        "types, negative sizes, unknown eventType, duplicate eventIds, future deletedAt.",
    )
    seed: int | None = Field(
        default=None, description="Seed for reproducible events and msg-ids; unset: random."
    )


class ProgressLog:
    """An `on_progress` callback that logs each time another ~10% is acknowledged."""

    def __init__(self, log: DagsterLogManager, total: int, what: str) -> None:
        self._log, self._total, self._what = log, total, what
        self._next_tenth = 1

    def __call__(self, done: int) -> None:
        if not self._total or done * 10 < self._next_tenth * self._total:
            return
        self._log.info(f"{self._what}: {done}/{self._total} ({done * 100 // self._total}%)")
        self._next_tenth = done * 10 // self._total + 1


def build_generate_job(
    *,
    stream: str = FILE_EVENTS.name,
    subject: str = FILE_DELETED_SUBJECT,
    name: str = "generate_file_events",
) -> JobDefinition:
    """A job whose op `publish_file_events` publishes a generated event mix to `subject`.

    Args:
        stream: the stream that must capture `subject` (checked before publishing).
        subject: where the events go.
        name: the job's name.

    Returns:
        The job; it needs a `jetstream` resource.
    """

    @op(name="publish_file_events", tags={"kind": "nats"})
    def publish_file_events(
        context: OpExecutionContext, config: GenerateConfig, jetstream: JetStreamResource
    ) -> None:
        """Publishes generated FileDeletedEvents (some bad, if asked) with msg-ids."""
        check_publish_args(config.rate, batch_size=1)
        events = generate_event_mix(
            config.count,
            bad_share=config.bad_share,
            now=dt.datetime.now(dt.timezone.utc),
            seed=config.seed,
            subject=subject,
        )
        kinds = summarize(events)
        client = jetstream.get_client()
        require_stream(client, stream)
        mix = ", ".join(f"{kind} {n}" for kind, n in kinds.items() if n)
        context.log.info(f"publishing {len(events)} events to {stream} ({subject}): {mix}")
        summary = publish_events(
            client,
            events,
            rate=config.rate,
            batch_size=max(1, min(MAX_BATCH, math.ceil(len(events) / 10))),
            on_progress=ProgressLog(context.log, len(events), f"published to {stream}"),
        )
        context.log.info(
            f"published {summary.published} ({summary.duplicates} duplicates), "
            f"seq {summary.first_seq}-{summary.last_seq}"
        )
        metadata = {
            "stream": stream,
            "subject": subject,
            "published": summary.published,
            "duplicates": summary.duplicates,
            "stored": summary.stored,
            "kinds": MetadataValue.json(kinds),
            "seed": "random" if config.seed is None else str(config.seed),
        }
        if summary.first_seq is not None:
            metadata["first_seq"] = summary.first_seq
            metadata["last_seq"] = summary.last_seq
        context.add_output_metadata(metadata)

    @job(name=name, description=f"Publish generated file events (good and bad) to {stream}.")
    def generate_job() -> None:
        publish_file_events()

    return generate_job


generate_file_events_job = build_generate_job()
