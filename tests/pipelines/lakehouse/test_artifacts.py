"""Run artifacts in the Object Store, against the session's real nats-server."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os

import pytest

from pipelines.file_trash.topology import ARTIFACTS
from pipelines.lakehouse.artifacts import (
    ARTIFACTS_BUCKET,
    HTML_TYPE,
    JSON_TYPE,
    ArtifactStore,
    RunManifest,
    StoredArtifact,
    TableState,
    artifact_name,
    run_prefix,
)
from resources.jetstream import ObjectStoreSpec
from resources.jetstream.errors import (
    BucketNotFoundError,
    InvalidArgumentError,
    ObjectCorruptedError,
    ObjectNotFoundError,
)

MIB = 1024 * 1024
NOW = dt.datetime(2024, 6, 1, 12, 30, 15, 123456, tzinfo=dt.timezone.utc)
ASSET = "silver/file_deleted"


@pytest.fixture
def store(js, unique_name) -> ArtifactStore:
    """An artifact store on a fresh bucket."""
    js.create_object_store(ObjectStoreSpec(unique_name))
    return ArtifactStore(js, unique_name)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def manifest(run_id: str = "run-1", **changes) -> RunManifest:
    fields = {
        "run_id": run_id,
        "asset": ASSET,
        "created_at": NOW,
        "ranges": {"bronze/file_events": (101, 250)},
        "tables": (
            TableState("silver/file_deleted", "/lake/silver/file_deleted", 7, 140, 40),
            TableState("quarantine", "/lake/quarantine", None, None),
        ),
        "checks": {"required_fields_present": True, "event_id_unique": False},
        "extra": {"trash_retention_days": 30, "ratio": 0.25, "mode": "incremental", "ok": True},
    }
    return RunManifest(**(fields | changes))


# -- names and the manifest (no I/O) ---------------------------------------------------------


def test_the_artifacts_bucket_is_the_one_the_topology_declares():
    assert ARTIFACTS.bucket == ARTIFACTS_BUCKET


def test_artifact_name_is_runs_run_id_asset_path_file():
    assert artifact_name("r-1", "silver/file_deleted", "validation.json") == (
        "runs/r-1/silver/file_deleted/validation.json"
    )
    assert run_prefix("r-1") == "runs/r-1/"


@pytest.mark.parametrize(
    ("run_id", "asset", "file"),
    [
        ("", ASSET, "a.json"),
        ("r/1", ASSET, "a.json"),
        ("..", ASSET, "a.json"),
        ("r-1", "", "a.json"),
        ("r-1", "silver//file_deleted", "a.json"),
        ("r-1", "silver/../gold", "a.json"),
        ("r-1", "/silver", "a.json"),
        ("r-1", ASSET, ""),
        ("r-1", ASSET, "../a.json"),
        ("r-1", ASSET, "a\n.json"),
    ],
)
def test_artifact_name_rejects_empty_dot_dot_and_control_parts(run_id, asset, file):
    with pytest.raises(InvalidArgumentError, match="invalid"):
        artifact_name(run_id, asset, file)


def test_manifest_round_trips_through_json():
    original = manifest(
        artifacts=(StoredArtifact("b", "runs/run-1/x/a.html", 3, "ab" * 32, HTML_TYPE, "d"),)
    )

    assert RunManifest.from_json(original.to_json()) == original


def test_manifest_json_is_stable_with_sorted_keys_and_a_utc_iso_timestamp():
    in_paris = NOW.astimezone(dt.timezone(dt.timedelta(hours=2)))
    text = manifest(created_at=in_paris).to_json()
    doc = json.loads(text)

    assert text == manifest().to_json()
    assert text == (json.dumps(doc, sort_keys=True, indent=2) + "\n").encode()
    assert doc["created_at"] == "2024-06-01T12:30:15.123456+00:00"
    assert doc["ranges"] == {"bronze/file_events": [101, 250]}
    assert doc["tables"][1] == {
        "table": "quarantine",
        "path": "/lake/quarantine",
        "version": None,
        "rows": None,
        "rows_written": None,
    }


def test_manifest_from_json_ignores_unknown_fields():
    doc = json.loads(manifest().to_json())
    doc["added_later"] = {"x": 1}
    doc["tables"][0]["added_later"] = 1

    assert RunManifest.from_json(json.dumps(doc).encode()) == manifest()


@pytest.mark.parametrize("data", [b"not json", b"[]", b'{"run_id": "r"}', b'{"asset": 1}'])
def test_manifest_from_json_rejects_what_is_not_a_manifest(data):
    with pytest.raises(InvalidArgumentError, match="not a run manifest"):
        RunManifest.from_json(data)


def test_manifest_rejects_a_naive_timestamp_and_non_scalar_extras():
    with pytest.raises(InvalidArgumentError, match="timezone-aware"):
        manifest(created_at=dt.datetime(2024, 6, 1))
    with pytest.raises(InvalidArgumentError, match="'rows'"):
        manifest(extra={"rows": [1, 2]})
    with pytest.raises(InvalidArgumentError, match="'ratio'"):
        manifest(extra={"ratio": float("nan")})


# -- put, get, list -----------------------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 11, 3 * MIB + 7])
def test_put_then_get_round_trips_the_bytes_with_content_type_and_sha256(store, size):
    data = os.urandom(size)

    stored = store.put("runs/r/x/blob.bin", data, content_type="application/octet-stream")

    assert store.get("runs/r/x/blob.bin") == data
    assert stored == StoredArtifact(
        store.bucket, "runs/r/x/blob.bin", size, sha256(data), "application/octet-stream", ""
    )
    assert store.list() == [stored]


def test_get_detects_bytes_overwritten_without_their_checksum(js, store):
    store.put("runs/r/x/report.html", b"<p>good</p>", content_type=HTML_TYPE)
    raw = js.object_store(store.bucket)
    raw.put_bytes(  # another writer keeps the old metadata with new bytes
        "runs/r/x/report.html",
        b"<p>evil</p>",
        headers={"Content-Type": HTML_TYPE},
        metadata={"sha256": sha256(b"<p>good</p>")},
    )

    with pytest.raises(ObjectCorruptedError) as caught:
        store.get("runs/r/x/report.html")

    assert (caught.value.bucket, caught.value.key) == (store.bucket, "runs/r/x/report.html")
    assert repr(store.bucket) in str(caught.value)
    assert "'runs/r/x/report.html'" in str(caught.value)
    assert "put it again" in str(caught.value)


def test_an_object_put_by_another_client_reads_back_with_the_digest_as_sha256(js, store):
    js.object_store(store.bucket).put_bytes("foreign.txt", b"hello")

    assert store.get("foreign.txt") == b"hello"
    [listed] = store.list()
    assert (listed.sha256, listed.content_type) == (sha256(b"hello"), "application/octet-stream")


def test_list_by_run_prefix_returns_that_runs_artifacts_sorted_without_deleted_ones(js, store):
    for name in ["runs/r2/a/z.json", "runs/r1/b/y.json", "runs/r1/a/x.json", "runs/r10/a/x.json"]:
        store.put(name, name.encode(), content_type=JSON_TYPE)
    store.put("runs/r1/a/gone.json", b"{}", content_type=JSON_TYPE)
    js.object_store(store.bucket).delete("runs/r1/a/gone.json")

    listed = store.list(run_prefix("r1"))

    assert [a.name for a in listed] == ["runs/r1/a/x.json", "runs/r1/b/y.json"]
    assert [a.sha256 for a in listed] == [sha256(a.name.encode()) for a in listed]
    assert store.list("runs/none/") == []


# -- put_run ----------------------------------------------------------------------------------


def test_put_run_writes_the_files_then_a_manifest_listing_them_with_their_sha256(js, store):
    files = {
        "validation.json": (b'{"success": true}', JSON_TYPE),
        "report.html": (b"<h1/>", HTML_TYPE),
    }

    stored = store.put_run(run_id="run-1", asset=ASSET, files=files, manifest=manifest())

    names = [artifact.name for artifact in stored]
    assert names == [
        f"runs/run-1/{ASSET}/validation.json",
        f"runs/run-1/{ASSET}/report.html",
        f"runs/run-1/{ASSET}/manifest.json",
    ]
    with js.object_store(store.bucket).watch(timeout=30, include_history=True) as watch:
        assert [next(watch).name for _ in names] == names  # stream order: the manifest last
    written = store.get_manifest("run-1", ASSET)
    assert written == manifest(artifacts=stored[:2])
    for artifact in written.artifacts:
        assert artifact.sha256 == sha256(store.get(artifact.name))
    assert stored[2].sha256 == sha256(store.get(stored[2].name))
    assert store.list(run_prefix("run-1")) == sorted(stored, key=lambda a: a.name)


def test_put_run_checks_the_manifest_and_names_before_storing_anything(store):
    files = {"a.json": (b"{}", JSON_TYPE)}

    with pytest.raises(InvalidArgumentError, match="not run 'run-2'"):
        store.put_run(run_id="run-2", asset=ASSET, files=files, manifest=manifest())
    with pytest.raises(InvalidArgumentError, match=r"manifest\.json"):
        store.put_run(
            run_id="run-1",
            asset=ASSET,
            files={"manifest.json": (b"{}", JSON_TYPE)},
            manifest=manifest(),
        )
    with pytest.raises(InvalidArgumentError, match="content_type"):
        store.put_run(
            run_id="run-1",
            asset=ASSET,
            files={"a.json": (b"{}", JSON_TYPE), "b": (b"", "")},
            manifest=manifest(),
        )
    assert store.list() == []


# -- errors -------------------------------------------------------------------------------------


def test_a_missing_bucket_is_named_with_how_to_provision_it(js, unique_name):
    store = ArtifactStore(js, unique_name)  # no I/O yet

    for call in (
        store.list,
        lambda: store.get("a"),
        lambda: store.put("a", b"", content_type="x/y"),
    ):
        with pytest.raises(BucketNotFoundError) as caught:
            call()
        assert caught.value.bucket == unique_name
        assert f"object store {unique_name!r}" in str(caught.value)
        assert "make demo" in str(caught.value) and "reconcile" in str(caught.value)


def test_a_missing_object_is_named_with_its_bucket(store):
    with pytest.raises(ObjectNotFoundError) as caught:
        store.get("runs/r/x/nope.json")

    assert (caught.value.bucket, caught.value.key) == (store.bucket, "runs/r/x/nope.json")
    assert f"object store {store.bucket!r} has no artifact 'runs/r/x/nope.json'" in str(
        caught.value
    )
    assert "jsl artifacts list" in str(caught.value)


def test_a_manifest_object_that_is_not_a_manifest_is_reported_as_corrupted(store):
    store.put(artifact_name("run-1", ASSET, "manifest.json"), b"{}", content_type=JSON_TYPE)

    with pytest.raises(ObjectCorruptedError, match="is not a run manifest"):
        store.get_manifest("run-1", ASSET)
