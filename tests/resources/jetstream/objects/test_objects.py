"""Object Store buckets against the session's real nats-server."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os

import nats.js.errors
import pytest

from resources.jetstream import ObjectStoreSpec, Storage
from resources.jetstream.errors import (
    BucketNotFoundError,
    InvalidArgumentError,
    MessageNotFoundError,
    ObjectCorruptedError,
    ObjectNotFoundError,
    ServerAPIError,
)
from resources.jetstream.objects.bucket import ObjectStoreBucket
from resources.jetstream.objects.meta import ObjectInfo, ObjectLink
from resources.jetstream.objects.transfer import (
    DEFAULT_CHUNK_SIZE,
    MAX_CHUNKS_IN_FLIGHT,
    chunk_subject,
)

KIB = 1024
MIB = 1024 * KIB


@pytest.fixture
def bucket(js, unique_name) -> ObjectStoreBucket:
    """A fresh, empty bucket."""
    return js.create_object_store(ObjectStoreSpec(unique_name, description="test artifacts"))


@pytest.fixture
def big() -> bytes:
    """1 MiB of random bytes: 16 chunks of 64 KiB."""
    return os.urandom(MIB)


def stream_messages(js, bucket: ObjectStoreBucket) -> int:
    info = js.run(js.jsm.stream_info(f"OBJ_{bucket.name}"), what="read the bucket's stream")
    return info.state.messages


def chunk_seqs(js, info: ObjectInfo) -> list[int]:
    """The stream sequences of an object's chunk messages, in order."""
    stream, subject = f"OBJ_{info.bucket}", chunk_subject(info.bucket, info.nuid)
    seqs, seq = [], 1
    while True:
        try:
            msg = js.run(js.jsm.get_msg(stream, seq=seq, subject=subject, next=True), what="get")
        except MessageNotFoundError:  # no further chunk
            return seqs
        seqs.append(msg.seq)
        seq = msg.seq + 1


def sha256_digest(data: bytes) -> str:
    return "SHA-256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode()


class RecordingReader:
    """A file-like with only `read`, recording each requested size and how many messages
    the bucket's stream held at that moment."""

    def __init__(self, data: bytes, on_read) -> None:
        self._data = io.BytesIO(data)
        self._on_read = on_read
        self.requested: list[int] = []
        self.stored_at_read: list[int] = []

    def read(self, size: int = -1) -> bytes:
        self.requested.append(size)
        self.stored_at_read.append(self._on_read())
        return self._data.read(size)


# -- create / bind / destroy ---------------------------------------------------------------


def test_create_object_store_returns_an_empty_bucket(js, unique_name):
    bucket = js.create_object_store(ObjectStoreSpec(unique_name))

    assert bucket.name == unique_name
    assert bucket.list() == []


def test_create_object_store_on_an_existing_bucket_keeps_its_objects(js, unique_name, bucket):
    bucket.put_bytes("a", b"x")

    again = js.create_object_store(ObjectStoreSpec(unique_name))

    assert again.get_bytes("a") == b"x"


def test_object_store_binds_to_an_existing_bucket(js, unique_name, bucket):
    bucket.put_bytes("a", b"x")

    assert js.object_store(unique_name).get_bytes("a") == b"x"


def test_binding_an_unknown_bucket_raises_bucket_not_found_saying_how_to_create_it(js, unique_name):
    with pytest.raises(BucketNotFoundError) as caught:
        js.object_store(unique_name)

    assert caught.value.bucket == unique_name
    assert "create_object_store" in str(caught.value)


@pytest.mark.parametrize("name", ["", "a.b", "has space", "ünïcode"])
def test_binding_an_invalid_bucket_name_raises_invalid_argument(js, name):
    with pytest.raises(InvalidArgumentError, match=repr(name)):
        js.object_store(name)


def test_destroy_then_bind_raises_bucket_not_found(js, unique_name, bucket):
    bucket.put_bytes("a", b"x")

    bucket.destroy()

    with pytest.raises(BucketNotFoundError):
        js.object_store(unique_name)
    with pytest.raises(BucketNotFoundError):
        bucket.get_bytes("a")
    with pytest.raises(BucketNotFoundError):
        bucket.put_bytes("a", b"y")
    with pytest.raises(BucketNotFoundError):
        bucket.destroy()


# -- put and get -----------------------------------------------------------------------------


def test_put_bytes_then_get_bytes_round_trips_with_its_meta(bucket):
    data = b"report body"

    stored = bucket.put_bytes(
        "reports/2024-06-01.html",
        data,
        description="daily report",
        headers={"Content-Type": "text/html"},
        metadata={"run_id": "r-1"},
    )

    assert bucket.get_bytes("reports/2024-06-01.html") == data
    assert stored == bucket.info("reports/2024-06-01.html")
    assert (stored.bucket, stored.name, stored.size, stored.chunks) == (
        bucket.name,
        "reports/2024-06-01.html",
        len(data),
        1,
    )
    assert stored.digest == sha256_digest(data)
    assert stored.modified is not None and stored.modified.tzinfo is not None
    assert stored.description == "daily report"
    assert stored.headers == {"Content-Type": "text/html"}
    assert stored.metadata == {"run_id": "r-1"}
    assert stored.chunk_size == DEFAULT_CHUNK_SIZE
    assert not stored.deleted and stored.link is None


def test_an_empty_object_round_trips_with_no_chunks(bucket, tmp_path):
    stored = bucket.put_bytes("empty", b"")

    assert (stored.size, stored.chunks) == (0, 0)
    assert bucket.get_bytes("empty") == b""
    bucket.get_file("empty", tmp_path / "empty")
    assert (tmp_path / "empty").read_bytes() == b""


@pytest.mark.parametrize("put", ["bytes", "file", "stream"])
def test_a_multi_chunk_object_round_trips_through_bytes_file_and_stream(bucket, tmp_path, big, put):
    source = tmp_path / "source.bin"
    source.write_bytes(big)
    options = {"chunk_size": 64 * KIB}
    if put == "bytes":
        stored = bucket.put_bytes("big", big, **options)
    elif put == "file":
        stored = bucket.put_file("big", source, **options)
    else:
        with source.open("rb") as reader:
            stored = bucket.put_stream("big", reader, **options)

    assert (stored.size, stored.chunks, stored.digest) == (MIB, 16, sha256_digest(big))
    assert bucket.get_bytes("big") == big
    assert bucket.get_file("big", tmp_path / "copy.bin") == stored
    assert (tmp_path / "copy.bin").read_bytes() == big
    sink = io.BytesIO()
    assert bucket.get_stream("big", sink) == stored
    assert sink.getvalue() == big


def test_put_stream_reads_one_chunk_at_a_time_while_publishing(js, bucket, big):
    reader = RecordingReader(big, lambda: stream_messages(js, bucket))

    stored = bucket.put_stream("big", reader, chunk_size=64 * KIB)

    assert stored.chunks == 16
    assert max(reader.requested) == 64 * KIB
    assert len(reader.requested) == 17  # 16 full chunks, then the empty read at the end
    # chunks were stored while the input was still being read
    assert reader.stored_at_read[0] == 0
    assert reader.stored_at_read[-1] >= 16 - MAX_CHUNKS_IN_FLIGHT
    assert bucket.get_bytes("big") == big


def test_put_stream_tops_up_short_reads_to_full_chunks(bucket, big):
    class Trickle(io.RawIOBase):  # returns at most 1000 bytes per read
        def __init__(self) -> None:
            self._data = io.BytesIO(big)

        def readable(self) -> bool:
            return True

        def read(self, size: int = -1) -> bytes:
            return self._data.read(min(size, 1000))

    stored = bucket.put_stream("big", Trickle(), chunk_size=64 * KIB)

    assert stored.chunks == 16
    assert bucket.get_bytes("big") == big


def test_put_replaces_the_object_and_purges_its_old_chunks(js, bucket, big):
    bucket.put_bytes("a", big, chunk_size=64 * KIB)

    bucket.put_bytes("a", b"small")

    assert bucket.get_bytes("a") == b"small"
    assert stream_messages(js, bucket) == 2  # one chunk and one meta


def test_a_failed_put_keeps_the_previous_object_and_leaves_no_chunks(js, bucket):
    bucket.put_bytes("a", b"old")

    class Failing:
        def read(self, size: int = -1) -> bytes:
            raise OSError("disk gone")

    with pytest.raises(OSError, match="disk gone"):
        bucket.put_stream("a", Failing())

    assert bucket.get_bytes("a") == b"old"
    assert stream_messages(js, bucket) == 2


def test_get_writes_into_a_bytearray(bucket):
    bucket.put_bytes("a", b"abc")
    sink = bytearray()

    bucket.get_stream("a", sink)

    assert sink == b"abc"


def test_objects_written_by_nats_py_and_by_this_bucket_read_each_other(js, bucket, big):
    obs = js.run(js.js.object_store(bucket.name), what="bind with nats-py")
    js.run(obs.put("from-nats-py", big), what="put with nats-py")
    bucket.put_bytes("ours", big, headers={"X-Run": "r-1"}, chunk_size=64 * KIB)

    assert bucket.get_bytes("from-nats-py") == big
    assert js.run(obs.get("ours"), what="get with nats-py").data == big


def test_the_meta_is_stored_as_go_clients_write_it(js, bucket):
    bucket.put_bytes("a", b"abc", headers={"X-Run": "r-1"})
    subject = f"$O.{bucket.name}.M.{base64.urlsafe_b64encode(b'a').decode()}"

    raw = js.run(js.jsm.get_last_msg(f"OBJ_{bucket.name}", subject), what="get the meta")

    meta = json.loads(raw.data)
    assert meta["headers"] == {"X-Run": ["r-1"]}
    assert meta["digest"] == sha256_digest(b"abc")
    assert meta["options"] == {"max_chunk_size": DEFAULT_CHUNK_SIZE}
    assert meta["mtime"].endswith("Z")
    assert raw.headers["Nats-Rollup"] == "sub"


# -- corruption ------------------------------------------------------------------------------


def test_a_deleted_chunk_raises_object_corrupted_and_leaves_no_target_file(
    js, bucket, big, tmp_path
):
    stored = bucket.put_bytes("big", big, chunk_size=64 * KIB)
    js.run(js.jsm.delete_msg(f"OBJ_{bucket.name}", chunk_seqs(js, stored)[5]), what="delete")
    target = tmp_path / "big.bin"

    with pytest.raises(ObjectCorruptedError, match="1 of its 16 chunks are missing") as caught:
        bucket.get_bytes("big")
    with pytest.raises(ObjectCorruptedError):
        bucket.get_file("big", target)

    assert (caught.value.bucket, caught.value.key) == (bucket.name, "big")
    assert list(tmp_path.iterdir()) == []


def test_a_corrupted_object_leaves_an_existing_target_file_untouched(js, bucket, tmp_path):
    stored = bucket.put_bytes("a", b"new bytes")
    js.run(js.jsm.delete_msg(f"OBJ_{bucket.name}", chunk_seqs(js, stored)[0]), what="delete")
    target = tmp_path / "a.bin"
    target.write_bytes(b"previous")

    with pytest.raises(ObjectCorruptedError):
        bucket.get_file("a", target)

    assert target.read_bytes() == b"previous"
    assert list(tmp_path.iterdir()) == [target]


def test_a_replaced_chunk_raises_object_corrupted_on_the_digest(js, bucket, big):
    stored = bucket.put_bytes("big", big, chunk_size=64 * KIB)
    last = chunk_seqs(js, stored)[-1]
    js.run(js.jsm.delete_msg(f"OBJ_{bucket.name}", last), what="delete")
    js.publish(chunk_subject(bucket.name, stored.nuid), os.urandom(64 * KIB))

    with pytest.raises(ObjectCorruptedError, match="do not match the recorded digest"):
        bucket.get_bytes("big")


def test_an_object_whose_chunks_are_all_gone_raises_object_corrupted_instead_of_hanging(
    js, bucket, big
):
    stored = bucket.put_bytes("big", big, chunk_size=64 * KIB)
    subject = chunk_subject(bucket.name, stored.nuid)
    js.run(js.jsm.purge_stream(f"OBJ_{bucket.name}", subject=subject), what="purge")

    with pytest.raises(ObjectCorruptedError, match="16 of its 16 chunks are missing"):
        bucket.get_stream("big", io.BytesIO())


# -- info, list, delete ---------------------------------------------------------------------


def test_info_and_get_of_a_missing_object_raise_object_not_found(bucket, tmp_path):
    with pytest.raises(ObjectNotFoundError, match="'nope'") as caught:
        bucket.info("nope")
    with pytest.raises(ObjectNotFoundError):
        bucket.get_file("nope", tmp_path / "nope")

    assert (caught.value.bucket, caught.value.key) == (bucket.name, "nope")
    assert list(tmp_path.iterdir()) == []


def test_list_returns_every_object_sorted_by_name(bucket):
    for name in ("b", "a/1", "c"):
        bucket.put_bytes(name, name.encode())

    assert [info.name for info in bucket.list()] == ["a/1", "b", "c"]


def test_delete_hides_the_object_and_purges_its_chunks(js, bucket, big):
    bucket.put_bytes("a", big, chunk_size=64 * KIB)
    bucket.put_bytes("b", b"kept")

    bucket.delete("a")

    with pytest.raises(ObjectNotFoundError):
        bucket.get_bytes("a")
    assert [info.name for info in bucket.list()] == ["b"]
    deleted = bucket.info("a", show_deleted=True)
    assert deleted.deleted and (deleted.size, deleted.chunks) == (0, 0)
    assert [info.name for info in bucket.list(show_deleted=True)] == ["a", "b"]
    assert stream_messages(js, bucket) == 3  # b's chunk and meta, a's deleted meta


def test_deleting_a_missing_object_raises_object_not_found(bucket):
    with pytest.raises(ObjectNotFoundError):
        bucket.delete("nope")


def test_a_deleted_name_can_be_put_again(bucket):
    bucket.put_bytes("a", b"1")
    bucket.delete("a")

    bucket.put_bytes("a", b"2")

    assert bucket.get_bytes("a") == b"2"


# -- links -----------------------------------------------------------------------------------


def test_a_link_reads_as_its_target(bucket, tmp_path):
    target = bucket.put_bytes("reports/2024-06-01.html", b"<html/>")

    link = bucket.add_link("reports/latest.html", "reports/2024-06-01.html")

    assert link.link == ObjectLink(bucket.name, "reports/2024-06-01.html")
    assert bucket.info("reports/latest.html").link == link.link
    assert bucket.get_bytes("reports/latest.html") == b"<html/>"
    assert bucket.get_file("reports/latest.html", tmp_path / "latest.html") == target
    assert (tmp_path / "latest.html").read_bytes() == b"<html/>"


def test_a_link_to_an_object_in_another_bucket_reads_across_buckets(js, bucket, unique_name):
    other = js.create_object_store(ObjectStoreSpec(f"{unique_name}_other"))
    other.put_bytes("model.bin", b"weights")

    bucket.add_link("model", "model.bin", target_bucket=other.name)

    assert bucket.get_bytes("model") == b"weights"


def test_a_bucket_link_is_listed_but_cannot_be_read_as_bytes(js, bucket, unique_name):
    other = js.create_object_store(ObjectStoreSpec(f"{unique_name}_dir"))

    link = bucket.add_bucket_link("archive", other.name)

    assert link.link == ObjectLink(other.name)
    assert [info.name for info in bucket.list()] == ["archive"]
    with pytest.raises(InvalidArgumentError, match="links the whole object store"):
        bucket.get_bytes("archive")


def test_linking_to_a_missing_object_or_bucket_raises_not_found(bucket, unique_name):
    with pytest.raises(ObjectNotFoundError):
        bucket.add_link("l", "nope")
    with pytest.raises(BucketNotFoundError):
        bucket.add_bucket_link("l", f"{unique_name}_nope")


def test_a_link_cannot_replace_an_object_or_point_to_a_link(bucket):
    bucket.put_bytes("a", b"1")
    bucket.put_bytes("b", b"2")
    bucket.add_link("l", "a")

    with pytest.raises(InvalidArgumentError, match="already has an object 'b'"):
        bucket.add_link("b", "a")
    with pytest.raises(InvalidArgumentError, match="link itself"):
        bucket.add_link("l2", "l")


def test_a_link_whose_target_was_deleted_raises_object_not_found_naming_the_link(bucket):
    bucket.put_bytes("a", b"1")
    bucket.add_link("l", "a")
    bucket.delete("a")

    with pytest.raises(ObjectNotFoundError, match="link 'l'"):
        bucket.get_bytes("l")


def test_deleting_a_link_keeps_its_target(bucket):
    bucket.put_bytes("a", b"1")
    bucket.add_link("l", "a")

    bucket.delete("l")

    assert bucket.get_bytes("a") == b"1"


# -- watch -----------------------------------------------------------------------------------


def test_watch_yields_existing_objects_then_new_ones(bucket):
    bucket.put_bytes("a", b"1")

    with bucket.watch(timeout=30) as watch:
        first = next(watch)
        bucket.put_bytes("b", b"2")
        bucket.delete("a")
        second, third = next(watch), next(watch)

    assert first.name == "a" and not first.deleted
    assert second.name == "b" and second.modified is not None
    assert third.name == "a" and third.deleted


def test_watch_of_a_quiet_bucket_ends_at_its_timeout(bucket):
    assert list(bucket.watch(timeout=0.5)) == []


def test_watch_sees_changes_made_before_the_first_next(bucket):
    bucket.put_bytes("old", b"1")
    watch = bucket.watch(timeout=30, updates_only=True, ignore_deletes=True)
    bucket.put_bytes("new", b"2")
    bucket.delete("old")
    bucket.put_bytes("last", b"3")

    names = [next(watch).name, next(watch).name]
    watch.close()

    assert names == ["new", "last"]
    assert list(watch) == []  # a closed watch yields nothing more


def test_watch_with_history_yields_every_kept_meta(bucket):
    bucket.put_bytes("a", b"1")
    bucket.put_bytes("a", b"2")  # the rollup keeps only this meta of 'a'
    bucket.add_link("l", "a")

    with bucket.watch(timeout=30, include_history=True) as watch:
        names = [next(watch).name, next(watch).name]

    assert names == ["a", "l"]


def test_watch_rejects_a_timeout_that_is_not_positive_and_finite(bucket):
    with pytest.raises(InvalidArgumentError):
        bucket.watch(timeout=0)
    with pytest.raises(InvalidArgumentError):
        bucket.watch(timeout=float("inf"))


# -- status and seal -------------------------------------------------------------------------


def test_status_reports_the_bucket_config_and_size(bucket):
    bucket.put_bytes("a", b"12345")

    status = bucket.status()

    assert status.bucket == bucket.name
    assert status.description == "test artifacts"
    assert (status.ttl, status.max_bytes, status.replicas) == (0, -1, 1)
    assert status.storage == Storage.FILE
    assert not status.sealed
    assert status.bytes > 5


def test_a_sealed_bucket_stays_readable_but_refuses_changes_clearly(bucket):
    bucket.put_bytes("a", b"1")

    bucket.seal()

    assert bucket.status().sealed
    assert bucket.get_bytes("a") == b"1"
    with pytest.raises(ServerAPIError, match="is sealed") as caught:
        bucket.put_bytes("b", b"2")
    assert caught.value.err_code == 10109
    with pytest.raises(ServerAPIError, match="is sealed"):
        bucket.put_bytes("empty", b"")
    with pytest.raises(ServerAPIError, match="is sealed"):
        bucket.delete("a")
    with pytest.raises(ServerAPIError, match="is sealed"):
        bucket.add_link("l", "a")


# -- arguments -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda b: b.put_bytes("", b"x"), "invalid object name ''"),
        (lambda b: b.put_bytes("a", "text"), "data must be bytes"),
        (lambda b: b.put_bytes("a", b"x", chunk_size=0), "chunk_size must be a positive"),
        (lambda b: b.put_bytes("a", b"x", chunk_size=64 * MIB), "max_payload"),
        (lambda b: b.put_bytes("a", b"x", headers={"Bad Name": "v"}), "invalid header"),
        (lambda b: b.put_bytes("a", b"x", metadata={"k": 1}), "metadata must map str to str"),
        (lambda b: b.put_stream("a", io.StringIO("text")), "binary reader"),
        (lambda b: b.get_stream("a", io.StringIO()), "binary writer"),
        (lambda b: b.add_link("a", "a"), "to itself"),
    ],
)
def test_bad_arguments_raise_invalid_argument_before_any_write(js, bucket, call, message):
    with pytest.raises(InvalidArgumentError, match=message):
        call(bucket)

    assert stream_messages(js, bucket) == 0


def test_get_file_into_a_missing_directory_raises_invalid_argument(bucket, tmp_path):
    bucket.put_bytes("a", b"1")

    with pytest.raises(InvalidArgumentError, match="existing directory"):
        bucket.get_file("a", tmp_path / "missing" / "a.bin")


def test_put_file_of_a_missing_path_raises_file_not_found_and_sends_nothing(js, bucket, tmp_path):
    with pytest.raises(FileNotFoundError):
        bucket.put_file("a", tmp_path / "missing.bin")

    assert stream_messages(js, bucket) == 0


def test_nats_py_errors_never_escape(bucket):
    bucket.destroy()

    with pytest.raises(BucketNotFoundError) as caught:
        bucket.list()

    assert not isinstance(caught.value, nats.js.errors.Error)
