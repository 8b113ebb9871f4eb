"""`jsl artifacts list|get`, run in-process against the session's real nats-server."""

from __future__ import annotations

import argparse
import hashlib
import os
import socket

import pytest

from pipelines.cli.commands.artifacts import add_arguments, run
from pipelines.lakehouse.artifacts import HTML_TYPE, JSON_TYPE, ArtifactStore
from resources.jetstream import ObjectStoreSpec

ASSET = "silver/file_deleted"


def jsl_artifacts(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="jsl artifacts")
    add_arguments(parser)
    return run(parser.parse_args(list(argv)))


@pytest.fixture
def store(js, unique_name) -> ArtifactStore:
    """A bucket holding two runs' artifacts."""
    js.create_object_store(ObjectStoreSpec(unique_name))
    store = ArtifactStore(js, unique_name)
    store.put(f"runs/r1/{ASSET}/validation.json", b'{"success": true}', content_type=JSON_TYPE)
    store.put(f"runs/r1/{ASSET}/report.html", b"<h1>ok</h1>", content_type=HTML_TYPE)
    store.put(f"runs/r2/{ASSET}/report.html", b"<h1>r2</h1>", content_type=HTML_TYPE)
    return store


@pytest.fixture
def server(nats_server, store) -> list[str]:
    """The options that point the command at the test server and bucket."""
    return ["--nats-url", nats_server.url, "--bucket", store.bucket]


def test_list_by_run_prints_name_size_content_type_and_short_sha256(server, capsys):
    assert jsl_artifacts("list", "--run", "r1", *server) == 0

    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["NAME", "SIZE", "CONTENT", "TYPE", "SHA256"]
    assert [line.split()[:3] for line in lines[1:]] == [
        [f"runs/r1/{ASSET}/report.html", "11", "text/html;"],
        [f"runs/r1/{ASSET}/validation.json", "17", "application/json"],
    ]
    assert lines[1].split()[-1] == hashlib.sha256(b"<h1>ok</h1>").hexdigest()[:12]


def test_list_uses_nats_url_from_the_environment_by_default(
    nats_server, store, monkeypatch, capsys
):
    monkeypatch.setenv("NATS_URL", nats_server.url)

    assert jsl_artifacts("list", "--prefix", "runs/r2/", "--bucket", store.bucket) == 0

    assert f"runs/r2/{ASSET}/report.html" in capsys.readouterr().out


def test_list_with_nothing_under_the_prefix_says_so_and_succeeds(server, capsys):
    assert jsl_artifacts("list", "--prefix", "runs/none/", *server) == 0

    captured = capsys.readouterr()
    assert captured.out == ""
    assert "no artifacts under 'runs/none/'" in captured.err


def test_get_writes_the_bytes_to_a_file(server, tmp_path, capsys):
    target = tmp_path / "report.html"

    assert jsl_artifacts("get", f"runs/r1/{ASSET}/report.html", "-o", str(target), *server) == 0

    assert target.read_bytes() == b"<h1>ok</h1>"
    assert "11 bytes" in capsys.readouterr().out
    assert os.listdir(tmp_path) == ["report.html"]  # no temporary file left


def test_get_writes_the_raw_bytes_to_stdout(js, nats_server, store, capsysbinary):
    data = bytes(range(256)) * 4
    store.put("runs/r3/x/blob.bin", data, content_type="application/octet-stream")

    code = jsl_artifacts(
        "get", "runs/r3/x/blob.bin", "--nats-url", nats_server.url, "--bucket", store.bucket
    )

    assert code == 0
    assert capsysbinary.readouterr().out == data


def test_get_of_a_missing_object_fails_with_one_line_naming_it(server, capsys):
    assert jsl_artifacts("get", "runs/r1/nope.json", *server) == 1

    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert "has no artifact 'runs/r1/nope.json'" in captured.err


def test_get_into_a_missing_directory_fails_before_connecting(tmp_path, capsys):
    target = tmp_path / "no" / "such.html"

    assert jsl_artifacts("get", "a", "-o", str(target), "--nats-url", "nats://127.0.0.1:1") == 1

    assert "existing directory" in capsys.readouterr().err


def test_a_missing_bucket_fails_with_one_line_saying_how_to_provision_it(
    nats_server, unique_name, capsys
):
    assert jsl_artifacts("list", "--nats-url", nats_server.url, "--bucket", unique_name) == 1

    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"object store {unique_name!r}" in err and "make demo" in err


def test_an_unreachable_server_fails_with_one_line_naming_it(capsys):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"nats://127.0.0.1:{sock.getsockname()[1]}"  # nothing listens once closed

    assert jsl_artifacts("list", "--nats-url", url, "--timeout", "1") == 1

    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert url in err


def test_embedded_without_a_demo_store_says_to_run_the_demo(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LAKEHOUSE_DATA_DIR", str(tmp_path))

    assert jsl_artifacts("list", "--embedded") == 1

    assert "make demo" in capsys.readouterr().err


def test_embedded_starts_a_server_on_the_demo_store(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LAKEHOUSE_DATA_DIR", str(tmp_path))
    (tmp_path / "nats").mkdir()

    assert jsl_artifacts("list", "--embedded") == 1  # a fresh store has no artifacts bucket

    assert "object store 'lakehouse-artifacts' (run artifacts) does not exist" in (
        capsys.readouterr().err
    )
