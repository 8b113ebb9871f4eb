"""Every AsyncAPI document the tests read, and the project's docs/asyncapi.yaml, is valid
AsyncAPI as the AsyncAPI initiative's own parser (`@asyncapi/parser`, pinned in
tests/interop/package.json) judges it: no error-severity diagnostic. Without node or
`npm ci --prefix tests/interop`, these tests skip, saying why."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from pipelines.cli.asyncapi import DOCUMENT
from pipelines.settings import PROJECT_DIR

INTEROP = PROJECT_DIR / "tests" / "interop"
FIXTURES = Path(__file__).parent / "fixtures"
DOCUMENTS = sorted(
    [*FIXTURES.rglob("*.asyncapi.yaml"), *(FIXTURES / "public").glob("*.yml"), DOCUMENT]
)
ERROR = 0  # Spectral's severities: 0 error, 1 warning, 2 information, 3 hint

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or not (INTEROP / "node_modules" / "@asyncapi").is_dir(),
    reason="AsyncAPI validation needs node and `npm ci --prefix tests/interop` (make test does it)",
)


def validate(*paths: Path) -> dict[str, dict]:
    """`asyncapi_validate.mjs` over `paths`: per file, its version and diagnostics."""
    done = subprocess.run(
        ["node", str(INTEROP / "asyncapi_validate.mjs"), *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def verdicts() -> dict[str, dict]:
    return validate(*DOCUMENTS)


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: str(p.relative_to(PROJECT_DIR)))
def test_the_document_has_no_error_diagnostic(verdicts, path: Path) -> None:
    verdict = verdicts[str(path)]
    errors = [d for d in verdict["diagnostics"] if d["severity"] == ERROR]

    assert errors == [], f"{path}: {json.dumps(errors, indent=1)}"
    assert verdict["version"] is not None


def test_the_public_documents_are_2_6_and_3_1(verdicts) -> None:
    versions = {Path(f).name: v["version"] for f, v in verdicts.items() if "/public/" in f}

    assert versions == {
        "streetlights-kafka-2.6.yml": "2.6.0",
        "streetlights-kafka-3.1.yml": "3.1.0",
    }


def test_the_validator_reports_an_invalid_document(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        "asyncapi: 3.0.0\ninfo: {title: x, version: 1.0.0}\nchannels: {a: {address: 5}}\n"
    )

    (verdict,) = validate(broken).values()

    assert [d["path"] for d in verdict["diagnostics"] if d["severity"] == ERROR] == [
        "channels/a/address"
    ]
