"""The reference of the components' fields, generated from their models for docs/components.md
(`python -m pipelines.components.reference` prints it; a test keeps the doc in sync)."""

from __future__ import annotations

import typing

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from pipelines.components.models import (
    AggregateModel,
    EnvelopeModel,
    IngestModel,
    StreamModel,
    TimeModel,
)
from pipelines.components.stream import JetStreamStream

SECTIONS: tuple[tuple[str, type[BaseModel]], ...] = (
    ("`JetStreamStream` attributes", JetStreamStream),
    ("`stream`", StreamModel),
    ("each of `ingests`", IngestModel),
    ("`envelope` (with `asyncapi_file` or `json_schema_files`)", EnvelopeModel),
    ("each of `aggregates`", AggregateModel),
    ("`time` (of an aggregate)", TimeModel),
)


def _type(annotation: object) -> str:
    text = str(annotation).replace("typing.", "")
    for model in (StreamModel, IngestModel, EnvelopeModel, AggregateModel, TimeModel):
        text = text.replace(f"{model.__module__}.{model.__name__}", model.__name__)
    if isinstance(annotation, type):
        return annotation.__name__
    return text.replace("NoneType", "None").replace(" | ", " or ")


def _default(field) -> str:
    if field.default_factory is not None:
        return f"`{field.default_factory()!r}`"
    if field.default is PydanticUndefined:
        return "required"
    return f"`{field.default!r}`"


def reference_markdown() -> str:
    """One table per model: field, type, default, description."""
    lines = []
    for title, model in SECTIONS:
        lines += [f"### {title}", "", "| field | type | default | what |", "|---|---|---|---|"]
        hints = typing.get_type_hints(model)
        for name, field in model.model_fields.items():
            lines.append(
                f"| `{name}` | `{_type(hints[name])}` | {_default(field)} | "
                f"{field.description or ''} |"
            )
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(reference_markdown())
