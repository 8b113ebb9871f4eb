"""The demo's sample events: `publish_sample` publishes them, `SamplePublished` says what it did.

The events are FileDeletedEvents from the file trash generator
(pipelines/file_trash/generator.py), a share of them bad on purpose so that silver has rows
to quarantine. The demo (pipelines/cli/demo.py) publishes them and its summary
(pipelines/cli/demo_summary.py) reports what `SamplePublished` recorded.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pipelines.file_trash.generator import GOOD, generate_event_mix, publish_events, summarize

if TYPE_CHECKING:
    from resources.jetstream import JetStreamClient


@dataclass(frozen=True)
class SamplePublished:
    """What `publish_sample` published: events per kind and the stream sequences."""

    kinds: dict[str, int]
    first_seq: int | None
    last_seq: int | None

    @property
    def bad(self) -> int:
        return sum(n for kind, n in self.kinds.items() if kind != GOOD)

    def __str__(self) -> str:
        return (
            f"{self.kinds.get(GOOD, 0)} good, {self.bad} bad on purpose, "
            f"stream seq {self.first_seq}-{self.last_seq}"
        )


def publish_sample(
    js: JetStreamClient,
    count: int,
    bad_share: float = 0.0,
    on_progress: Callable[[int], None] | None = None,
) -> SamplePublished:
    """Publishes `count` fresh FileDeletedEvents (with msg-ids), `bad_share` of them bad.

    Args:
        js: a connected client.
        count: events to publish.
        bad_share: the share of bad events (0 to 1).
        on_progress: called with the number of events acknowledged so far.

    Returns:
        Events per kind and the stream sequences they got.
    """
    events = generate_event_mix(count, bad_share=bad_share, now=dt.datetime.now(dt.timezone.utc))
    published = publish_events(js, events, on_progress=on_progress)
    return SamplePublished(summarize(events), published.first_seq, published.last_seq)
