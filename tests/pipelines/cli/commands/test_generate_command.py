"""`jsl generate`, run in-process against a real nats-server of its own per test."""

import argparse
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipelines.cli.commands import generate
from pipelines.file_trash.generator import BAD_KINDS
from pipelines.file_trash.topology import FILE_TRASH_TOPOLOGY
from resources.jetstream import EmbeddedNatsServer, JetStreamResource, reconcile


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="jsl generate")
    generate.add_arguments(parser)
    return parser.parse_args(list(argv))


def stream_messages(url: str) -> int:
    with JetStreamResource(servers=url).client() as js:
        return js.streams.info("FILE_EVENTS").messages


@pytest.fixture
def bare_server(tmp_path: Path) -> Iterator[str]:
    """A nats-server of this test's own, with nothing provisioned."""
    with EmbeddedNatsServer(store_dir=tmp_path / "nats") as server:
        yield server.url


@pytest.fixture
def provisioned_server(bare_server: str) -> str:
    """This test's nats-server with the file trash topology (stream FILE_EVENTS) reconciled."""
    with JetStreamResource(servers=bare_server).client() as js:
        reconcile(js, FILE_TRASH_TOPOLOGY)
    return bare_server


def test_generate_publishes_the_mix_and_sums_it_up_in_one_line(provisioned_server, capsys):
    args = parse("--count", "70", "--bad-share", "0.1", "--seed", "3")
    args.nats_url = provisioned_server

    assert generate.run(args) == 0

    out = capsys.readouterr().out.strip().splitlines()
    assert out == [
        "jsl generate: published 70 to FILE_EVENTS (files.deleted), 0 duplicates; "
        f"seq 1-70; kinds: good 63, {', '.join(f'{kind} 1' for kind in BAD_KINDS)}"
    ]
    assert stream_messages(provisioned_server) == 70


def test_the_same_seed_again_publishes_only_duplicates(provisioned_server, capsys):
    argv = ("--count", "30", "--bad-share", "0.2", "--seed", "4", "--nats-url")
    assert generate.run(parse(*argv, provisioned_server)) == 0

    assert generate.run(parse(*argv, provisioned_server)) == 0

    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert "published 30 to FILE_EVENTS (files.deleted), 30 duplicates; nothing new stored" in last
    assert stream_messages(provisioned_server) == 30


def test_a_paced_run_completes(provisioned_server, capsys):
    args = parse("--count", "40", "--rate", "400", "--nats-url", provisioned_server)

    assert generate.run(args) == 0
    assert stream_messages(provisioned_server) == 40


def test_a_missing_stream_exits_non_zero_naming_it_and_how_to_create_it(bare_server, capsys):
    assert generate.run(parse("--count", "5", "--nats-url", bare_server)) == 1

    captured = capsys.readouterr()
    assert captured.out == ""
    [line] = captured.err.strip().splitlines()
    assert line.startswith("jsl generate: error: stream 'FILE_EVENTS' does not exist")
    assert "make demo" in line and "jsl dev" in line and "--provision" in line


def test_provision_creates_the_topology_then_publishes(bare_server, capsys):
    args = parse("--count", "12", "--provision", "--nats-url", bare_server)

    assert generate.run(args) == 0

    out = capsys.readouterr().out
    assert "jsl generate: stream 'FILE_EVENTS': created" in out
    assert "consumer 'FILE_EVENTS/lakehouse-bronze': created" in out
    assert stream_messages(bare_server) == 12


def test_embedded_starts_a_server_on_the_demo_store(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LAKEHOUSE_DATA_DIR", str(tmp_path / "data"))

    assert generate.run(parse("--count", "3", "--embedded", "--provision")) == 0

    assert "published 3 to FILE_EVENTS" in capsys.readouterr().out
    assert (tmp_path / "data" / "nats").is_dir()


def test_an_unreachable_server_is_a_one_line_error_not_a_traceback(capsys):
    args = parse("--count", "5", "--nats-url", "nats://127.0.0.1:1", "--timeout", "0.5")

    assert generate.run(args) == 1

    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("jsl generate: error: cannot connect to NATS server nats://127.0.0.1:1")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--bad-share", "1.5"), "bad_share must be between 0 and 1"),
        (("--count", "-3"), "count must be an integer >= 0"),
        (("--rate", "0"), "rate must be a positive number"),
        (("--timeout", "0"), "--timeout must be positive"),
        (("--embedded",), "give either --nats-url or --embedded"),
    ],
)
def test_bad_arguments_fail_before_connecting(argv, message, capsys):
    # The URL points nowhere with a long timeout: connecting first would fail differently.
    args = parse(*argv, "--nats-url", "nats://127.0.0.1:1")
    if "--timeout" not in argv:
        args.timeout = 60.0

    assert generate.run(args) == 1
    assert message in capsys.readouterr().err
