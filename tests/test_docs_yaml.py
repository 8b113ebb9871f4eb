"""Every YAML block of README.md and docs/*.md that declares a `JetStreamStream` component (a
`defs.yaml`: `type: ...JetStreamStream`) or a contract (the YAML dialect: `envelope:` or
`events:` at its top) loads with the project's own loaders, as printed; so a reader who copies
one gets what the docs say. (tests/test_docs_commands.py does the same for shell commands.)

A block that is deliberately a part of one (a few attributes to add beside others) is marked
by the line `<!-- partial: why -->` right before its fence, and is only parsed as YAML.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from pipelines.components.stream import JetStreamStream
from pipelines.contract import read_contract

PROJECT = Path(__file__).resolve().parents[1]
DOCS = [PROJECT / "README.md", *sorted((PROJECT / "docs").glob("*.md"))]
FENCE = re.compile(r"^([^\n]*)\n```yaml\n(.*?)^```", re.S | re.M)
PARTIAL = "<!-- partial:"
FIXTURES = PROJECT / "tests" / "pipelines" / "contract" / "fixtures"
# The files the documented components name, beside their defs.yaml: the guide's ORDERS contract
# (the same as docs/contract.md prints) and the official AsyncAPI example docs/asyncapi.md reads.
FILES = {
    "orders.yaml": FIXTURES / "orders.yaml",
    "streetlights-kafka-asyncapi.yml": FIXTURES / "public" / "streetlights-kafka-3.1.yml",
}


def documented_blocks() -> list[pytest.param]:
    """Each YAML block of the docs, with the line before its fence, as `doc:line` params."""
    blocks = []
    for doc in DOCS:
        text = doc.read_text()
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start(2)) + 1
            name = f"{doc.relative_to(PROJECT)}:{line}"
            blocks.append(pytest.param(match.group(2), match.group(1), id=name))
    return blocks


def kind(block: dict) -> str | None:
    """'component', 'contract' or None (another kind of YAML: dagster.yaml, run config, ...)."""
    if str(block.get("type", "")).endswith("JetStreamStream"):
        return "component"
    if "envelope" in block or "events" in block:
        return "contract"
    return None


def test_the_docs_declare_components_and_contracts():
    kinds = [kind(yaml.safe_load(p.values[0])) for p in documented_blocks()]

    assert kinds.count("component") >= 3 and kinds.count("contract") >= 5


@pytest.mark.parametrize(("text", "before"), documented_blocks())
def test_a_documented_component_or_contract_loads_as_printed(text, before, tmp_path):
    block = yaml.safe_load(text)
    if before.startswith(PARTIAL) or not isinstance(block, dict) or kind(block) is None:
        return
    (tmp_path / "defs.yaml").write_text(text)
    if kind(block) == "contract":
        read_contract(tmp_path / "defs.yaml")
        return
    stream = JetStreamStream(**block["attributes"])
    for name in (stream.contract_file, stream.asyncapi_file, *(stream.json_schema_files or ())):
        if name is not None:
            shutil.copy(FILES[name], tmp_path / name)
    stream.read_contract(tmp_path)
    stream.topology()
