"""docs/components.md's reference is the one generated from the component's models."""

from pathlib import Path

from pipelines.components.reference import reference_markdown

DOC = Path(__file__).resolve().parents[3] / "docs" / "components.md"


def test_the_documented_reference_is_the_generated_one() -> None:
    text = DOC.read_text()
    documented = text.split("<!-- reference:start -->\n", 1)[1].split("<!-- reference:end -->")[0]

    assert documented == reference_markdown() + "\n", (
        "docs/components.md is out of date: paste `python -m pipelines.components.reference`"
    )
