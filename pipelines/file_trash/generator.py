"""A deterministic mix of good and bad file events, and publishing it with msg-ids.

`generate_event_mix` builds the events for tests, the demo and load: good FileDeletedEvents
plus an exact number of bad ones, each breaking exactly one quality rule (so the quarantine's
counts are known in advance). `publish_events` publishes them in order, in batches, at an
optional rate, each with its `Nats-Msg-Id`.

Bad kinds and the one rule each breaks (nothing else, so counts are exact):

- `malformed_json` -> parseable_json: a good payload cut in half.
- `missing_field` -> required_fields_present: fileId, fileName or filePath left out.
- `wrong_type` -> field_types_valid: fileSize as a string ("6MB").
- `negative_size` -> file_size_in_range: fileSize below zero.
- `unknown_event_type` -> known_event_type: eventType "FileRestoredEvent", otherwise valid.
- `duplicate_event_id` -> event_id_unique: an earlier good payload, byte for byte, under
  another msg-id (a producer retry after the stream's duplicate window).
- `future_deleted_at` -> deleted_at_not_in_future: deletedAt and timestamp = now + 2 days.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import random
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from pipelines.file_trash.events import (
    FILE_DELETED_SUBJECT,
    isoformat_z,
    random_file_deleted_event,
)
from resources.jetstream import JetStreamClient, StreamState
from resources.jetstream.core.messages import MSG_ID_HEADER
from resources.jetstream.errors import StreamNotFoundError

GOOD = "good"
BAD_KINDS = (
    "malformed_json",
    "missing_field",
    "wrong_type",
    "negative_size",
    "unknown_event_type",
    "duplicate_event_id",
    "future_deleted_at",
)
UNKNOWN_EVENT_TYPE = "FileRestoredEvent"
FUTURE_OFFSET = dt.timedelta(days=2)
# Fields with no rule but `required_fields_present`: leaving one out breaks nothing else.
OPTIONAL_LOOKING_FIELDS = ("fileId", "fileName", "filePath")


@dataclass(frozen=True)
class GeneratedEvent:
    """One message to publish: where, what, its msg-id, and `good` or the bad kind it is."""

    subject: str
    payload: bytes
    msg_id: str
    kind: str

    @property
    def headers(self) -> dict[str, str]:
        return {MSG_ID_HEADER: self.msg_id}


@dataclass(frozen=True)
class PublishSummary:
    """What `publish_events` did.

    Attributes:
        published: messages acknowledged by the stream (duplicates included).
        duplicates: acknowledgements flagged duplicate (a msg-id seen inside the window).
        first_seq: the first stream sequence stored by this call (None: nothing new).
        last_seq: the last one.
    """

    published: int
    duplicates: int
    first_seq: int | None
    last_seq: int | None

    @property
    def stored(self) -> int:
        """Messages the stream stored (not dropped as duplicates)."""
        return self.published - self.duplicates


def bad_event_count(count: int, bad_share: float) -> int:
    """How many of `count` events are bad: `round(count * bad_share)`."""
    return round(count * bad_share)


def generate_event_mix(
    count: int,
    *,
    bad_share: float = 0.0,
    now: dt.datetime,
    seed: int | None = None,
    users: int = 50,
    subject: str = FILE_DELETED_SUBJECT,
) -> list[GeneratedEvent]:
    """Good FileDeletedEvents and exactly `round(count * bad_share)` bad ones, mixed.

    The bad events take the kinds of `BAD_KINDS` round-robin, in that order, and sit at
    seeded-random positions; a `duplicate_event_id` always comes after the good event it
    copies. A good event's msg-id is its eventId; every bad one has a msg-id of its own.

    Args:
        count: how many events in all.
        bad_share: the share of bad events, from 0 to 1.
        now: the clock: good events are deleted within the hour before it.
        seed: seeds positions and contents; None for fresh randomness.
        users: how many distinct users delete files.
        subject: where every event is published (tests use a subject of their own stream).

    Returns:
        The events, in publishing order.

    Raises:
        ValueError: a bad argument, or no good event for a `duplicate_event_id` to copy.
    """
    _check_mix_args(count, bad_share, now, users)
    rng = random.Random(seed)
    bad = bad_event_count(count, bad_share)
    kinds = [BAD_KINDS[i % len(BAD_KINDS)] for i in range(bad)] + [GOOD] * (count - bad)
    rng.shuffle(kinds)
    _put_a_good_event_before_duplicates(kinds)
    events: list[GeneratedEvent] = []
    good_payloads: list[tuple[str, bytes]] = []
    for position, kind in enumerate(kinds):
        base = random_file_deleted_event(rng, now=now, users=users)
        if kind == GOOD:
            payload = base.to_json()
            good_payloads.append((base.eventId, payload))
            events.append(GeneratedEvent(subject, payload, base.eventId, GOOD))
        elif kind == "duplicate_event_id":
            event_id, payload = rng.choice(good_payloads)
            msg_id = f"{kind}-{event_id}-{position}"
            events.append(GeneratedEvent(subject, payload, msg_id, kind))
        else:
            payload = _break(kind, json.loads(base.to_json()), rng, now)
            msg_id = f"{kind}-{base.eventId}"
            events.append(GeneratedEvent(subject, payload, msg_id, kind))
    return events


def _check_mix_args(count: int, bad_share: float, now: dt.datetime, users: int) -> None:
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ValueError(f"count must be an integer >= 0, got {count!r}")
    if not isinstance(bad_share, int | float) or not 0 <= bad_share <= 1:
        raise ValueError(f"bad_share must be between 0 and 1 (e.g. 0.05), got {bad_share!r}")
    if not isinstance(now, dt.datetime) or now.tzinfo is None:
        raise ValueError(f"now must be a timezone-aware datetime, got {now!r}")
    if isinstance(users, bool) or not isinstance(users, int) or users < 1:
        raise ValueError(f"users must be an integer >= 1, got {users!r}")


def _put_a_good_event_before_duplicates(kinds: list[str]) -> None:
    """Swaps the first good event with the first duplicate if that duplicate comes first."""
    if "duplicate_event_id" not in kinds:
        return
    if GOOD not in kinds:
        raise ValueError(
            f"{kinds.count('duplicate_event_id')} duplicate_event_id event(s) need a good event "
            "to copy, but every event is bad; lower bad_share (or raise count) so that at "
            "least one good event remains"
        )
    first_good, first_duplicate = kinds.index(GOOD), kinds.index("duplicate_event_id")
    if first_duplicate < first_good:
        kinds[first_good], kinds[first_duplicate] = kinds[first_duplicate], kinds[first_good]


def _break(kind: str, event: dict, rng: random.Random, now: dt.datetime) -> bytes:
    """A good event (as a dict) made to break the one rule of `kind`."""
    data = event["data"]
    if kind == "malformed_json":
        compact = json.dumps(event, separators=(",", ":")).encode()
        return compact[: len(compact) // 2]
    if kind == "missing_field":
        del data[rng.choice(OPTIONAL_LOOKING_FIELDS)]
    elif kind == "wrong_type":
        data["fileSize"] = f"{max(data['fileSize'] // 1_000_000, 1)}MB"
    elif kind == "negative_size":
        data["fileSize"] = -rng.randrange(1, 10_000_000)
    elif kind == "unknown_event_type":
        event["eventType"] = UNKNOWN_EVENT_TYPE
    elif kind == "future_deleted_at":
        event["timestamp"] = data["deletedAt"] = isoformat_z(now + FUTURE_OFFSET)
    else:
        raise ValueError(f"unknown bad kind {kind!r}; expected one of {BAD_KINDS}")
    return json.dumps(event, separators=(",", ":")).encode()


def summarize(events: Iterable[GeneratedEvent]) -> dict[str, int]:
    """Events per kind: `good`, then every bad kind (zeros included), in `BAD_KINDS` order."""
    counts = dict.fromkeys((GOOD, *BAD_KINDS), 0)
    for event in events:
        counts[event.kind] = counts.get(event.kind, 0) + 1
    return counts


def require_stream(client: JetStreamClient, stream: str) -> StreamState:
    """The stream to publish into; raises a clear error if it does not exist.

    Args:
        client: a connected client.
        stream: the stream's name, e.g. 'FILE_EVENTS'.

    Returns:
        The stream's state.

    Raises:
        StreamNotFoundError: the stream does not exist (the message says how to create it).
    """
    try:
        return client.streams.info(stream)
    except StreamNotFoundError:
        raise StreamNotFoundError(
            f"stream {stream!r} does not exist on the NATS server, so there is nowhere to "
            "publish the events; provision it first: `make demo` or `jsl dev` do, or run "
            "`jsl generate --provision`, which reconciles "
            "pipelines.file_trash.topology.FILE_TRASH_TOPOLOGY before publishing",
            stream=stream,
        ) from None


def check_publish_args(rate: float | None, batch_size: int) -> None:
    """Checks `publish_events`' pacing arguments (before any I/O).

    Raises:
        ValueError: `rate` is not a positive number or `batch_size` not a positive integer.
    """
    if rate is not None and (
        isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 < rate < math.inf
    ):
        raise ValueError(
            f"rate must be a positive number of messages per second (or None for as fast as "
            f"possible), got {rate!r}"
        )
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")


def publish_events(
    client: JetStreamClient,
    events: Sequence[GeneratedEvent],
    *,
    rate: float | None = None,
    batch_size: int = 500,
    on_progress: Callable[[int], None] | None = None,
    monotonic: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> PublishSummary:
    """Publishes the events in order, each with its `Nats-Msg-Id`, in batches.

    With a `rate`, batches shrink to about a tenth of a second's worth and each waits
    (sleeping, not spinning) until its messages are due, so the run averages `rate`.

    Args:
        client: a connected client.
        events: what to publish, in order.
        rate: messages per second; None publishes as fast as the acks come back.
        batch_size: the most messages per `publish_batch` (acks awaited per batch).
        on_progress: called after each batch with the number of messages acknowledged so far.
        monotonic: the clock used for pacing (a parameter for tests).
        sleep: how to wait for pacing (a parameter for tests).

    Returns:
        Counts of acknowledged and duplicate messages, and the sequences stored.

    Raises:
        ValueError: a bad `rate` or `batch_size` (before any I/O).
        JetStreamError: a publish failed; the messages before it are stored. Publishing the
            same events again completes the run without duplicates inside the stream's
            duplicate window.
    """
    check_publish_args(rate, batch_size)
    events = list(events)
    step = batch_size if rate is None else min(batch_size, max(1, round(rate / 10)))
    started = monotonic()
    published = duplicates = 0
    first_seq = last_seq = None
    for start in range(0, len(events), step):
        chunk = events[start : start + step]
        if rate is not None:
            wait = started + start / rate - monotonic()
            if wait > 0:
                sleep(wait)
        acks = client.publish_batch([(e.subject, e.payload, e.headers) for e in chunk])
        for ack in acks:
            if ack.duplicate:
                duplicates += 1
                continue
            first_seq = ack.seq if first_seq is None else min(first_seq, ack.seq)
            last_seq = ack.seq if last_seq is None else max(last_seq, ack.seq)
        published += len(acks)
        if on_progress is not None:
            on_progress(published)
    return PublishSummary(published, duplicates, first_seq, last_seq)
