"""A fast, columnar read of one stream range: what each Spark reader task runs.

It reads `[start, end]` through an ephemeral ordered consumer (no acks, in memory, removed
afterwards) with several pull requests in flight, and appends each message straight into
column lists: sequence and publish time come from the delivery's reply subject, so no
per-message object is built. `bronze.BronzeColumns.to_arrow` then builds the bronze record
batch with vectorised Arrow calls.

Ordering is checked on the consumer sequence: if a delivery goes missing (a slow-consumer
drop), the consumer is recreated from the next stream sequence, so the caller sees every
message of the range once, in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import json

import nats.errors
import nats.js.errors
from nats.aio.msg import Msg
from nats.js import api

from pipelines.ingest.bronze import BronzeColumns
from resources.jetstream import JetStreamClient
from resources.jetstream.errors import RequestTimeoutError

IN_FLIGHT = 3  # pull requests outstanding at once
REQUEST_EXPIRES = 5.0  # seconds a pull request may wait for messages
IDLE_TIMEOUT = 30.0  # seconds without any delivery before the read gives up
MSG_ID = "Nats-Msg-Id"


class RangeReader:
    """Reads one range of a stream into `BronzeColumns` chunks (runs on the client's loop)."""

    def __init__(
        self,
        client: JetStreamClient,
        stream: str,
        filter_subjects: tuple[str, ...],
        start: int,
        end: int,
        pull_batch: int,
    ) -> None:
        self._client = client
        self._stream = stream
        self._subjects = filter_subjects
        self._next_seq = start  # the next stream sequence the caller has not seen
        self._end = end
        self._batch = pull_batch
        self._columns = BronzeColumns()
        self._done = False
        self._changed = asyncio.Event()
        self._consumer: str | None = None
        self._expected_delivery = 1
        self._requested = 0  # messages asked for and not yet delivered
        self._sub = None
        self._want = 0  # rows the caller waits for
        self._restarting = False

    async def next_chunk(self, rows: int) -> BronzeColumns | None:
        """The next chunk of at most about `rows` messages; None when the range is read."""
        if self._sub is None and not self._done and not self._restarting:
            await self._open(self._next_seq)
        self._want = rows
        while not self._done and len(self._columns) < rows:
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), IDLE_TIMEOUT)
            except TimeoutError:
                raise RequestTimeoutError(
                    f"reading stream {self._stream!r} from {self._next_seq} to {self._end}: no "
                    f"message for {IDLE_TIMEOUT}s; check the server's health",
                    stream=self._stream,
                    seq=self._next_seq,
                ) from None
        if not self._columns and self._done:
            return None
        chunk, self._columns = self._columns, BronzeColumns()
        return chunk

    async def close(self) -> None:
        """Unsubscribes and deletes the ephemeral consumer."""
        self._done = True
        await self._drop_consumer()

    async def _open(self, start: int) -> None:
        config = api.ConsumerConfig(
            deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
            opt_start_seq=start,
            ack_policy=api.AckPolicy.NONE,
            num_replicas=1,
            mem_storage=True,
            inactive_threshold=30.0,
        )
        if len(self._subjects) == 1:
            config.filter_subject = self._subjects[0]
        elif self._subjects:
            config.filter_subjects = list(self._subjects)
        info = await self._client.jsm.add_consumer(self._stream, config=config)
        self._consumer, self._expected_delivery, self._requested = info.name, 1, 0
        if not info.num_pending:
            self._finish()
            return
        nc = self._client.nc
        self._sub = await nc.subscribe(
            nc.new_inbox(), cb=self._on_message, pending_msgs_limit=-1, pending_bytes_limit=-1
        )
        await self._top_up()

    async def _top_up(self) -> None:
        while not self._done and self._requested < IN_FLIGHT * self._batch:
            body = {"batch": self._batch, "expires": int(REQUEST_EXPIRES * 1e9)}
            subject = (
                f"{self._client.jsm._prefix}.CONSUMER.MSG.NEXT.{self._stream}.{self._consumer}"
            )
            await self._client.nc.publish(
                subject, json.dumps(body).encode(), reply=self._sub.subject
            )
            self._requested += self._batch

    async def _on_message(self, msg: Msg) -> None:
        if self._done or self._restarting:
            return
        if not msg.reply:  # a status message: 404/408 end a request early, 409 a conflict
            status = (msg.headers or {}).get("Status", "")
            if status in ("404", "408"):
                self._requested = 0  # the server has forgotten the outstanding requests
                await self._top_up()
            elif status == "409":
                self._begin_restart()
            return
        tokens = msg.reply.split(".")
        offset = 0 if len(tokens) == 9 else 2  # v1 or v2 (with domain and account hash)
        seq, delivery = int(tokens[5 + offset]), int(tokens[6 + offset])
        pending = int(tokens[8 + offset])
        self._requested -= 1
        if delivery != self._expected_delivery:
            self._begin_restart()
            return
        self._expected_delivery += 1
        if seq > self._end:
            self._finish()
            return
        headers = msg.headers
        columns = self._columns
        columns.seq.append(seq)
        columns.subject.append(msg.subject)
        columns.published_ns.append(int(tokens[7 + offset]))
        columns.headers.append(list(headers.items()) if headers else None)
        columns.payload.append(msg.data)
        columns.msg_id.append(headers.get(MSG_ID) if headers else None)
        self._next_seq = seq + 1
        if seq == self._end or pending == 0:
            self._finish()
        elif self._requested <= (IN_FLIGHT - 1) * self._batch:
            await self._top_up()
        if len(columns) >= self._want:
            self._changed.set()

    def _begin_restart(self) -> None:
        """Recreates the consumer from the next unseen sequence (a delivery went missing).

        Runs as its own task: unsubscribing from inside the subscription's callback would
        cancel the callback itself.
        """
        self._restarting = True
        asyncio.get_running_loop().create_task(self._restart())

    async def _restart(self) -> None:
        await self._drop_consumer()
        self._restarting = False
        if self._next_seq > self._end:
            self._finish()
        else:
            await self._open(self._next_seq)
        self._changed.set()

    def _finish(self) -> None:
        self._done = True
        self._changed.set()

    async def _drop_consumer(self) -> None:
        sub, self._sub = self._sub, None
        if sub is not None:
            await sub.unsubscribe()
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            # An ephemeral consumer also expires by itself (inactive_threshold).
            with contextlib.suppress(nats.errors.Error, nats.js.errors.Error):
                await self._client.jsm.delete_consumer(self._stream, consumer)
