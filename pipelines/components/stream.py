"""`JetStreamStream`: a stream, its ingests and its event contract declared in one `defs.yaml`.

    type: pipelines.components.JetStreamStream
    attributes:
      stream:
        name: ORDERS
        subjects: ["orders.>"]
      ingests:
        - name: order_events
          durable: orders-bronze
          table: bronze/order_events
      contract:                       # or contract_file: / asyncapi_file:
        envelope: {event_type: eventType, event_id: eventId, event_time: timestamp}
        events: {...}                 # docs/contract.md

It builds what `pipelines.streams.build_stream_defs` builds (the stream's asset, a bronze asset,
job, sensor and lag check per ingest, the observation sensor, replays) and, from the contract
(read at load time, so `dg check defs` reports a broken one with its file, line and path),
the silver multi-asset over the first ingest's bronze table (or `silver_from`'s): a table per
event type, the quarantine, a check per rule (`assets.contract_silver`). Secrets do
not belong here: the connection comes from the environment (`NATS_URL`, `NATS_CREDS`, ...).
"""

from __future__ import annotations

from pathlib import Path

from dagster import (
    AssetKey,
    AssetsDefinition,
    ComponentLoadContext,
    Definitions,
    Model,
    Resolvable,
)
from dagster.components import Component, Scaffolder, ScaffoldRequest, scaffold_component
from dagster.components.scaffold.scaffold import scaffold_with
from pydantic import Field

from assets.bronze import bronze_asset_key
from assets.contract_silver import build_contract_silver_asset
from pipelines.contract import Contract, Envelope, contract_from_dict, read_asyncapi, read_contract
from pipelines.default_resources import default_resources
from pipelines.ingest.spec import IngestSpec
from pipelines.streams import DEFAULT_REPLAY_BUCKET, BronzeIngest, build_stream_defs
from resources.jetstream import KeyValueSpec, StreamSpec, Topology


class StreamModel(Model):
    """The JetStream stream, as `jsl provision` creates it (only what is declared)."""

    name: str = Field(description="The stream's name, e.g. ORDERS.")
    subjects: list[str] = Field(description="Subjects it captures, e.g. ['orders.>'].")
    description: str | None = Field(default=None, description="Shown in the UI and the server.")
    max_age_seconds: float | None = Field(
        default=None, description="How long messages are kept (unset: the server's default)."
    )
    max_bytes: int | None = Field(default=None, description="Size limit of the stream.")
    duplicate_window_seconds: float | None = Field(
        default=None, description="Window of publish de-duplication by Nats-Msg-Id."
    )
    replicas: int | None = Field(
        default=None, description="1 to 5 (3 on a three-node cluster); unset: the server's."
    )

    def spec(self) -> StreamSpec:
        return StreamSpec(
            name=self.name,
            subjects=tuple(self.subjects),
            description=self.description,
            max_age=self.max_age_seconds,
            max_bytes=self.max_bytes,
            duplicate_window=self.duplicate_window_seconds,
            replicas=self.replicas,
        )


class IngestModel(Model):
    """One durable consumer of the stream, landing in its own bronze Delta table."""

    name: str = Field(description="The bronze asset's name (key `<key_prefix>/<name>`).")
    durable: str = Field(description="The durable consumer (created if missing).")
    table: str = Field(description="The Delta table, relative to the lakehouse root.")
    filter_subjects: list[str] = Field(
        default_factory=list, description="Subjects of the stream it takes (empty: all)."
    )
    key_prefix: str = Field(default="bronze", description="First part of the asset key.")
    replay: bool = Field(default=False, description="Build the replay job and request sensor.")
    upstream: list[str] = Field(
        default_factory=list,
        description="Asset keys (a/b) that publish what this ingest reads, for lineage.",
    )
    max_messages: int | None = Field(default=None, description="Most messages per run.")
    readers: int | None = Field(default=None, description="Parallel Spark reader tasks.")
    max_lag_messages: int | None = Field(
        default=None, description="The consumer_lag check fails above this many waiting."
    )
    max_lag_age_seconds: float | None = Field(
        default=None, description="The check fails when the oldest waiting is older."
    )

    def ingest(self, stream: str) -> BronzeIngest:
        limits = {
            "max_messages": self.max_messages,
            "readers": self.readers,
            "max_lag_messages": self.max_lag_messages,
            "max_lag_age": self.max_lag_age_seconds,
        }
        spec = IngestSpec(
            name=self.name,
            stream=stream,
            durable=self.durable,
            table=self.table,
            filter_subjects=tuple(self.filter_subjects),
            **{name: value for name, value in limits.items() if value is not None},
        )
        return BronzeIngest(
            spec,
            key_prefix=self.key_prefix,
            upstream=tuple(AssetKey.from_user_string(key) for key in self.upstream),
            replay=self.replay,
        )


class EnvelopeModel(Model):
    """JSON paths of the envelope, for a contract read from AsyncAPI."""

    event_type: str | None = Field(default=None, description="The event-type discriminator.")
    event_id: str | None = Field(default=None, description="The event id (de-duplication key).")
    event_time: str | None = Field(default=None, description="The event time.")


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


@scaffold_with(JetStreamStreamScaffolder)
class JetStreamStream(Component, Model, Resolvable):
    """A JetStream stream landed exactly once in bronze Delta tables, with its event contract.

    Declare the stream, its ingests (durable consumers, each into a bronze table) and the
    contract of its events (inline under `contract`, or in a file: `contract_file` for the
    YAML form, `asyncapi_file` for an AsyncAPI 3.0 document with JSON Schema payloads).
    """

    stream: StreamModel = Field(description="The JetStream stream.")
    ingests: list[IngestModel] = Field(description="Its ingests (at least one).")
    contract: dict | None = Field(
        default=None, description="The event contract inline (docs/contract.md)."
    )
    contract_file: str | None = Field(
        default=None, description="A YAML contract file, relative to this defs.yaml."
    )
    asyncapi_file: str | None = Field(
        default=None, description="An AsyncAPI 3.0 document, relative to this defs.yaml."
    )
    envelope: EnvelopeModel | None = Field(
        default=None, description="The envelope's paths, with asyncapi_file."
    )
    tables: dict[str, str] | None = Field(
        default=None, description="Event type -> silver table, with asyncapi_file."
    )
    silver_from: str | None = Field(
        default=None,
        description="The ingest whose bronze table the contract's silver reads (default: the "
        "first).",
    )
    check_mostly: float = Field(
        default=1.0,
        gt=0,
        le=1,
        description="The share of a batch's rows each Great Expectations check needs (1.0: "
        "a check fails on any row that breaks its rule).",
    )

    def read_contract(self, directory: Path) -> Contract | None:
        """The declared contract (None without one), read relative to `directory`, the
        component's folder (an inline contract is read from its `defs.yaml`, so errors name
        the line).

        Raises:
            ContractError: naming the file, line and path of the first problem.
            ValueError: more than one form of the contract is given.
        """
        given = [
            name
            for name in ("contract", "contract_file", "asyncapi_file")
            if getattr(self, name) is not None
        ]
        if len(given) > 1:
            raise ValueError(
                f"stream {self.stream.name!r}: give one of contract, contract_file and "
                f"asyncapi_file, not {' and '.join(given)}"
            )
        if self.contract is not None:
            defs_yaml = directory / "defs.yaml"
            if defs_yaml.is_file():
                return read_contract(defs_yaml, at=("attributes", "contract"))
            return contract_from_dict(self.contract, source=f"stream {self.stream.name} contract")
        if self.contract_file is not None:
            return read_contract(directory / self.contract_file)
        if self.asyncapi_file is not None:
            envelope = self.envelope or EnvelopeModel()
            return read_asyncapi(
                directory / self.asyncapi_file,
                stream=self.stream.name,
                envelope=Envelope(envelope.event_type, envelope.event_id, envelope.event_time),
                tables=self.tables,
            )
        return None

    def topology(self) -> Topology:
        """What the stream needs on the server, for `jsl provision`: the stream, each ingest's
        durable consumer and checkpoint bucket, and the replay-request bucket if an ingest
        replays."""
        stream = self.stream.spec()
        ingests = [ingest.ingest(stream.name) for ingest in self.ingests]
        buckets = {i.spec.checkpoint_bucket: i.spec.checkpoint_bucket_spec() for i in ingests}
        if any(ingest.replay for ingest in ingests):
            buckets.setdefault(DEFAULT_REPLAY_BUCKET, KeyValueSpec(DEFAULT_REPLAY_BUCKET))
        return Topology(
            streams=(stream,),
            consumers=tuple(ingest.spec.consumer_spec() for ingest in ingests),
            kv_buckets=tuple(buckets.values()),
        )

    def build_defs(self, context: ComponentLoadContext) -> Definitions:
        """The stream's Definitions, with the project's resources.

        Raises:
            ContractError: the contract is broken (it names the file, line and path).
            ComponentDeclarationError: the stream or an ingest is declared wrong (it names
                the defs.yaml and the stream).
        """
        contract = self.read_contract(context.path)  # a broken one fails, with its place
        try:
            stream = self.stream.spec()
            ingests = [ingest.ingest(stream.name) for ingest in self.ingests]
            stream_defs = build_stream_defs(stream, ingests)
            silver = [] if contract is None else [self.silver_asset(contract, ingests)]
        except ValueError as error:
            what = str(error)
            if not what.startswith("stream "):
                what = f"stream {self.stream.name!r}: {what}"
            raise ComponentDeclarationError(f"{context.path / 'defs.yaml'}: {what}") from error
        return Definitions.merge(
            stream_defs, Definitions(assets=silver, resources=default_resources())
        )

    def silver_asset(self, contract: Contract, ingests: list[BronzeIngest]) -> AssetsDefinition:
        """The contract's silver multi-asset over the `silver_from` ingest's bronze table.

        Raises:
            ValueError: `silver_from` names no declared ingest.
        """
        by_name = {ingest.spec.name: ingest for ingest in ingests}
        name = self.silver_from or ingests[0].spec.name
        if name not in by_name:
            raise ValueError(f"silver_from {name!r} names no ingest; declared: {sorted(by_name)!r}")
        source = by_name[name]
        return build_contract_silver_asset(
            contract,
            source.spec,
            bronze_key=bronze_asset_key(source.spec, source.key_prefix),
            mostly=self.check_mostly,
        )


class ComponentDeclarationError(ValueError):
    """A `defs.yaml` declares something the project refuses; the message names the file."""
