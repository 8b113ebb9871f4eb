"""The columnar range reader, on a real server: both delivery paths, filters, lost deliveries."""

import asyncio
import datetime as dt

import pytest

from pipelines.ingest import frames
from pipelines.ingest.range_reader import BUFFERED_CHUNKS, IN_FLIGHT, RangeReader
from pipelines.ingest.reader import RangeRead, read_slice
from resources.jetstream import JetStreamClient, StreamSpec

LANDED = dt.datetime(2026, 11, 22, 8, 0, tzinfo=dt.timezone.utc)


@pytest.fixture
def stream(js: JetStreamClient, unique_name: str) -> str:
    """A stream of 1,000 messages on two subjects, with every kind of header set."""
    js.streams.add(StreamSpec(name=unique_name, subjects=(f"{unique_name}.>",)))
    messages = []
    for n in range(1, 1001):
        subject = f"{unique_name}.{'deleted' if n % 3 else 'trashed'}"
        headers = {
            0: None,
            1: {"Nats-Msg-Id": f"m-{n}"},
            2: {"Nats-Msg-Id": f"m-{n}", "X-Trace": " café ", "Empty": ""},
        }[n % 3]
        messages.append((subject, b"\xff\x00 raw %d" % n, headers))
    js.publish_batch(messages)
    return unique_name


def read(js: JetStreamClient, stream: str, *, start=1, end=1000, subjects=(), fast=True):
    """The rows of [start, end], read by one RangeReader in chunks of at most 300."""
    reader = RangeReader(js, stream, subjects, start, end, pull_batch=100)

    async def chunks():
        out = []
        try:
            while (chunk := await reader.next_chunk(300)) is not None:
                out.append(chunk.to_arrow(stream, "run-1", LANDED))
        finally:
            await reader.close()
        return out

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(frames.RAW_FRAMES_ENV, "on" if fast else "off")
        batches = js.run(chunks(), what="read a range")
    assert reader.fast_path is fast
    return [row for batch in batches for row in batch.to_pylist()]


def test_raw_frames_and_nats_py_messages_give_the_same_bronze_rows(js, stream):
    fast, slow = read(js, stream, fast=True), read(js, stream, fast=False)

    assert fast == slow
    assert [r["seq"] for r in fast] == list(range(1, 1001))
    first, second, third = fast[2], fast[0], fast[1]  # seq 3, 1, 2: header kinds 0, 1, 2
    assert first["headers"] is None and first["msg_id"] is None
    assert second["headers"] == [("Nats-Msg-Id", "m-1")] and second["msg_id"] == "m-1"
    assert third["headers"] == [("Nats-Msg-Id", "m-2"), ("X-Trace", "café"), ("Empty", "")]
    assert second["payload"] == b"\xff\x00 raw 1"
    assert (second["subject"], first["subject"]) == (f"{stream}.deleted", f"{stream}.trashed")


def test_a_filtered_range_reads_only_its_subjects_in_order(js, stream):
    rows = read(js, stream, start=100, end=700, subjects=(f"{stream}.trashed",))

    assert [r["seq"] for r in rows] == [n for n in range(100, 701) if n % 3 == 0]


def test_a_lost_delivery_restarts_the_consumer_and_misses_nothing(js, stream, monkeypatch):
    accept = RangeReader._accept
    dropped = []

    def drop_one(self, tokens, *rest):
        if int(tokens[5]) == 250 and not dropped:  # as if the client had dropped seq 250
            dropped.append(250)
            self._requested -= 1
            return
        accept(self, tokens, *rest)

    monkeypatch.setattr(RangeReader, "_accept", drop_one)

    rows = read(js, stream)

    assert dropped == [250]
    assert [r["seq"] for r in rows] == list(range(1, 1001))


def test_read_slice_yields_record_batches_of_the_configured_size(js, stream, jetstream_resource):
    spec = RangeRead(
        settings=jetstream_resource.connection_settings(),
        stream=stream,
        filter_subjects=(),
        start=11,
        end=1000,
        readers=1,
        pull_batch=200,
        rows_per_batch=400,
        run_id="run-1",
        ingested_at=LANDED,
    )

    batches = list(read_slice(spec, 11, 1000))

    assert [b.num_rows for b in batches] == [400, 400, 190]


def test_a_caller_that_does_not_take_chunks_holds_the_reading_back(js, stream):
    reader = RangeReader(js, stream, (), 1, 1000, pull_batch=50)

    async def stall_then_finish():
        seqs = list((await reader.next_chunk(100)).seq)
        await asyncio.sleep(0.5)  # the caller is busy: deliveries stop at the buffer's bound
        held = len(reader._columns)
        while (chunk := await reader.next_chunk(100)) is not None:
            seqs.extend(chunk.seq)
        await reader.close()
        return held, seqs

    held, seqs = js.run(stall_then_finish(), what="stalled read")

    assert held <= BUFFERED_CHUNKS * 100 + IN_FLIGHT * 50  # not the remaining 900
    assert seqs == list(range(1, 1001))
