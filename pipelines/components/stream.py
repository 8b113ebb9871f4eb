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
      contract:                       # or contract_file: / asyncapi_file: / json_schema_files:
        envelope: {event_type: eventType, event_id: eventId, event_time: timestamp}
        events: {...}                 # docs/contract.md

It builds what `pipelines.wiring.streams.build_stream_defs` builds (the stream's asset, a
bronze asset, job, sensor and lag check per ingest, the observation sensor, replays) and, from
the contract (read at load time, so `dg check defs` reports a broken one with its file, line
and path), the silver multi-asset over the first ingest's bronze table (or `silver_from`'s): a
table per event type, the quarantine, its checks (one per built-in or named rule, one
`field_rules` per table for the rest) with the Great Expectations suite generated from the
contract (`assets.contract_silver`), and one gold asset per declared
aggregate (`aggregates:`, `pipelines.lakehouse.aggregates`). The stream sensor's runs of that
ingest materialise silver right after bronze, in the same run (unless `silver_in_ingest_run:
false`), and with `follow_seconds` keep going batch after batch while the stream does
(`assets.follow`); any other bronze materialisation (a replay, a run launched by hand) is
followed by silver, and silver by the aggregates (once its blocking checks passed), through
declarative automation, unless `automate: false`. Its tables carry `lakehouse/table`
metadata, so Delta maintenance takes them. Runs use the in-process executor (one Spark JVM per
run) unless `in_process: false`. Secrets do not belong here: the connection comes from the
environment (`NATS_URL`, `NATS_CREDS`, ...)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from dagster import (
    AssetKey,
    AssetsDefinition,
    ComponentLoadContext,
    Definitions,
    JobDefinition,
    Model,
    Resolvable,
    in_process_executor,
)
from dagster.components import Component
from dagster.components.scaffold.scaffold import scaffold_with
from pydantic import Field

from assets.aggregates import build_aggregate_asset
from assets.automation import AFTER_UPSTREAM_CHECKS, AFTER_UPSTREAM_COMMITS
from assets.bronze import bronze_asset_key
from assets.contract_silver import build_contract_silver_asset
from pipelines.components.errors import (  # the error, also importable from here
    ComponentDeclarationError as ComponentDeclarationError,
)
from pipelines.components.errors import DeclarationSite
from pipelines.components.models import (
    AggregateModel,
    EnvelopeModel,
    IngestModel,
    StreamModel,
    envelope_of,
)
from pipelines.components.scaffold import JetStreamStreamScaffolder
from pipelines.contract import (
    Contract,
    Layout,
    NestedObjects,
    contract_from_dict,
    derived_from_dict,
    read_asyncapi,
    read_contract,
    read_derived,
    read_json_schemas,
)
from pipelines.ingest.spec import IngestSpec
from pipelines.lakehouse.artifacts import ARTIFACTS_BUCKET, ARTIFACTS_DESCRIPTION
from pipelines.settings import Settings
from pipelines.silver.drift import (
    LOGGER,
    REPORTS,
    DriftReport,
    pending_changes,
    written_table,
)
from pipelines.silver.evolution import OnSchemaChange
from pipelines.silver.schema import RUN_FIELDS, SOURCE_FIELDS
from pipelines.silver.stage import quarantine_table
from pipelines.wiring.default_resources import default_resources
from pipelines.wiring.rejudge_job import build_rejudge_job
from pipelines.wiring.streams import DEFAULT_REPLAY_BUCKET, BronzeIngest, build_stream_defs
from resources.jetstream import KeyValueSpec, ObjectStoreSpec, Topology
from resources.lakehouse import LakehouseResource


@dataclass(frozen=True)
class LoadedSilver:
    """A declared stream's silver as its last load built it (for `jsl quarantine retry` and
    `jsl silver rebuild`, which judge its rows again outside a Dagster run)."""

    contract: Contract
    ingest: IngestSpec  # the ingest whose bronze table silver reads
    quarantine: str  # the quarantine's table
    policy: dict[str, OnSchemaChange]  # event type -> on_schema_change
    mostly: float  # check_mostly: the verdicts a retry carries over are judged with it


# Stream name -> its silver, filled as components load.
LOADED: dict[str, LoadedSilver] = {}
# The attributes that declare a contract, one at most.
CONTRACT_FORMS = ("contract", "contract_file", "asyncapi_file", "json_schema_files")


@scaffold_with(JetStreamStreamScaffolder)
class JetStreamStream(Component, Model, Resolvable):
    """A JetStream stream landed exactly once in bronze Delta tables, with its event contract.

    Declare the stream, its ingests (durable consumers, each into a bronze table) and the
    contract of its events (inline under `contract`, or in a file: `contract_file` for the
    YAML form, `asyncapi_file` for an AsyncAPI 2.x or 3.x document with JSON Schema payloads,
    whose channels under the stream's subjects are read, `json_schema_files` for JSON Schema
    files as pydantic, zod or any tool wrote them: one per event type, or one whose top-level
    oneOf/anyOf is one event type per schema).
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
        default=None,
        description="An AsyncAPI 2.x or 3.x document, relative to this defs.yaml; its channels "
        "under the stream's subjects are read (docs/asyncapi.md).",
    )
    json_schema_files: list[str] | None = Field(
        default=None,
        description="JSON Schema files (JSON or YAML), relative to this defs.yaml: one per "
        "event type, named by its file name without the extension and .schema, or one "
        "whose top-level oneOf/anyOf of object schemas are the event types, named by "
        "envelope.event_type's const (docs/contract.md).",
    )
    envelope: EnvelopeModel | str | None = Field(
        default=None,
        description="The envelope's paths or cloudevents, with asyncapi_file or "
        "json_schema_files (docs/envelopes.md).",
    )
    tables: dict[str, str] | None = Field(
        default=None,
        description="Event type -> silver table, with asyncapi_file or json_schema_files.",
    )
    derived: dict[str, dict[str, Any]] | None = Field(
        default=None,
        description="Event type -> its derived columns ({column: Spark SQL expression}, as "
        "under a contract's derived:), with asyncapi_file or json_schema_files.",
    )
    nested_objects: NestedObjects | None = Field(
        default=None,
        description="With asyncapi_file or json_schema_files: struct keeps each nested "
        "object with properties as one struct column (data.fileSize lands in data.file_size); "
        "flatten gives each of its properties a column of its own (file_size). Unset: a new "
        "table's objects are structs, and an existing table keeps the layout it was written "
        "with (docs/contract.md).",
    )
    silver_from: str | None = Field(
        default=None,
        description="The ingest whose bronze table the contract's silver reads (default: the "
        "first).",
    )
    quarantine_table: str | None = Field(
        default=None,
        description="The quarantine's Delta table (default quarantine/<stream lower>).",
    )
    aggregates: list[AggregateModel] = Field(
        default_factory=list,
        description="Gold tables declared as aggregates of an event type's silver table "
        "(group_by, time grain, count/sum/min/max measures).",
    )
    in_process: bool = Field(
        default=True,
        description="Run every step of a run in one process, so one Spark JVM per run (the "
        "in-process executor); false leaves the executor to your Definitions (Dagster's "
        "default starts a process, and a JVM, per step).",
    )
    artifacts_bucket: str | None = Field(
        default=ARTIFACTS_BUCKET,
        description="The Object Store bucket for each silver batch's Great Expectations "
        "results, HTML reports and run manifest (`jsl provision` creates it); null stores none.",
    )
    automate: bool = Field(
        default=True,
        description="Declarative automation: silver follows each materialisation of its bronze "
        "table and the aggregates follow silver once its blocking checks passed "
        "(assets/automation.py); false: "
        "they run only when launched (a job, a schedule, `dg launch`).",
    )
    silver_in_ingest_run: bool = Field(
        default=True,
        description="The `silver_from` ingest's job (what its stream sensor launches) "
        "materialises silver right after bronze, in the same run: one run launch per batch "
        "instead of two, and no wait for the automation sensor (docs/automation.md). "
        "Automation still runs silver after a replay or a bronze run launched alone. false: "
        "silver runs only by automation or when launched.",
    )
    follow_seconds: int = Field(
        default=0,
        ge=0,
        description="A run the stream sensor launches for the `silver_from` ingest (for a "
        "lone range, not a backfill's piece) keeps going once its first batch is in silver: "
        "while the stream has new messages, it lands them in bronze and takes them to "
        "silver, batch after batch, starting none after this many seconds (no launch, "
        "process start or Spark session per batch: docs/automation.md). 0: one batch per "
        "run. Needs a contract and silver_in_ingest_run.",
    )
    check_mostly: float = Field(
        default=1.0,
        gt=0,
        le=1,
        description="The share of a batch's rows every check needs: each Great Expectations "
        "expectation, and the rows a message-level rule judged (1.0: any breaking row fails).",
    )

    on_schema_change: OnSchemaChange = Field(
        default=OnSchemaChange.EVOLVE,
        description="What a silver run does when the contract and a live silver table differ "
        "(docs/contract-changes.md): evolve applies additive, widening and rename changes "
        "through Delta (ADD COLUMNS, type widening, column mapping) before its first write; "
        "freeze refuses any difference. Breaking changes are refused either way.",
    )
    on_schema_change_by_event: dict[str, OnSchemaChange] = Field(
        default_factory=dict,
        description="Event type -> its own on_schema_change (e.g. {OrderPlaced: freeze}).",
    )

    def schema_policy(self, contract: Contract) -> dict[str, OnSchemaChange]:
        """Each event type's on_schema_change.

        Raises:
            ValueError: `on_schema_change_by_event` names an event type the contract lacks.
        """
        names = [e.name for e in contract.event_types]
        unknown = sorted(set(self.on_schema_change_by_event) - set(names))
        if unknown:
            raise ValueError(
                f"on_schema_change_by_event names {unknown!r}, which the contract does not "
                f"declare; its event types are {', '.join(names)}"
            )
        return {n: self.on_schema_change_by_event.get(n, self.on_schema_change) for n in names}

    def read_contract(
        self, directory: Path, site: DeclarationSite | None = None
    ) -> Contract | None:
        """The declared contract (None without one), read relative to `directory`, the
        component's folder (an inline contract is read from its `defs.yaml`, so errors name
        the line).

        Args:
            directory: the component's folder.
            site: where the component is declared, for errors (default: the defs.yaml in
                `directory`).

        Raises:
            ComponentDeclarationError: more than one form of the contract is given, its file
                is not there, or it is broken: naming the defs.yaml and the line of the
                attribute, and for a broken contract the file, line and path of its first
                problem.
        """
        site = site or DeclarationSite.in_folder(directory)
        given = [name for name in CONTRACT_FORMS if getattr(self, name) is not None]
        if len(given) > 1:
            both = " and ".join(
                name if site.line_of((name,)) is None else f"{name} (line {site.line_of((name,))})"
                for name in given
            )
            raise site.error(
                f"the contract is declared {len(given)} times, by {both}; keep one of "
                f"{', '.join(CONTRACT_FORMS)}",
                (given[-1],),
            )
        if not given:
            return None
        form = given[0]
        files = self.json_schema_files if form == "json_schema_files" else [getattr(self, form)]
        if not files:
            raise site.error(
                "json_schema_files lists no file; give one JSON Schema file per event type",
                (form,),
            )
        for name in files if form != "contract" else ():
            if not (directory / name).is_file():
                raise site.missing_file(form, name)
        by_files = ("asyncapi_file", "json_schema_files")
        derived = self._derived(directory, site) if form in by_files else None
        with site.blames((form,), self.stream.name):
            if form == "contract":
                if site.defs_yaml.is_file():
                    return read_contract(site.defs_yaml, at=("attributes", "contract"))
                return contract_from_dict(
                    self.contract, source=f"stream {self.stream.name} contract"
                )
            if form == "contract_file":
                return read_contract(directory / self.contract_file)
            with site.blames(("envelope",), self.stream.name):
                envelope = envelope_of(self.envelope)
            root = LakehouseResource(root=Settings.from_env().lakehouse_root)
            layout = Layout(self.nested_objects, lambda table: written_table(root, table))
            if form == "json_schema_files":
                return read_json_schemas(
                    [directory / name for name in files],
                    envelope=envelope,
                    tables=self.tables,
                    derived=derived,
                    # One event type told apart by nothing: it is the stream's every message.
                    default_subjects=self.stream.subjects if envelope.event_type is None else (),
                    layout=layout,
                )
            return read_asyncapi(
                directory / self.asyncapi_file,
                stream=self.stream.name,
                subjects=self.stream.subjects,
                envelope=envelope,
                tables=self.tables,
                derived=derived,
                layout=layout,
            )

    def _derived(self, directory: Path, site: DeclarationSite) -> dict | None:
        """`derived`, read from the defs.yaml (so errors name its line) when there is one."""
        if self.derived is None:
            return None
        with site.blames(("derived",), self.stream.name):
            if site.defs_yaml.is_file():
                return read_derived(site.defs_yaml, at=("attributes", "derived"))
            return derived_from_dict(self.derived, source=f"stream {self.stream.name} derived")

    def quarantine(self) -> str:
        """The quarantine's table: `quarantine_table`, else `quarantine/<stream lower>`."""
        return self.quarantine_table or quarantine_table(self.stream.name)

    def topology(self) -> Topology:
        """What the stream needs on the server, for `jsl provision`: the stream, each ingest's
        durable consumer and checkpoint bucket, the replay-request bucket if an ingest
        replays (10 revisions per key, so a request's outcome is kept beside it), and the
        artifacts Object Store if there is a contract (its silver stores reports there); the
        buckets take the stream's replicas."""
        stream = self.stream.spec()
        ingests = [ingest.ingest(stream) for ingest in self.ingests]
        buckets = {i.spec.checkpoint_bucket: i.spec.checkpoint_bucket_spec() for i in ingests}
        if any(ingest.replay for ingest in ingests):
            buckets.setdefault(
                DEFAULT_REPLAY_BUCKET,
                KeyValueSpec(DEFAULT_REPLAY_BUCKET, history=10, replicas=stream.replicas),
            )
        has_contract = any(getattr(self, name) is not None for name in CONTRACT_FORMS)
        objects = ()
        if has_contract and self.artifacts_bucket is not None:
            objects = (
                ObjectStoreSpec(
                    self.artifacts_bucket,
                    description=ARTIFACTS_DESCRIPTION,
                    replicas=stream.replicas,
                ),
            )
        return Topology(
            streams=(stream,),
            consumers=tuple(ingest.spec.consumer_spec() for ingest in ingests),
            kv_buckets=tuple(buckets.values()),
            object_buckets=objects,
        )

    def build_defs(self, context: ComponentLoadContext) -> Definitions:
        """The stream's Definitions, with the project's resources.

        Raises:
            ComponentDeclarationError: something is declared wrong (the contract, the stream,
                an ingest, ...): naming the defs.yaml, the line of the attribute that led to it
                and, for a broken contract, the contract's file, line and path; Dagster prints
                it without a traceback (`pipelines.components.errors`).
        """
        site = DeclarationSite.of(context)
        contract = self.read_contract(context.path, site)  # a broken one fails, with its place
        name = self.stream.name
        with site.blames(("stream",), name):
            stream = self.stream.spec()
        ingests = []
        for index, declared in enumerate(self.ingests):
            with site.blames(("ingests", index), name):
                ingests.append(declared.ingest(stream))
        if not ingests:
            raise site.error(f"stream {name!r}: declare at least one ingest", ("ingests",))
        silver, jobs = [], []
        if contract is not None:
            with site.blames(("on_schema_change_by_event",), name):
                policy = self.schema_policy(contract)
            with site.blames(("silver_from",), name):
                source = self._silver_source(ingests).spec
            with site.blames(("quarantine_table",), name):
                self._check_quarantine(contract)
            with site.blames((self._contract_form(),), name):
                silver = [self.silver_asset(contract, ingests)]
                jobs = [self.rejudge_job(contract, ingests)]
            if self.silver_in_ingest_run:
                keys = tuple(sorted(silver[0].keys, key=AssetKey.to_user_string))
                follow = self.follow_seconds
                ingests = [
                    replace(i, same_run=keys, follow_seconds=follow)
                    if i.spec.name == source.name
                    else i
                    for i in ingests
                ]
        if self.follow_seconds and (contract is None or not self.silver_in_ingest_run):
            raise site.error(
                f"stream {name!r}: follow_seconds keeps an ingest run taking batches into "
                "silver, so it needs a contract and silver_in_ingest_run: true; remove "
                "follow_seconds or declare them",
                ("follow_seconds",),
            )
        with site.blames(("ingests",), name):
            stream_defs = build_stream_defs(stream, ingests)
        with site.blames(("aggregates",), name):
            gold = self.aggregate_assets(contract)
        if contract is not None:
            with site.blames((self._contract_form(),), name):
                self.report_schema_changes(contract)
            LOADED[name] = LoadedSilver(
                contract, source, self.quarantine(), policy, self.check_mostly
            )
        executor = in_process_executor if self.in_process else None
        return Definitions.merge(
            stream_defs,
            Definitions(
                assets=[*silver, *gold],
                jobs=jobs,
                resources=default_resources(),
                executor=executor,
            ),
        )

    def report_schema_changes(self, contract: Contract) -> DriftReport:
        """Compares the contract with the live silver tables (no Spark: their Delta logs)
        and logs each difference as a warning, so `dg check defs` and every code location
        load show what the next run will change or refuse; `jsl contract diff` prints the
        same report (`pipelines.silver.drift`)."""
        lakehouse = LakehouseResource(root=Settings.from_env().lakehouse_root)
        report = pending_changes(
            contract,
            stream=self.stream.name,
            table_path=lakehouse.table_path,
            quarantine=self.quarantine(),
            policy=self.schema_policy(contract),
        )
        REPORTS[self.stream.name] = report
        for line in report.lines():
            LOGGER.warning(line)
        return report

    def aggregate_assets(self, contract: Contract | None) -> list[AssetsDefinition]:
        """One asset per declared aggregate, over its event type's silver table.

        Raises:
            ValueError: an aggregate without a contract, of an unknown event type, reading a
                column its table does not have, or writing a table already used.
        """
        if not self.aggregates:
            return []
        if contract is None:
            raise ValueError("aggregates read silver tables: declare the stream's contract")
        used = {i.table for i in self.ingests} | {e.table for e in contract.event_types}
        used.add(self.quarantine())
        assets = []
        for declared in self.aggregates:
            aggregate = declared.aggregate()
            names = [e.name for e in contract.event_types]
            if aggregate.event_type not in names:
                raise ValueError(
                    f"aggregate {aggregate.table!r}: no event type {aggregate.event_type!r}; "
                    f"the contract's are {', '.join(names)}"
                )
            event = contract.event_type(aggregate.event_type)
            columns = {name for name, _ in event.columns}
            aggregate.check_columns(columns | {f.name for f in (*SOURCE_FIELDS, *RUN_FIELDS)})
            if aggregate.table in used:
                raise ValueError(f"aggregate {aggregate.table!r}: the table is already used")
            used.add(aggregate.table)
            assets.append(
                build_aggregate_asset(
                    aggregate,
                    source_key=AssetKey(event.table.split("/")),
                    source_table=event.table,
                    automation_condition=AFTER_UPSTREAM_CHECKS if self.automate else None,
                )
            )
        return assets

    def silver_asset(self, contract: Contract, ingests: list[BronzeIngest]) -> AssetsDefinition:
        """The contract's silver multi-asset over the `silver_from` ingest's bronze table.

        Raises:
            ValueError: `silver_from` names no declared ingest, or the quarantine's table is
                another table of the stream.
        """
        source = self._silver_source(ingests)
        quarantine = self._check_quarantine(contract)
        return build_contract_silver_asset(
            contract,
            source.spec,
            bronze_key=bronze_asset_key(source.spec, source.key_prefix),
            quarantine=quarantine,
            mostly=self.check_mostly,
            artifacts_bucket=self.artifacts_bucket,
            automation_condition=AFTER_UPSTREAM_COMMITS if self.automate else None,
            policy=self.schema_policy(contract),
        )

    def _check_quarantine(self, contract: Contract) -> str:
        """The quarantine's table (`quarantine()`).

        Raises:
            ValueError: it is another table of the stream.
        """
        quarantine = self.quarantine()
        taken = {i.table: f"ingest {i.name!r}" for i in self.ingests}
        taken.update({e.table: f"event type {e.name!r}" for e in contract.event_types})
        if quarantine in taken:
            raise ValueError(
                f"quarantine_table {quarantine!r} is the table of {taken[quarantine]}; give "
                "the quarantine a table of its own"
            )
        return quarantine

    def _contract_form(self) -> str:
        """The attribute that declares the contract: contract, contract_file, asyncapi_file or
        json_schema_files."""
        return next(name for name in CONTRACT_FORMS if getattr(self, name) is not None)

    def rejudge_job(self, contract: Contract, ingests: list[BronzeIngest]) -> JobDefinition:
        """`rejudge_<stream lower>`: the job of `jsl quarantine retry` and `jsl silver
        rebuild` (`pipelines.wiring.rejudge_job`)."""
        return build_rejudge_job(
            contract,
            self._silver_source(ingests).spec,
            quarantine=self.quarantine(),
            policy=self.schema_policy(contract),
            mostly=self.check_mostly,
        )

    def _silver_source(self, ingests: list[BronzeIngest]) -> BronzeIngest:
        """The ingest silver reads: `silver_from`, else the first.

        Raises:
            ValueError: `silver_from` names no declared ingest.
        """
        by_name = {ingest.spec.name: ingest for ingest in ingests}
        name = self.silver_from or ingests[0].spec.name
        if name not in by_name:
            raise ValueError(f"silver_from {name!r} names no ingest; declared: {sorted(by_name)!r}")
        return by_name[name]
