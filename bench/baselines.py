"""The baselines (c) is measured against: (a) raw drains of bare nats-py, (b) the naive loop.

(a) reads the stream without doing anything with the messages (count and bytes only), in
three ways; the fastest is the ceiling a Python consumer of this stream can reach.
(b) is what people usually write: fetch, a dict per message, `createDataFrame`, a Delta
append, acks. Both are straightforward on purpose: neither is tuned up nor down.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import time
import uuid

import nats
from nats.js import api

from pipelines.ingest.bronze import BRONZE_SCHEMA

RAW_BATCH = 10_000  # messages per pull request in the raw drains
NAIVE_FETCH = 1_000  # messages per fetch (and per Delta append) in the naive path


# -- (a) raw drains ----------------------------------------------------------------------


def _raw_config(subject: str) -> api.ConsumerConfig:
    return api.ConsumerConfig(
        deliver_policy=api.DeliverPolicy.ALL,
        ack_policy=api.AckPolicy.NONE,
        filter_subject=subject,
        mem_storage=True,
        num_replicas=1,
        inactive_threshold=30.0,
    )


async def drain_fetch(url: str, stream: str, subject: str, count: int) -> tuple[int, int]:
    """nats-py's own API: an ephemeral pull consumer, `fetch(RAW_BATCH)` until all arrived."""
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        sub = await js.pull_subscribe(
            subject, stream=stream, config=_raw_config(subject), pending_bytes_limit=0
        )
        messages = size = 0
        while messages < count:
            for msg in await sub.fetch(min(RAW_BATCH, count - messages), timeout=10):
                messages += 1
                size += len(msg.data)
        return messages, size
    finally:
        await nc.close()


async def drain_pipelined(url: str, stream: str, subject: str, count: int) -> tuple[int, int]:
    """Pull requests of RAW_BATCH, two in flight, into a callback subscription."""
    nc = await nats.connect(url)
    try:
        info = await nc.jetstream()._jsm.add_consumer(stream, config=_raw_config(subject))
        next_subject = f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{info.name}"
        inbox = nc.new_inbox()
        done = asyncio.get_running_loop().create_future()
        state = {"messages": 0, "bytes": 0, "requested": 0}

        async def request() -> None:
            size = min(RAW_BATCH, count - state["requested"])
            if size > 0:
                state["requested"] += size
                body = {"batch": size, "expires": 60_000_000_000}
                await nc.publish(next_subject, json.dumps(body).encode(), reply=inbox)

        async def on_message(msg) -> None:
            if msg.headers and "Status" in msg.headers:
                return
            state["messages"] += 1
            state["bytes"] += len(msg.data)
            if state["messages"] % RAW_BATCH == 0:
                await request()
            if state["messages"] >= count and not done.done():
                done.set_result(None)

        await nc.subscribe(inbox, cb=on_message, pending_msgs_limit=0, pending_bytes_limit=0)
        await request()
        await request()
        await asyncio.wait_for(done, timeout=600)
        return state["messages"], state["bytes"]
    finally:
        await nc.close()


async def drain_ordered_push(url: str, stream: str, subject: str, count: int) -> tuple[int, int]:
    """nats-py's ordered push consumer (flow control, heartbeats) into a callback."""
    nc = await nats.connect(url)
    try:
        done = asyncio.get_running_loop().create_future()
        state = {"messages": 0, "bytes": 0}

        async def on_message(msg) -> None:
            state["messages"] += 1
            state["bytes"] += len(msg.data)
            if state["messages"] >= count and not done.done():
                done.set_result(None)

        await nc.jetstream().subscribe(
            subject,
            stream=stream,
            cb=on_message,
            ordered_consumer=True,
            deliver_policy=api.DeliverPolicy.ALL,
            pending_msgs_limit=0,
            pending_bytes_limit=0,
        )
        await asyncio.wait_for(done, timeout=600)
        return state["messages"], state["bytes"]
    finally:
        await nc.close()


RAW_DRAINS = {
    "fetch": drain_fetch,
    "pipelined_pull": drain_pipelined,
    "ordered_push": drain_ordered_push,
}


# -- (b) naive ---------------------------------------------------------------------------


async def naive(url: str, spark, stream: str, durable: str, path: str, count: int) -> int:
    """The usual hand-written loop: fetch, dicts, createDataFrame, append, ack."""
    nc = await nats.connect(url)
    try:
        sub = await nc.jetstream().pull_subscribe_bind(durable=durable, stream=stream)
        run_id = f"naive-{uuid.uuid4().hex[:8]}"
        landed, started = 0, time.monotonic()
        while landed < count:
            msgs = await sub.fetch(NAIVE_FETCH, timeout=10)
            now = dt.datetime.now(dt.timezone.utc)
            rows = []
            for msg in msgs:
                meta = msg.metadata
                headers = dict(msg.headers or {})
                rows.append(
                    {
                        "stream": meta.stream,
                        "seq": meta.sequence.stream,
                        "subject": msg.subject,
                        "published": meta.timestamp,
                        "published_date": meta.timestamp.date(),
                        "headers": headers or None,
                        "payload": msg.data,
                        "msg_id": headers.get("Nats-Msg-Id"),
                        "ingest_run_id": run_id,
                        "ingested_at": now,
                    }
                )
            frame = spark.createDataFrame(rows, schema=BRONZE_SCHEMA)
            frame.write.format("delta").mode("append").partitionBy("published_date").save(path)
            for msg in msgs:
                await msg.ack()
            landed += len(msgs)
            if landed % (100 * NAIVE_FETCH) < len(msgs):  # progress: (b) is the long one
                print(
                    f"    (b) {landed:,} landed, {landed / (time.monotonic() - started):,.0f} "
                    f"msg/s so far, load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
        await nc.flush()
        return landed
    finally:
        await nc.close()
