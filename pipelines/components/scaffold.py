"""`dg scaffold defs pipelines.components.JetStreamStream NAME --stream ORDERS`: a working
`defs.yaml` with the stream, one ingest and a one-event contract to edit."""

from __future__ import annotations

from dagster import Model
from dagster.components import Scaffolder, ScaffoldRequest, scaffold_component
from pydantic import Field


class JetStreamStreamScaffoldParams(Model):
    """`dg scaffold defs pipelines.components.JetStreamStream NAME --stream ORDERS`."""

    stream: str = Field(default="EVENTS", description="The stream's name.")
    subjects: str | None = Field(default=None, description="Its subjects (default: name.>).")


class JetStreamStreamScaffolder(Scaffolder[JetStreamStreamScaffoldParams]):
    """Writes a working `defs.yaml`: the stream, one ingest, a one-event contract."""

    @classmethod
    def get_scaffold_params(cls) -> type[JetStreamStreamScaffoldParams]:
        return JetStreamStreamScaffoldParams

    def scaffold(self, request: ScaffoldRequest[JetStreamStreamScaffoldParams]) -> None:
        stream = request.params.stream
        lower = stream.lower()
        subjects = request.params.subjects or f"{lower}.>"
        scaffold_component(
            request,
            {
                "stream": {"name": stream, "subjects": [subjects]},
                "ingests": [
                    {
                        "name": f"{lower}_events",
                        "durable": f"{lower}-bronze",
                        "table": f"bronze/{lower}_events",
                    }
                ],
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
