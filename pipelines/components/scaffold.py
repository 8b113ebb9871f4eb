"""`dg scaffold defs pipelines.components.JetStreamStream NAME --stream ORDERS`: a working
`defs.yaml` with the stream, one ingest and a one-event contract to edit.

With `--asyncapi FILE` (an AsyncAPI 2.x or 3.x document, relative to where dg runs or
absolute), the `defs.yaml` declares the document's stream instead: the file is copied
unedited beside the `defs.yaml` (`asyncapi_file`), the stream is named `--stream` (default:
the document's title in UPPER_SNAKE_CASE), its subjects are `--subjects` (default: the
addresses of the document's channels that are subjects, a `{param}` as `*`, less those
another one covers;
channels marked `x-jsl-stream` for another stream left out), and `tables` names each event
type's silver table (`silver/<stream>_<event type>`), read from the document as the
component will read it, so a document it cannot read fails here, saying why.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from dagster import Model
from dagster.components import Scaffolder, ScaffoldRequest, scaffold_component
from pydantic import Field


class JetStreamStreamScaffoldParams(Model):
    """`dg scaffold defs pipelines.components.JetStreamStream NAME --stream ORDERS`."""

    stream: str | None = Field(
        default=None, description="The stream's name (default EVENTS, or from --asyncapi)."
    )
    subjects: str | None = Field(
        default=None,
        description="Its subjects, comma-separated (default: name.>, or from --asyncapi).",
    )
    asyncapi: str | None = Field(
        default=None,
        description="An AsyncAPI 2.x or 3.x document: declare its stream (copied beside "
        "defs.yaml as asyncapi_file).",
    )


class JetStreamStreamScaffolder(Scaffolder[JetStreamStreamScaffoldParams]):
    """Writes a working `defs.yaml`: the stream, one ingest, a one-event contract (or the
    contract of an AsyncAPI document)."""

    @classmethod
    def get_scaffold_params(cls) -> type[JetStreamStreamScaffoldParams]:
        return JetStreamStreamScaffoldParams

    def scaffold(self, request: ScaffoldRequest[JetStreamStreamScaffoldParams]) -> None:
        params = request.params
        if params.asyncapi is not None:
            scaffold_component(request, asyncapi_attributes(request))
            return
        stream = params.stream or "EVENTS"
        lower = stream.lower()
        subjects = _split(params.subjects) or [f"{lower}.>"]
        scaffold_component(
            request,
            {
                "stream": {"name": stream, "subjects": subjects},
                "ingests": [_ingest(lower)],
                "contract": {
                    "envelope": {
                        "event_type": "eventType",
                        "event_id": "eventId",
                        "fields": {
                            "eventId": {"required": True},
                            "eventType": {"required": True},
                        },
                    },
                    "events": {
                        "ExampleEvent": {
                            "table": f"silver/{lower}_example",
                            "fields": {"data.name": {"type": "string", "required": True}},
                        }
                    },
                },
            },
        )


def asyncapi_attributes(request: ScaffoldRequest[JetStreamStreamScaffoldParams]) -> dict:
    """The attributes of the stream of `request.params.asyncapi`; copies the document into
    `request.target_path`.

    Raises:
        FileNotFoundError: the document is not there.
        ContractError: the document cannot be read as the stream's contract.
    """
    from pipelines.contract import read_asyncapi
    from pipelines.contract.asyncapi_channels import covers, read_channels
    from pipelines.contract.json_schema_reader import SchemaReader
    from pipelines.contract.model import snake_case
    from pipelines.contract.yaml_source import load_document

    params = request.params
    source = _find(params.asyncapi or "", request.project_root)
    document = load_document(source, yaml12=True)
    data: Any = document.data
    title = data.get("info", {}).get("title") if isinstance(data, dict) else None
    stream = params.stream or (re.sub(r"[^A-Za-z0-9]+", "_", title).strip("_").upper() or None)
    stream = stream or "EVENTS"
    subjects = _split(params.subjects)
    if not subjects:
        reader = SchemaReader(data, source=document.source, line_of=document.line_of)
        found = [
            c.subject
            for c in read_channels(reader, data)
            if c.address and c.mark in (None, stream) and all(map(_token, c.tokens))
        ]
        found = list(dict.fromkeys(found))
        subjects = [s for s in found if not any(o != s and covers(o, s) for o in found)]
    request.target_path.mkdir(parents=True, exist_ok=True)
    copy = request.target_path / source.name
    if copy.resolve() != source.resolve():
        shutil.copyfile(source, copy)
    contract = read_asyncapi(copy, stream=stream, subjects=subjects)
    lower = stream.lower()
    return {
        "stream": {"name": stream, "subjects": subjects},
        "ingests": [_ingest(lower)],
        "asyncapi_file": copy.name,
        "tables": {e.name: f"silver/{lower}_{snake_case(e.name)}" for e in contract.event_types},
    }


def _ingest(lower: str) -> dict[str, str]:
    return {
        "name": f"{lower}_events",
        "durable": f"{lower}-bronze",
        "table": f"bronze/{lower}_events",
    }


def _token(token: str) -> bool:
    """Whether `token` is a subject token: `*`, or text without spaces, dots and wildcards
    (an MQTT topic `a/{id}/b` is not a subject, so not a default subject)."""
    return token == "*" or re.fullmatch(r"[^\s.*>{}]+", token) is not None


def _split(text: str | None) -> list[str]:
    return [s.strip() for s in (text or "").split(",") if s.strip()]


def _find(given: str, project_root: Path | None) -> Path:
    path = Path(given).expanduser()
    for candidate in (path, (project_root or Path.cwd()) / path):
        if candidate.is_file():
            return candidate.resolve()
    raise FileNotFoundError(f"--asyncapi {given!r}: no such file (relative to {Path.cwd()})")
