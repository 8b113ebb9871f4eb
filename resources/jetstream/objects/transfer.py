"""Streaming chunk transfer for the Object Store, following ADR-20.

An object is a run of chunk messages on `$O.<bucket>.C.<nuid>` followed by one meta message
on `$O.<bucket>.M.<base64url(name)>` (see `bucket.py`) that records the size, the chunk
count and the digest `SHA-256=<base64url>`.

nats-py's `ObjectStore` is not used for the bytes: its `put` needs `readinto` and awaits
each chunk's ack in turn (and its `publish_async` never completes when the stream rejects
a message); its `get` checks neither size nor chunk count, waits forever once the chunks
are gone, and drops `writeinto` when following a link. Here the caller's thread reads and
writes one chunk at a time while the client's loop only publishes and fetches, so an object
never sits whole in memory, every network step is bounded by the request timeout, and a
missing or altered chunk raises `ObjectCorruptedError`.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import tempfile
import uuid
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import nats.errors
import nats.js.errors
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import api
from nats.js.manager import JetStreamManager
from nats.js.object_store import OBJ_CHUNKS_PRE_TEMPLATE, OBJ_DEFAULT_CHUNK_SIZE, OBJ_DIGEST_TYPE

from resources.jetstream.errors import (
    STREAM_NOT_FOUND,
    InvalidArgumentError,
    JetStreamError,
    ObjectCorruptedError,
)

DEFAULT_CHUNK_SIZE = OBJ_DEFAULT_CHUNK_SIZE  # 128 KiB, as in every NATS client
MAX_CHUNKS_IN_FLIGHT = 8  # chunks published but not yet acknowledged by the stream

Runner = Callable[[Coroutine[Any, Any, Any]], Any]  # runs on the loop, translating errors


def new_nuid() -> str:
    """A fresh token for a chunk subject, so a re-put never mixes with the old chunks."""
    return uuid.uuid4().hex


def chunk_subject(bucket: str, nuid: str) -> str:
    return OBJ_CHUNKS_PRE_TEMPLATE.format(bucket=bucket, obj=nuid)


def format_digest(sha256: bytes) -> str:
    return OBJ_DIGEST_TYPE + base64.urlsafe_b64encode(sha256).decode()


def parse_digest(digest: str | None) -> bytes | None:
    """The raw SHA-256 of a `SHA-256=<base64url>` digest, or None if it is not one."""
    if not digest or not digest.upper().startswith(OBJ_DIGEST_TYPE):
        return None
    encoded = digest[len(OBJ_DIGEST_TYPE) :]
    try:
        raw = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
    except ValueError:
        return None
    return raw if len(raw) == hashlib.sha256().digest_size else None


def read_chunks(reader: BinaryIO, chunk_size: int) -> Iterator[bytes]:
    """Yields the reader's bytes in chunks of `chunk_size` (the last may be shorter).

    Never asks `reader.read` for more than `chunk_size` bytes; short reads are topped up.

    Raises:
        InvalidArgumentError: the reader returns text or None (a non-blocking stream).
    """
    while True:
        chunk = bytearray()
        while len(chunk) < chunk_size:
            part = reader.read(chunk_size - len(chunk))
            if part is None or isinstance(part, str):
                raise InvalidArgumentError(
                    f"the reader returned {type(part).__name__}, not bytes: pass a blocking "
                    "stream opened in binary mode (open(path, 'rb'), io.BytesIO, ...)"
                )
            if not part:
                break
            chunk += part
        if chunk:
            yield bytes(chunk)
        if len(chunk) < chunk_size:
            return


class ChunkPublisher:
    """Publishes chunks in order with at most `MAX_CHUNKS_IN_FLIGHT` acks outstanding.

    Acks come back on a private inbox (nats-py's `publish_async` never completes its
    future when the stream rejects a message, e.g. a sealed one). Every coroutine runs on
    the client's loop.
    """

    def __init__(self, nc: NATS, subject: str, timeout: float) -> None:
        self._nc = nc
        self._subject = subject
        self._timeout = timeout
        self._inbox = nc.new_inbox()
        self._sub: Subscription | None = None
        self._sent = 0
        self._acked = 0

    async def open(self) -> None:
        self._sub = await self._nc.subscribe(f"{self._inbox}.*")

    async def send(self, chunk: bytes) -> None:
        """Publishes one chunk; first waits for an ack if the window is full."""
        while self._sent - self._acked >= MAX_CHUNKS_IN_FLIGHT:
            await self._receive_ack()
        await self._nc.publish(self._subject, chunk, reply=f"{self._inbox}.{self._sent}")
        self._sent += 1

    async def finish(self) -> None:
        """Waits until the stream has acknowledged every chunk."""
        while self._acked < self._sent:
            await self._receive_ack()

    async def close(self) -> None:
        if self._sub is not None and not self._nc.is_closed:
            with contextlib.suppress(nats.errors.Error):
                await self._sub.unsubscribe()

    async def _receive_ack(self) -> None:
        assert self._sub is not None
        msg = await self._sub.next_msg(timeout=self._timeout)
        if msg.headers and msg.headers.get("Status") == "503":
            raise nats.js.errors.NoStreamResponseError
        response = json.loads(msg.data or b"{}")
        if "error" in response:
            error = response["error"]
            raise nats.js.errors.APIError(
                code=error.get("code"),
                err_code=error.get("err_code"),
                description=error.get("description"),
            )
        self._acked += 1


def upload(
    run: Runner, nc: NATS, subject: str, reader: BinaryIO, chunk_size: int, timeout: float
) -> tuple[int, int, str]:
    """Reads `reader` chunk by chunk on this thread and publishes each chunk to `subject`.

    Args:
        run: runs a coroutine on the client's loop, translating its errors.
        nc: the connection.
        subject: the object's chunk subject.
        reader: a binary stream; it is read, never closed.
        chunk_size: the most bytes per chunk (and per `reader.read` call).
        timeout: seconds to wait for each acknowledgement.

    Returns:
        (size in bytes, number of chunks, digest).

    Raises:
        JetStreamError: a chunk was rejected; the caller purges `subject`.
    """
    digest = hashlib.sha256()
    size = chunks = 0
    publisher = ChunkPublisher(nc, subject, timeout)
    run(publisher.open())
    try:
        for chunk in read_chunks(reader, chunk_size):
            digest.update(chunk)
            size += len(chunk)
            chunks += 1
            run(publisher.send(chunk))
        run(publisher.finish())
    finally:
        if nc.is_connected:  # never reconnect only to unsubscribe
            with contextlib.suppress(JetStreamError):
                run(publisher.close())
    return size, chunks, format_digest(digest.digest())


def download(
    run: Runner,
    jsm: JetStreamManager,
    stream: str,
    subject: str,
    *,
    expected: tuple[int, int, str | None],
    write: Callable[[bytes], object],
    direct: bool,
    corrupted: Callable[[str], ObjectCorruptedError],
) -> None:
    """Fetches the chunks on `subject` in order, one per request, and hands each to `write`.

    Args:
        run: runs a coroutine on the client's loop, translating its errors.
        jsm: the JetStream manager, for message gets.
        stream: the bucket's stream.
        subject: the object's chunk subject.
        expected: (size, chunks, digest) as recorded in the object's meta.
        write: called with each chunk, in order, before the digest is known to match.
        direct: use the stream's direct get API.
        corrupted: builds the error for a reason ("2 of 3 chunks are missing").

    Raises:
        ObjectCorruptedError: a chunk is missing or extra, or the size or digest differs.
    """
    size, chunks, digest = expected
    want = parse_digest(digest)
    if want is None:
        raise corrupted(f"its meta has no valid SHA-256 digest ({digest!r})")
    sha256 = hashlib.sha256()
    received = got = 0
    seq = 1
    while received < chunks:
        msg = run(get_msg(jsm, stream, seq=seq, subject=subject, next=True, direct=direct))
        if msg is None:
            break
        data = msg.data or b""
        received += 1
        got += len(data)
        if got > size:
            raise corrupted(f"its chunks hold more than the recorded {size} bytes")
        sha256.update(data)
        write(data)
        seq = msg.seq + 1
    if received != chunks:
        raise corrupted(f"{chunks - received} of its {chunks} chunks are missing")
    if got != size:
        raise corrupted(f"its chunks hold {got} bytes, not the recorded {size}")
    if sha256.digest() != want:
        raise corrupted(f"its bytes do not match the recorded digest {digest!r}")


async def get_msg(jsm: JetStreamManager, stream: str, **query: Any) -> api.RawStreamMsg | None:
    """`jsm.get_msg(stream, **query)`, or None when no message matches.

    A missing stream still raises (its 404 carries the stream-not-found error code).
    """
    try:
        return await jsm.get_msg(stream, **query)
    except nats.js.errors.NotFoundError as error:
        if error.err_code == STREAM_NOT_FOUND:
            raise
        return None


async def next_msg(sub: Subscription, timeout: float) -> Msg | None:
    """The subscription's next message, or None if none arrives within `timeout` seconds."""
    try:
        return await sub.next_msg(timeout=timeout)
    except nats.errors.TimeoutError:
        return None


@contextlib.contextmanager
def replace_on_success(path: Path) -> Iterator[BinaryIO]:
    """Yields a temporary file beside `path` that replaces `path` only if the block succeeds.

    On any error the temporary file is removed and `path` is left as it was (missing, or
    with its previous content). The new file is created with mode 0600.
    """
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
