"""Every `jsl` subcommand refuses what it cannot do before any work: one line that names the
bad value (and, for a name the project does not declare, the declared ones), with its exit
status, and no Spark session started (the factory raises here) and no NATS server asked (the
URL is one nothing listens on).

The command runs in this process (`pipelines.cli.main.main`), as `jsl` would, on a dg project
that declares one stream with a contract, with an empty table root. The line checked is the
first the command says after `jsl`'s first line (`data: ...`): on stderr, after argparse's
usage lines, else on stdout.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.cli.main import main
from resources.spark import SparkResource
from tests.pipelines.cli.commands.test_rejudge_command import PYPROJECT, STRICT, _declare
from tests.pipelines.cli.test_first_line import NOWHERE
from tests.pipelines.components.test_stream_component import DEFINITIONS

STREAM = "BADINPUT"
RULES = (
    "parseable_json, known_event_type, required_fields_present, field_types_valid, "
    "event_id_unique, currency_in_allowed_values"
)
RETRY = ["quarantine", "retry", "--stream", STREAM, *NOWHERE[:2]]
REBUILD = ["silver", "rebuild", "--stream", STREAM, *NOWHERE[:2]]

# argv, exit status, the line the command says first ({project}, {root}: the test's).
BAD_INPUT = [
    (["setup", "--yes"], 2, "jsl: error: unrecognized arguments: --yes"),
    (
        ["demo", "--events", "-5"],
        2,
        "jsl demo: error: --events is 1 or more and --bad-share from 0 to 1; got -5 and 0.05",
    ),
    (
        ["demo", "--bad-share", "1.5"],
        2,
        "jsl demo: error: --events is 1 or more and --bad-share from 0 to 1; got 1000 and 1.5",
    ),
    (["dev"], 1, "jsl dev: error: JSL_NATS_REPLICAS must be a number from 1"),
    (
        ["provision", "--timeout", "0", *NOWHERE[:2]],
        1,
        "jsl provision: error: --timeout must be positive, got 0.0",
    ),
    (
        ["generate", "--bad-share", "2", *NOWHERE],
        1,
        "jsl generate: error: bad_share must be between 0 and 1 (e.g. 0.05), got 2.0",
    ),
    (
        ["artifacts", "list", "--timeout", "-1", *NOWHERE[:2]],
        1,
        "jsl artifacts: error: --timeout must be positive, got -1.0",
    ),
    (
        ["artifacts", "get", "x", "-o", "/no/such/dir/x", *NOWHERE],
        1,
        "jsl artifacts: error: cannot write to '/no/such/dir/x': give a file path in an "
        "existing directory",
    ),
    (["status", "--timeout", "0", *NOWHERE[:2]], 1, "jsl status: error: --timeout must be"),
    (["tables", "--sample", "-1"], 2, "jsl tables: --sample is a number of rows, 0 or more"),
    (["tables"], 1, "jsl tables: no table written yet under {root} (the project declares 3)"),
    (
        ["contract", "diff"],
        0,
        f"stream {STREAM}: no silver tables yet at {{root}}; the first run creates them",
    ),
    (["contract", "check"], 2, "jsl contract: error: argument action: invalid choice: 'check'"),
    (
        ["quarantine", "retry", "--stream", "NOPE"],
        2,
        f"jsl quarantine retry: project {{project}} declares no stream 'NOPE' with a contract; "
        f"declared: {STREAM}",
    ),
    (
        [*RETRY, "--rule", "no_such_rule"],
        2,
        f"jsl quarantine retry: the contract of stream {STREAM!r} has no rule 'no_such_rule'; its "
        f"rules: {RULES} (the rows of a rule since removed: select no rule)",
    ),
    (
        [*RETRY, "--event-type", "NoSuchEvent"],
        2,
        f"jsl quarantine retry: the contract of stream {STREAM!r} has no event type 'NoSuchEvent'; "
        "its event types: OrderPlaced",
    ),
    (
        [*RETRY, "--first-seq", "-5"],
        2,
        "jsl quarantine retry: first_seq -5 is not a stream sequence: they start at 1",
    ),
    (
        [*RETRY, "--since", "2026-02-01", "--until", "2026-01-01"],
        2,
        "jsl quarantine retry: since 2026-02-01T00:00:00+00:00 is not before until "
        "2026-01-01T00:00:00+00:00",
    ),
    (
        RETRY,
        1,
        "jsl quarantine retry: no bronze table 'bronze/shop' at {root}/bronze/shop (tables: "
        "{root}): nothing to judge; run the ingest first, or set LAKEHOUSE_ROOT to where the "
        "tables are",
    ),
    (
        [*REBUILD, "--first-seq", "9", "--last-seq", "3"],
        2,
        "jsl silver rebuild: first_seq 9 is after last_seq 3",
    ),
    (
        [*REBUILD, "--event-type", "Nope"],
        2,
        f"jsl silver rebuild: the contract of stream {STREAM!r} has no event type 'Nope'; "
        "its event types: OrderPlaced",
    ),
    (
        [*REBUILD, "--rule", "currency_in_allowed_values"],
        2,
        "jsl: error: unrecognized arguments: --rule currency_in_allowed_values",
    ),
    (REBUILD, 1, "jsl silver rebuild: no bronze table 'bronze/shop' at {root}/bronze/shop"),
]


@pytest.fixture(scope="module")
def declared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dg project declaring STREAM with the strict contract, shared by the module's tests."""
    root = tmp_path_factory.mktemp("bad-input") / "shop-project"
    package = root / "shop_badinput"
    (package / "defs").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT.format(module="shop_badinput"))
    (package / "__init__.py").write_text("")
    (package / "definitions.py").write_text(DEFINITIONS)
    (package / "defs" / "__init__.py").write_text("")
    _declare(root, STREAM, STRICT)
    return root.resolve()


def said_first(out: str, err: str) -> str:
    """The first line the command says after `jsl`'s first line, skipping argparse's usage."""
    for line in err.splitlines():
        if line.strip() and not line.startswith(("usage:", " ")):
            return line
    lines = [line for line in out.splitlines() if not line.startswith("data: ")]
    return lines[0] if lines else ""


@pytest.mark.parametrize(
    ("argv", "status", "first"), BAD_INPUT, ids=[" ".join(row[0][:3]) for row in BAD_INPUT]
)
def test_bad_input_is_refused_in_one_line_before_spark_starts(
    argv, status, first, declared, tmp_path, monkeypatch, capsys
):
    root = tmp_path / "lakehouse"
    for name in ("LAKEHOUSE_DATA_DIR", "DAGSTER_HOME", "NATS_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LAKEHOUSE_ROOT", str(root))
    monkeypatch.setenv("JSL_NATS_REPLICAS", "7" if argv[0] == "dev" else "")
    monkeypatch.chdir(declared)

    def no_spark(self):
        raise AssertionError("a Spark session was started")

    monkeypatch.setattr(SparkResource, "get_session", no_spark)

    try:
        code = main(argv)
    except SystemExit as exit:  # argparse
        code = exit.code

    out, err = capsys.readouterr()
    assert code == status, err
    assert said_first(out, err).startswith(first.format(project=declared, root=root)), err
    assert len([line for line in err.splitlines() if line.startswith("jsl")]) <= 1
