"""A fast, columnar read of one stream range: what each Spark reader task runs.

It reads `[start, end]` through an ephemeral ordered consumer (no acks, in memory, removed
afterwards) with several pull requests in flight, and appends each message straight into
column lists: sequence and publish time come from the delivery's reply subject, so no
per-message object is built. Deliveries arrive as raw frames (`pipelines.ingest.frames`:
nats-py's parser with a fast path that skips its `Msg`, queue and callback task), or as
nats-py `Msg`s when that fast path is not available; both end in `_accept`.
`bronze.BronzeColumns.to_arrow` then builds the bronze record batch with vectorised Arrow
calls.

The reader reads ahead of its caller by at most `BUFFERED_CHUNKS` chunks: past that it stops
topping up its pull requests until the caller takes a chunk, so a slow Spark write holds the
reading back instead of the slice piling up in memory.

Ordering is checked on the consumer sequence: if a delivery goes missing (a slow-consumer
drop), the consumer is recreated from the next stream sequence, so the caller sees every
message of the range once, in order.

On a cluster the ephemeral consumer (one replica) lives on one server, and dies with it. The
pull requests ask the server for a heartbeat every `HEARTBEAT` seconds while they wait, so
a consumer that went silent with requests open (its server died, or answers "no responders"
or "leadership change") is noticed within `STALLED_AFTER` seconds and recreated from the
next unseen sequence on a live server; creating it retries through the stream's leader
election (the client's retry budget). That server's copy of the stream may also lag behind
the leader (a replica catching up): a consumer that reports nothing pending before the
range's end is not believed until the stream's leader confirms that no message of the
range is left (`STREAM.MSG.GET` with `next_by_subj`); otherwise it is recreated.
"""

from __future__ import annotations

import asyncio
import contextlib
import json

import nats.errors
import nats.js.errors
from nats.aio.msg import Msg
from nats.js import api

from pipelines.ingest import frames
from pipelines.ingest.bronze import BronzeColumns
from resources.jetstream import JetStreamClient
from resources.jetstream.errors import NO_MESSAGE_FOUND, RequestTimeoutError

IN_FLIGHT = 3  # pull requests outstanding at once
REQUEST_EXPIRES = 5.0  # seconds a pull request may wait for messages
HEARTBEAT = 1.0  # seconds between the server's heartbeats while a pull request waits
STALLED_AFTER = 3 * HEARTBEAT  # seconds of silence with requests open: recreate the consumer
IDLE_TIMEOUT = 60.0  # seconds a caller waits without a new message (recreations included)
BUFFERED_CHUNKS = 2  # chunks read ahead of the caller before the reader stops asking for more
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
        self._want = 1  # rows the caller waits for (set by next_chunk)
        self._restarting = False
        self._tasks: set[asyncio.Task] = set()  # pull requests being sent
        self._error: BaseException | None = None  # a pull request that could not be sent
        self._heard = 0.0  # loop time of the last frame from the consumer (or of its creation)
        self._progress = 0.0  # loop time of the last new message (or of the read's start)
        self.restarts = 0  # consumers recreated after a gap or a silence
        self.fast_path = False  # deliveries arrive as raw frames (see pipelines.ingest.frames)

    async def next_chunk(self, rows: int) -> BronzeColumns | None:
        """The next chunk of at most `rows` messages; None when the range is read."""
        self._want = rows
        loop = asyncio.get_running_loop()
        self._progress = loop.time()  # the idle clock runs only while the caller waits
        if self._sub is None and not self._done and not self._restarting:
            await self._open(self._next_seq)
        while not self._done and len(self._columns) < rows:
            if self._error is not None:
                raise self._error
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), HEARTBEAT)
            now = loop.time()
            if self._stalled(now):
                self._begin_restart()
            if now - self._progress > IDLE_TIMEOUT and not self._done:
                raise RequestTimeoutError(
                    f"reading stream {self._stream!r} from {self._next_seq} to {self._end}: no "
                    f"message for {IDLE_TIMEOUT}s (consumer recreated {self.restarts} times); "
                    "check the health of the NATS servers holding the stream",
                    stream=self._stream,
                    seq=self._next_seq,
                ) from None
        if not self._columns and self._done:
            return None
        chunk, self._columns = self._columns.split(rows)
        self._request_more()  # in case a full buffer had held the requests back
        return chunk

    async def close(self) -> None:
        """Unsubscribes and deletes the ephemeral consumer."""
        self._done = True
        await self._drop_consumer()

    def _stalled(self, now: float) -> bool:
        """Requests are open but the consumer has been silent past `STALLED_AFTER` (no
        message, no heartbeat): it is gone with its server, or never got them."""
        waiting = self._sub is not None and self._requested > 0
        return waiting and not self._restarting and now - self._heard > STALLED_AFTER

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
        # A repeat whose first try had landed leaves an unused consumer that expires by
        # itself (inactive_threshold).
        info = await self._client.retrying(
            lambda: self._client.jsm.add_consumer(self._stream, config=config),
            what=f"create a consumer reading stream {self._stream!r} from {start}",
            stream=self._stream,
        )
        self._consumer, self._expected_delivery, self._requested = info.name, 1, 0
        self._heard = asyncio.get_running_loop().time()
        if not info.num_pending and await self._nothing_stored_from(start):
            self._finish()
            return
        nc = self._client.nc
        self._sub, self.fast_path = await frames.subscribe_frames(
            nc, nc.new_inbox(), self._on_frame, self._on_message
        )
        await self._send_requests(self._more_requests())

    def _more_requests(self) -> int:
        """How many pull requests to send to keep IN_FLIGHT outstanding (counted as sent).

        None while the reader already holds BUFFERED_CHUNKS chunks the caller has not taken:
        a caller that is slower than the server (Spark writing Parquet) holds the reading
        back, instead of the whole slice piling up in memory.
        """
        if len(self._columns) >= BUFFERED_CHUNKS * self._want:
            return 0
        count = 0
        while not self._done and self._requested < IN_FLIGHT * self._batch:
            self._requested += self._batch
            count += 1
        return count

    async def _send_requests(self, count: int) -> None:
        subject = f"{self._client.jsm._prefix}.CONSUMER.MSG.NEXT.{self._stream}.{self._consumer}"
        body = json.dumps(
            {
                "batch": self._batch,
                "expires": int(REQUEST_EXPIRES * 1e9),
                "idle_heartbeat": int(HEARTBEAT * 1e9),
            }
        ).encode()
        for _ in range(count):
            if self._sub is None:
                return
            await self._client.nc.publish(subject, body, reply=self._sub.subject)

    def _request_more(self) -> None:
        """Tops the pull requests up, from a delivery (which cannot wait for the publish)."""
        count = self._more_requests()
        if count:
            task = asyncio.get_running_loop().create_task(self._send_requests(count))
            self._tasks.add(task)
            task.add_done_callback(self._request_sent)

    def _request_sent(self, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self._error = task.exception()
            self._changed.set()

    def _on_frame(self, subject: bytes, reply: bytes, header: bytes, payload: bytes) -> None:
        """A delivery on the fast path (`pipelines.ingest.frames`): raw bytes."""
        if self._done or self._restarting:
            return
        self._heard = asyncio.get_running_loop().time()
        if not reply:  # a status message: "NATS/1.0 404 No Messages"
            self._on_status(header[9:12])
        else:
            self._accept(reply.split(b"."), subject, frames.parse_headers(header), payload)

    async def _on_message(self, msg: Msg) -> None:
        """A delivery on nats-py's own path, when the fast path could not be installed."""
        if self._done or self._restarting:
            return
        self._heard = asyncio.get_running_loop().time()
        if not msg.reply:
            self._on_status((msg.headers or {}).get("Status", "").encode())
        else:
            tokens = msg.reply.encode().split(b".")
            self._accept(tokens, msg.subject, dict(msg.headers or {}) or None, msg.data)

    def _on_status(self, status: bytes) -> None:
        if status in (b"404", b"408"):  # a request ended early (no messages, expired)
            self._requested = 0  # the server has forgotten the outstanding requests
            self._request_more()
        elif status in (b"409", b"503"):
            # 409: the consumer was deleted, or its leader changed; 503: no responders, the
            # consumer is gone (its server died): recreate it on a live server.
            self._begin_restart()
        # 100: a heartbeat; the request is still open (`_heard` was updated)

    def _accept(
        self,
        tokens: list[bytes],
        subject: str | bytes,
        headers: dict[str, str] | None,
        payload: bytes,
    ) -> None:
        """Appends one delivery to the columns, checking it is the next one of the consumer.

        `tokens` is the reply subject split on dots:
        `$JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<delivery seq>.<time>.<pending>`
        (two more tokens, domain and account hash, after `$JS.ACK` in the v2 form).
        """
        offset = 0 if len(tokens) == 9 else 2
        seq, delivery = int(tokens[5 + offset]), int(tokens[6 + offset])
        self._requested -= 1
        if delivery != self._expected_delivery:
            self._begin_restart()
            return
        self._expected_delivery += 1
        if seq > self._end:
            self._finish()
            return
        columns = self._columns
        columns.seq.append(seq)
        columns.subject.append(subject)
        columns.published_ns.append(int(tokens[7 + offset]))
        columns.headers.append(headers)
        columns.payload.append(payload)
        columns.msg_id.append(headers.get(MSG_ID) if headers else None)
        self._next_seq = seq + 1
        self._progress = self._heard
        if seq == self._end:
            self._finish()
        elif tokens[8 + offset] == b"0":  # the consumer sees nothing pending after it
            self._begin_restart(verify=True)
        elif self._requested <= (IN_FLIGHT - 1) * self._batch:
            self._request_more()
        if len(columns) >= self._want:
            self._changed.set()

    def _begin_restart(self, *, verify: bool = False) -> None:
        """Recreates the consumer from the next unseen sequence (a delivery went missing,
        or the consumer went silent).

        With `verify` (the consumer said nothing is pending before the range's end), the
        stream's leader is asked first: the consumer's server may hold a copy of the stream
        that lags behind (a replica catching up), and only the leader's answer ends the read.

        Runs as its own task: unsubscribing from inside the subscription's callback would
        cancel the callback itself.
        """
        if self._restarting or self._done:
            return
        self._restarting = True
        task = asyncio.get_running_loop().create_task(self._restart(verify))
        self._tasks.add(task)
        task.add_done_callback(self._request_sent)

    async def _restart(self, verify: bool) -> None:
        try:
            if self._next_seq > self._end or (
                verify and await self._nothing_stored_from(self._next_seq)
            ):
                await self._drop_consumer(wait=False)
                self._finish()
                return
            await self._drop_consumer(wait=False)
            self.restarts += 1
            await asyncio.sleep(0.1 * min(self.restarts, 10))  # not in a tight loop
            await self._open(self._next_seq)
        finally:
            self._restarting = False
            self._changed.set()

    async def _nothing_stored_from(self, start: int) -> bool:
        """Whether the stream's leader stores no message of the read's subjects in
        `[start, end]` (a consumer's "nothing pending" comes from its own server's copy)."""
        jsm = self._client.jsm
        subject = f"{jsm._prefix}.STREAM.MSG.GET.{self._stream}"
        for filter_subject in self._subjects or (">",):
            body = json.dumps({"seq": start, "next_by_subj": filter_subject}).encode()
            try:
                answer = await self._client.retrying(
                    lambda body=body: jsm._api_request(
                        subject, body, timeout=self._client.settings.request_timeout
                    ),
                    what=f"look for messages of stream {self._stream!r} from {start}",
                    stream=self._stream,
                )
            except nats.js.errors.NotFoundError as error:
                if error.err_code != NO_MESSAGE_FOUND:
                    raise  # the stream itself is gone: the read fails, it does not end
                continue  # none at or after `start`
            if int(answer["message"]["seq"]) <= self._end:
                return False
        return True

    def _finish(self) -> None:
        self._done = True
        self._changed.set()

    async def _drop_consumer(self, *, wait: bool = True) -> None:
        """Unsubscribes and deletes the consumer; without `wait`, the delete runs in the
        background (its server may be down: it then expires by itself)."""
        sub, self._sub = self._sub, None
        if sub is not None:
            await frames.unsubscribe_frames(self._client.nc, sub)
        consumer, self._consumer = self._consumer, None
        if consumer is None:
            return
        delete = self._delete_consumer(consumer)
        if wait:
            await delete
        else:
            task = asyncio.get_running_loop().create_task(delete)
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _delete_consumer(self, consumer: str) -> None:
        # An ephemeral consumer also expires by itself (inactive_threshold).
        with contextlib.suppress(nats.errors.Error, nats.js.errors.Error, TimeoutError):
            await self._client.jsm.delete_consumer(self._stream, consumer)
