"""`jsl provision`, run in-process against a real nats-server of its own per test."""

import argparse
import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipelines.cli.commands import provision
from pipelines.file_trash.topology import FILE_EVENTS, FILE_TRASH_TOPOLOGY
from resources.jetstream import EmbeddedNatsServer, JetStreamResource, reconcile

OBJECTS = 1 + 3 + 2 + 1  # the stream, three consumers, two KV buckets, one Object Store bucket


def parse(url: str, *argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="jsl provision")
    provision.add_arguments(parser)
    return parser.parse_args(["--nats-url", url, *argv])


def stream_names(url: str) -> list[str]:
    with JetStreamResource(servers=url).client() as js:
        return [s.spec.name for s in js.streams.list()]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    with EmbeddedNatsServer(store_dir=tmp_path / "nats") as embedded:
        yield embedded.url


def test_without_yes_a_server_that_is_not_embedded_is_only_shown_the_plan(server, capsys):
    assert provision.run(parse(server)) == 1

    out, err = capsys.readouterr()
    assert f"jsl provision: plan for {server} ({OBJECTS} to change):" in out
    assert "jsl provision:   stream 'FILE_EVENTS': created" in out
    assert "nothing was changed. Run again with --yes" in err
    assert stream_names(server) == []


def test_dry_run_prints_the_plan_and_changes_nothing(server, capsys):
    assert provision.run(parse(server, "--dry-run")) == 0

    out = capsys.readouterr().out
    assert out.count(": created") == OBJECTS
    assert out.rstrip().endswith("jsl provision: nothing changed (dry run)")
    assert stream_names(server) == []


def test_yes_applies_the_plan_and_a_second_run_has_nothing_to_do(server, capsys):
    assert provision.run(parse(server, "--yes")) == 0
    assert f"jsl provision: applied {OBJECTS} change(s)" in capsys.readouterr().out
    assert "FILE_EVENTS" in stream_names(server)

    # Without --yes too: nothing to change is not an error.
    assert provision.run(parse(server)) == 0
    out = capsys.readouterr().out
    assert "(0 to change)" in out and out.count(": unchanged") == OBJECTS


def test_the_plan_shows_each_drifted_field_with_its_old_and_new_value(server, capsys):
    drifted = dataclasses.replace(FILE_EVENTS, max_age=3600.0)
    with JetStreamResource(servers=server).client() as js:
        reconcile(js, dataclasses.replace(FILE_TRASH_TOPOLOGY, streams=(drifted,)))

    assert provision.run(parse(server, "--dry-run")) == 0

    out = capsys.readouterr().out
    assert f"stream 'FILE_EVENTS': updated (max_age: 3600.0 -> {FILE_EVENTS.max_age!r})" in out


def test_an_unreachable_server_is_one_line_naming_it(capsys):
    assert provision.run(parse("nats://127.0.0.1:1", "--timeout", "1")) == 1

    err = capsys.readouterr().err
    assert err.startswith("jsl provision: error: ") and "127.0.0.1:1" in err
    assert len(err.strip().splitlines()) == 1
