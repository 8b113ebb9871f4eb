"""Key-Value buckets against the session's real nats-server."""

from __future__ import annotations

import datetime as dt

import pytest
from nats.js import api

from resources.jetstream import KeyValueSpec, Storage
from resources.jetstream.errors import (
    BucketNotFoundError,
    InvalidArgumentError,
    KeyNotFoundError,
    RevisionConflictError,
    ServerAPIError,
)
from resources.jetstream.kv import bucket as kv
from resources.jetstream.kv.bucket import KeyValueBucket
from resources.jetstream.kv.entries import KvEntry, KvOperation


@pytest.fixture
def bucket(js, unique_name) -> KeyValueBucket:
    """A fresh bucket keeping five revisions per key."""
    return js.create_key_value(KeyValueSpec(unique_name, history=5))


# -- create / bind / destroy ---------------------------------------------------------------


def test_create_key_value_returns_a_bucket_bound_to_the_new_bucket(js, unique_name):
    bucket = js.create_key_value(KeyValueSpec(unique_name))

    assert bucket.name == unique_name
    assert bucket.keys() == []


def test_create_key_value_on_an_existing_bucket_keeps_its_values(js, unique_name, bucket):
    bucket.put("k", b"v")

    again = js.create_key_value(KeyValueSpec(unique_name, history=5))

    assert again.get("k").value == b"v"


def test_key_value_binds_to_an_existing_bucket(js, unique_name, bucket):
    bucket.put("k", b"v")

    assert js.key_value(unique_name).get("k").value == b"v"


def test_binding_an_unknown_bucket_raises_bucket_not_found_naming_it_and_how_to_create_it(
    js, unique_name
):
    with pytest.raises(BucketNotFoundError) as caught:
        js.key_value(unique_name)

    assert caught.value.bucket == unique_name
    assert f"create_key_value(KeyValueSpec({unique_name!r}))" in str(caught.value)


@pytest.mark.parametrize("name", ["", "a.b", "a b", "a*", "caf\u00e9", "a@b"])
def test_binding_a_bad_bucket_name_raises_invalid_argument_before_io(name):
    with pytest.raises(InvalidArgumentError, match="bucket name"):
        kv.bind(None, name)  # no client: any I/O would fail differently


def test_creating_a_bucket_name_nats_rejects_raises_invalid_argument_before_io():
    with pytest.raises(InvalidArgumentError, match="'a@b'"):
        kv.create(None, KeyValueSpec("a@b"))  # the spec itself refuses it: no client needed


def test_destroy_then_bind_raises_bucket_not_found(js, unique_name, bucket):
    bucket.destroy()

    with pytest.raises(BucketNotFoundError):
        js.key_value(unique_name)


def test_put_on_a_destroyed_bucket_raises_bucket_not_found(bucket):
    bucket.destroy()

    with pytest.raises(BucketNotFoundError, match="does not exist"):
        bucket.put("k", b"v")


def test_get_on_a_destroyed_bucket_raises_bucket_not_found(bucket):
    bucket.destroy()

    with pytest.raises(BucketNotFoundError):
        bucket.get("k")


def test_destroy_of_a_destroyed_bucket_raises_bucket_not_found(bucket):
    bucket.destroy()

    with pytest.raises(BucketNotFoundError):
        bucket.destroy()


# -- put / get -----------------------------------------------------------------------------


def test_put_returns_increasing_revisions(bucket):
    first = bucket.put("k", b"1")
    second = bucket.put("k", b"2")

    assert 0 < first < second


def test_get_returns_the_latest_entry_with_its_metadata(bucket, unique_name):
    bucket.put("k", b"1")
    revision = bucket.put("k", b"2")

    entry = bucket.get("k")

    assert isinstance(entry, KvEntry)
    assert (entry.bucket, entry.key, entry.value) == (unique_name, "k", b"2")
    assert (entry.revision, entry.delta, entry.operation) == (revision, 0, KvOperation.PUT)
    assert entry.created.tzinfo is not None
    assert entry.created <= dt.datetime.now(dt.timezone.utc) + dt.timedelta(minutes=1)


def test_get_at_a_revision_returns_that_revision(bucket):
    old = bucket.put("k", b"1")
    bucket.put("k", b"2")

    assert bucket.get("k", revision=old).value == b"1"


def test_get_at_a_revision_of_another_key_raises_key_not_found(bucket):
    other = bucket.put("other", b"x")

    with pytest.raises(KeyNotFoundError):
        bucket.get("k", revision=other)


def test_get_reads_a_bucket_created_without_direct_get(js, unique_name):
    js.run(js.js.create_key_value(api.KeyValueConfig(bucket=unique_name)), what="create")
    bucket = js.key_value(unique_name)
    revision = bucket.put("k", b"v")

    entry = bucket.get("k")

    assert (entry.value, entry.revision, entry.created.tzinfo is not None) == (b"v", revision, True)
    assert bucket.try_get("missing") is None


def test_entries_are_frozen(bucket):
    bucket.put("k", b"v")
    entry = bucket.get("k")

    with pytest.raises(AttributeError):
        entry.value = b"changed"


def test_put_of_an_empty_value_reads_back_as_empty_bytes(bucket):
    bucket.put("k", b"")

    assert bucket.get("k").value == b""


def test_get_of_a_missing_key_raises_key_not_found_naming_bucket_and_key(bucket, unique_name):
    with pytest.raises(KeyNotFoundError) as caught:
        bucket.get("missing")

    assert (caught.value.bucket, caught.value.key) == (unique_name, "missing")
    assert "'missing'" in str(caught.value)
    assert repr(unique_name) in str(caught.value)


def test_try_get_of_a_missing_key_returns_none(bucket):
    assert bucket.try_get("missing") is None


def test_try_get_of_an_existing_key_returns_its_entry(bucket):
    bucket.put("k", b"v")

    assert bucket.try_get("k").value == b"v"


def test_keys_with_dots_and_allowed_punctuation_round_trip(bucket):
    bucket.put("a.b-c_d/e=f", b"v")

    assert bucket.get("a.b-c_d/e=f").value == b"v"


@pytest.mark.parametrize(
    "key", ["", ".k", "k.", "a..b", "a b", "a*", "a.>", "k\n", "caf\u00e9", None]
)
def test_a_bad_key_raises_invalid_argument_before_io(bucket, key):
    with pytest.raises(InvalidArgumentError, match="invalid kv key"):
        bucket.put(key, b"v")


def test_a_value_that_is_not_bytes_raises_invalid_argument(bucket):
    with pytest.raises(InvalidArgumentError, match="must be bytes"):
        bucket.put("k", "text")


# -- create-only / compare-and-set ---------------------------------------------------------


def test_create_writes_a_new_key(bucket):
    revision = bucket.create("k", b"v")

    assert bucket.get("k").revision == revision


def test_create_on_an_existing_key_raises_revision_conflict_saying_it_exists(bucket):
    bucket.put("k", b"v")

    with pytest.raises(RevisionConflictError, match="already exists") as caught:
        bucket.create("k", b"other")

    assert caught.value.key == "k"
    assert bucket.get("k").value == b"v"


def test_create_on_a_deleted_key_writes_it_again(bucket):
    bucket.put("k", b"old")
    bucket.delete("k")

    bucket.create("k", b"new")

    assert bucket.get("k").value == b"new"


def test_compare_and_set_creates_without_a_revision_and_updates_with_the_current_one(bucket):
    first = bucket.compare_and_set("stage.silver", b"1", revision=None)
    second = bucket.compare_and_set("stage.silver", b"2", revision=first)

    assert bucket.get("stage.silver").value == b"2"
    assert bucket.get("stage.silver").revision == second
    with pytest.raises(RevisionConflictError):
        bucket.compare_and_set("stage.silver", b"3", revision=None)  # the key has a value
    with pytest.raises(RevisionConflictError):
        bucket.compare_and_set("stage.silver", b"3", revision=first)  # stale


def test_update_with_the_current_revision_writes_the_value(bucket):
    revision = bucket.put("k", b"1")

    new_revision = bucket.update("k", b"2", revision=revision)

    assert new_revision > revision
    assert bucket.get("k").value == b"2"


def test_update_with_stale_revision_raises_revision_conflict(bucket, unique_name):
    stale = bucket.put("k", b"1")
    bucket.put("k", b"2")

    with pytest.raises(RevisionConflictError) as caught:
        bucket.update("k", b"3", revision=stale)

    error = caught.value
    assert (error.bucket, error.key, error.seq) == (unique_name, "k", stale)
    assert f"expected revision {stale}" in str(error)
    assert bucket.get("k").value == b"2"


@pytest.mark.parametrize("revision", [0, -1, True, "1", None])
def test_update_with_a_bad_revision_raises_invalid_argument(bucket, revision):
    with pytest.raises(InvalidArgumentError, match="revision"):
        bucket.update("k", b"v", revision=revision)


# -- delete / purge ------------------------------------------------------------------------


def test_delete_hides_the_key_from_get(bucket):
    bucket.put("k", b"v")

    bucket.delete("k")

    with pytest.raises(KeyNotFoundError):
        bucket.get("k")


def test_delete_with_the_current_revision_deletes(bucket):
    revision = bucket.put("k", b"v")

    bucket.delete("k", revision=revision)

    assert bucket.try_get("k") is None


def test_delete_with_stale_revision_raises_revision_conflict_and_keeps_the_value(bucket):
    stale = bucket.put("k", b"1")
    bucket.put("k", b"2")

    with pytest.raises(RevisionConflictError, match=f"expected revision {stale}"):
        bucket.delete("k", revision=stale)

    assert bucket.get("k").value == b"2"


def test_purge_removes_every_revision_but_a_purge_marker(bucket):
    bucket.put("k", b"1")
    bucket.put("k", b"2")

    bucket.purge("k")

    assert bucket.try_get("k") is None
    assert [e.operation for e in bucket.history("k")] == [KvOperation.PURGE]


# -- keys / history ------------------------------------------------------------------------


def test_keys_on_an_empty_bucket_returns_an_empty_list(bucket):
    assert bucket.keys() == []


def test_keys_lists_keys_with_a_value_sorted(bucket):
    for key in ("b", "a", "c.d", "gone"):
        bucket.put(key, b"v")
    bucket.delete("gone")

    assert bucket.keys() == ["a", "b", "c.d"]


def test_keys_after_every_key_was_deleted_returns_an_empty_list(bucket):
    bucket.put("k", b"v")
    bucket.delete("k")

    assert bucket.keys() == []


def test_history_returns_every_kept_revision_oldest_first(bucket):
    revisions = [bucket.put("k", value) for value in (b"1", b"2", b"3")]
    bucket.put("other", b"x")

    history = bucket.history("k")

    assert [(e.revision, e.value) for e in history] == [
        (revisions[0], b"1"),
        (revisions[1], b"2"),
        (revisions[2], b"3"),
    ]
    assert all(e.key == "k" and e.operation == KvOperation.PUT for e in history)


def test_history_includes_the_delete_tombstone(bucket):
    bucket.put("k", b"1")
    bucket.delete("k")

    history = bucket.history("k")
    assert [e.operation for e in history] == [KvOperation.PUT, KvOperation.DEL]
    assert all(e.operation is KvOperation(e.operation) for e in history)  # the enum, not text


def test_history_keeps_only_the_configured_number_of_revisions(js, unique_name):
    bucket = js.create_key_value(KeyValueSpec(unique_name, history=2))
    for value in (b"1", b"2", b"3"):
        bucket.put("k", value)

    assert [e.value for e in bucket.history("k")] == [b"2", b"3"]


def test_history_of_a_never_written_key_raises_key_not_found(bucket):
    with pytest.raises(KeyNotFoundError):
        bucket.history("missing")


def test_history_read_at_once_after_the_writes_sees_every_revision(bucket):
    # nats-py's own history is a watch that could end before its first delivery arrived
    # (a loaded CI machine read a key with revisions as never written); ours reads each one.
    for round_ in range(20):
        key = f"k{round_}"
        written = [bucket.put(key, b"%d" % i) for i in range(3)]
        assert [e.revision for e in bucket.history(key)] == written


# -- watch ---------------------------------------------------------------------------------


def test_watch_yields_the_latest_value_then_a_put_made_during_the_watch(bucket):
    bucket.put("k", b"1")
    bucket.put("k", b"2")
    updates = bucket.watch("k", timeout=30)

    initial = next(updates)
    revision = bucket.put("k", b"3")
    seen = next(updates)
    updates.close()

    assert (initial.value, initial.operation) == (b"2", KvOperation.PUT)
    assert (seen.key, seen.value, seen.revision) == ("k", b"3", revision)


def test_watch_returns_when_the_timeout_passes(bucket):
    bucket.put("k", b"v")

    entries = list(bucket.watch(">", timeout=1))

    assert [e.value for e in entries] == [b"v"]


def test_watch_of_an_empty_bucket_yields_nothing_until_the_timeout(bucket):
    assert list(bucket.watch(timeout=1)) == []


def test_watch_with_history_yields_every_kept_revision(bucket):
    for value in (b"1", b"2", b"3"):
        bucket.put("k", value)

    entries = list(bucket.watch("k", timeout=1, include_history=True))

    assert [e.value for e in entries] == [b"1", b"2", b"3"]


def test_watch_filters_keys_by_pattern(bucket):
    bucket.put("files.a", b"1")
    bucket.put("files.b.c", b"2")
    bucket.put("other", b"3")

    star = list(bucket.watch("files.*", timeout=1))
    rest = list(bucket.watch("files.>", timeout=1))

    assert [e.key for e in star] == ["files.a"]
    assert sorted(e.key for e in rest) == ["files.a", "files.b.c"]


def test_watch_reports_a_delete_as_a_del_entry(bucket):
    bucket.put("k", b"v")
    updates = bucket.watch("k", timeout=30)
    next(updates)

    bucket.delete("k")
    seen = next(updates)
    updates.close()

    assert (seen.key, seen.operation, seen.value) == ("k", KvOperation.DEL, b"")


def test_watch_ignoring_deletes_skips_tombstones(bucket):
    bucket.put("gone", b"v")
    bucket.delete("gone")
    bucket.put("kept", b"v")

    entries = list(bucket.watch(timeout=1, ignore_deletes=True))

    assert [e.key for e in entries] == ["kept"]


@pytest.mark.parametrize("keys", ["", "a.>.b", "a b", "*a"])
def test_watch_with_a_bad_pattern_raises_invalid_argument(bucket, keys):
    with pytest.raises(InvalidArgumentError, match="invalid kv key"):
        bucket.watch(keys, timeout=1)


@pytest.mark.parametrize("timeout", [0, -1, float("inf")])
def test_watch_with_a_bad_timeout_raises_invalid_argument(bucket, timeout):
    with pytest.raises(InvalidArgumentError, match="timeout"):
        bucket.watch(timeout=timeout)


# -- status --------------------------------------------------------------------------------


def test_status_reflects_the_spec_and_the_stored_values(js, unique_name):
    spec = KeyValueSpec(
        unique_name,
        description="checkpoints",
        history=3,
        ttl=3600,
        max_value_size=1024,
        storage=Storage.MEMORY,
    )
    bucket = js.create_key_value(spec)
    bucket.put("a", b"1")
    bucket.put("a", b"2")
    bucket.put("b", b"3")

    status = bucket.status()

    assert status.bucket == unique_name
    assert (status.values, status.history, status.ttl) == (3, 3, 3600)
    assert (status.max_value_size, status.storage) == (1024, Storage.MEMORY)
    assert status.description == "checkpoints"
    assert status.bytes > 0


def test_status_of_a_bucket_without_ttl_reports_zero(bucket):
    assert bucket.status().ttl == 0


def test_a_value_larger_than_max_value_size_is_rejected_by_the_server(js, unique_name):
    bucket = js.create_key_value(KeyValueSpec(unique_name, max_value_size=8))
    bucket.put("k", b"x" * 8)

    with pytest.raises(ServerAPIError, match="exceeds maximum") as caught:
        bucket.put("k", b"x" * 9)

    error = caught.value
    assert (error.err_code, error.bucket, error.key) == (10054, unique_name, "k")
