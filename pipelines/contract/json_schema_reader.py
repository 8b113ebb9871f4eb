"""Event types from JSON Schema (draft 2020-12; draft-07 and draft-04 read the same), as
pydantic, zod or any tool wrote them: one schema per message, or a top-level oneOf/anyOf of
object schemas told apart by a const discriminator (one event type each).

    JSON Schema                                contract
    type: string                               string
    type: string, format: date-time            timestamp(iso8601)
    type: string, format: date                 date
    type: string, format: <checked format>     string + format constraint (uuid, email,
                                               time, duration, uri, uri-reference, hostname,
                                               ipv4, ipv6, byte)
    format: <any other>                        an annotation: logged once, not checked
    type: integer (format: int64)              long
    type: integer, format: int32               integer
    type: number                               double
    type: boolean                              boolean
    anyOf: [number, string] (pydantic Decimal) string (the exact text; a JSON number held
                                               exactly: its text), a decimal-number pattern,
                                               the number's constraints judging the text
                                               exactly; with x-jsl-type, that type
    no type (pydantic Any, {})                 variant: Spark's VARIANT (x-jsl-type: json:
                                               the value's JSON text in a string column)
    type: [T, "null"], anyOf/oneOf [S, null],  T, nullable: a required nullable field must be
    nullable: true, null in enum               present and may be null
    type, enum or const without null           not nullable: JSON null on an optional field
                                               is mistyped (`Field.nullable` false)
    allOf: [...]                               merged (properties and required joined)
    nested type: object with properties        struct (members by their keys' columns);
                                               flattened where asked (x-jsl-flatten: true,
                                               Layout, a table written so, an object holding
                                               an envelope path): data.fileSize -> column
                                               file_size (last keys colliding: the whole
                                               path, head_commit__author__name)
    type: object, additionalProperties: S      map<type of S> (an object with no properties)
    type: array, items: S                      array<type of S> (objects: array<struct>);
                                               S's constraints check each element, its
                                               members' constraints that member of each
                                               (`lines_each_qty_in_range`); S without null:
                                               a null element is mistyped; S with
                                               additionalProperties: false: an undeclared
                                               member is an unknown field
    required: [...]                            required (a nested field: if its parents are)
    additionalProperties: false                unknown fields: reject
    description                                the column's description
    minimum, maximum, exclusiveMinimum,        one range constraint (draft-04's boolean
    exclusiveMaximum                           exclusive flags too)
    multipleOf                                 multiple_of constraint (decimal arithmetic)
    pattern, enum, minLength, maxLength        pattern, enum, min_length, max_length
    minItems, maxItems, uniqueItems            min_items, max_items, unique_items
    minProperties, maxProperties               min_properties, max_properties (maps, structs)
    const on the discriminator                 the event type's name
    const elsewhere                            enum of one value
    $ref: "#/..."                              resolved in the same document (keywords beside
                                               it merged as an allOf)
    x-jsl-type: decimal(12,2)                  overrides the type (any contract type)
    x-jsl-flatten: true | false                this object's properties are columns of
                                               their own / it is one struct column
    x-jsl-column: name                         the column's name
    x-jsl-rule, x-jsl-severity                 the rule's name and severity: text for the
                                               only constraint, or {<kind>: value}
    x-jsl-not-in-future: 5m                    not_in_future constraint with that skew
    x-jsl-unknown-fields: keep (at the root)   unknown fields: keep, ignore or reject
    x-jsl-severities: {rule: sev} (at the root) built-in rules' severities (quarantine or
                                               quarantine+block), as a contract's severities:

A union of unlike types is a VARIANT (a sentinel branch such as githubkit's
`<UNSET>` is dropped; branches of one JSON type are that type); flattened properties whose
last keys share a column are named by their whole path (`__` between keys), struct members
whose keys share a column (`ID`, `id`) by their key's checksum after it. Keywords no
column or one-column rule can express (`not`, `if`/`then`/`else`, `patternProperties`,
`dependent*`, `propertyNames`, `prefixItems`, `contains`, `unevaluated*`, such unions, allOf
narrowings, recursive `$ref`s, formats only the validator knows, an optional or nullable
object's own `required`) are left to jsonschema-rs: the event type gets a
`SchemaCheck` (`pipelines.contract.schema_check`, rule `schema_valid`) and keeps only the
rules the validator would not judge the same way. Unknown keywords are annotations; a `$ref`
to another document and a misspelt `x-jsl-*` fail with their schema path. The envelope's
paths, tables, subjects and derived columns are not in a schema: the caller supplies them.
docs/contract.md has the table of every keyword.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pipelines.contract.constraints import NotInFuture, Severity
from pipelines.contract.datatypes import FieldType, TypeKind
from pipelines.contract.errors import ContractError, combined, located
from pipelines.contract.fields import SourceKind, default_column, field_source, path_column
from pipelines.contract.json_schema_constraints import DECIMAL_PATTERN
from pipelines.contract.json_schema_document import ANNOTATIONS, At
from pipelines.contract.json_schema_fields import MAX_DEPTH, SchemaFields
from pipelines.contract.model import (
    RESERVED_COLUMNS,
    Contract,
    DerivedColumn,
    Envelope,
    EventType,
    Field,
    UnknownFields,
    checked_severities,
    snake_case,
)
from pipelines.contract.schema_check import SchemaCheck
from pipelines.contract.yaml_source import load_document
from resources.backports import StrEnum

NO_ENVELOPE = Envelope()


class NestedObjects(StrEnum):
    """How a nested object with `properties` lands: one struct column (the default), or
    flattened into a column per property (`data.fileSize` -> `file_size`)."""

    STRUCT = "struct"
    FLATTEN = "flatten"


@dataclass(frozen=True)
class WrittenTable:
    """A silver table as it was last written.

    Attributes:
        columns: each top-level field's JSON path -> its column, as the table's
            `jsl.contract.columns` property records it (empty: it records none).
        without_variant: the table's columns whose type holds no VARIANT: a field this
            reader would make a VARIANT keeps its JSON text there (`json`), as written.
    """

    columns: Mapping[str, str]
    without_variant: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Layout:
    """Which nested objects are flattened into columns.

    Attributes:
        nested_objects: the explicit setting for every table; None: each table as it was
            written (below), a new table's objects as structs.
        written: a silver table as it was last written (None for a table that does not
            exist): an object whose properties were written as columns of their own stays
            flattened, one written as a column stays a struct, and a table written before
            the paths were recorded (no columns) or one with flattened objects flattens new
            objects too; a column written as JSON text stays JSON text. A property's own
            `x-jsl-flatten: true|false` comes first.
    """

    nested_objects: NestedObjects | None = None
    written: Callable[[str], WrittenTable | None] = lambda table: None

    def flattens(self, written: WrittenTable | None, path: str) -> bool:
        """Whether the object at JSON `path` is flattened, in a table written as `written`
        (`self.written(table)`)."""
        if self.nested_objects is not None:
            return self.nested_objects is NestedObjects.FLATTEN
        if written is None:
            return False
        columns = written.columns
        if path in columns:
            return False
        if any(p.startswith(f"{path}.") for p in columns):
            return True
        payload = [p for p in columns if field_source(p).kind is SourceKind.PAYLOAD]
        return not columns or any("." in p for p in payload)


STRUCT_LAYOUT = Layout()


class SchemaReader(SchemaFields):
    """Reads message payload schemas of one document into event types.

    Args:
        document: the whole document (a JSON Schema, or an AsyncAPI document).
        source: its file or name in errors.
        line_of: the line of a path in the document, if known.
    """

    def event_type(
        self,
        schema: Any,
        at: At,
        *,
        name: str | None,
        envelope: Envelope,
        tables: Mapping[str, str] | None = None,
        subjects: Sequence[str] = (),
        derived: Sequence[DerivedColumn] = (),
        layout: Layout = STRUCT_LAYOUT,
    ) -> EventType:
        """The event type a message's payload schema describes (see the module docstring)."""
        self.delegated.clear()
        self.problems.clear()
        payload_at = at
        schema, at = self.schema(schema, at)
        self.check_keywords(schema, at)
        if envelope.event_type is not None:
            name = self.discriminator(schema, at, envelope.event_type)
        if name is None:
            raise self.fail(
                "the event type needs a name: without envelope.event_type, give "
                "one (the message's name or the schema's title)",
                at,
            )
        table = (tables or {}).get(name) or f"silver/{snake_case(name)}"
        written = layout.written(table)  # read once per event type: it may read a Delta log
        self.flattened = lambda path: layout.flattens(written, path)
        policies: list[tuple[bool, At]] = []
        columns: dict[str, At] = {}
        fields = self.flatten(schema, at, "", True, envelope, policies, columns)
        if self.problems:
            raise combined(self.problems)
        fields = self.unique_columns(fields, columns)
        if written is not None:  # a column written as JSON text stays so
            fields = [as_json_text(f) if f.column in written.without_variant else f for f in fields]
        if self.delegated:  # the validator judges the whole schema: no rule judges it twice
            fields = [_own_rules_only(f) for f in fields]
        unknown = schema.get("x-jsl-unknown-fields")
        if unknown is None:
            strict = [where for is_strict, where in policies if is_strict]
            if strict and len(strict) < len(policies):
                # Closed here, open there: the validator judges the closed objects.
                for where in strict:
                    self.delegate((*where, "additionalProperties"))
                unknown = UnknownFields.IGNORE
            else:
                unknown = UnknownFields.REJECT if strict else UnknownFields.IGNORE
        with self.at(at):
            return EventType(
                name=name,
                table=table,
                fields=tuple(fields),
                subjects=tuple(subjects),
                derived=tuple(derived),
                unknown_fields=unknown,
                description=schema.get("description"),
                schema_check=(
                    SchemaCheck.of(self.document, payload_at, self.delegated)
                    if self.delegated
                    else None
                ),
            )

    def severities(self, schema: Any, at: At) -> dict[str, Severity]:
        """The built-in rules' severities under `x-jsl-severities` of the mapping at `at`."""
        given = schema.get("x-jsl-severities") if isinstance(schema, Mapping) else None
        if given is None:
            return {}
        if not isinstance(given, Mapping):
            raise self.fail(
                "x-jsl-severities maps built-in rules to quarantine or quarantine+block, "
                f"got {given!r}",
                (*at, "x-jsl-severities"),
            )
        with self.at(at):
            return checked_severities(given)

    def variants(
        self, schema: Any, at: At, name: str | None, envelope: Envelope
    ) -> list[tuple[Any, At, str | None]]:
        """The event types of a document: itself, or each object schema of a top-level
        `oneOf`/`anyOf` (a discriminated union, as pydantic and zod write one), named by its
        discriminator's const (or, without envelope.event_type, by its title)."""
        root, root_at = self.resolve(schema, at)
        union = next((k for k in ("oneOf", "anyOf") if k in root), None)
        if union is None or not isinstance(root[union], list):
            return [(schema, at, name)]
        branches = [self.schema(b, (*root_at, union, i)) for i, b in enumerate(root[union])]
        if not all(self.is_object(b) and "properties" in b for b, _ in branches):
            return [(schema, at, name)]  # not a union of events: read (and refused) as one
        extra = set(root) - {union, "$defs", "definitions", "discriminator"} - ANNOTATIONS
        extra -= {k for k in root if isinstance(k, str) and k.startswith("x-")}
        if extra:
            raise self.fail(
                f"{', '.join(sorted(extra))} beside a top-level {union} of event schemas; "
                f"move it into each schema of the {union}",
                (*root_at, sorted(extra)[0]),
            )
        found = []
        for branch, branch_at in branches:
            title = branch.get("title") if envelope.event_type is None else None
            if envelope.event_type is None and not isinstance(title, str):
                raise self.fail(
                    f"each schema of a top-level {union} is an event type: set "
                    "envelope.event_type to the property whose const tells them apart "
                    "(or give each schema a title, with subjects per event type)",
                    branch_at,
                )
            found.append((branch, branch_at, title))
        return found

    def not_here(self, schema: Any, at: At, keyword: str, where: str) -> None:
        """Fails when `schema` has `keyword`, which is read only `where`."""
        if isinstance(schema, Mapping) and keyword in schema:
            raise self.fail(f"{keyword} is read only {where}; move it there", (*at, keyword))

    def discriminator(self, schema: Mapping, at: At, path: str) -> str:
        for key in path.split("."):
            found = {name: (p, p_at) for name, p, p_at, _ in self.properties(schema, at)}
            schema, at = self.schema(*found.get(key, ({}, (*at, "properties", key))))
        value, values = schema.get("const"), schema.get("enum")
        if value is None and isinstance(values, list) and len(values) == 1:
            value = values[0]
        if not isinstance(value, str):
            raise self.fail(
                f"the discriminator {path} needs `const: <EventTypeName>` to tell "
                "which event type this schema is",
                at,
            )
        return value

    def flatten(
        self,
        schema: Mapping,
        at: At,
        prefix: str,
        required: bool,
        envelope: Envelope,
        policies: list,
        columns: dict[str, At],
    ) -> list[Field]:
        """The fields of an object's properties; nested objects flatten into more fields."""
        if prefix.count(".") > MAX_DEPTH:
            raise self.fail(
                f"objects nest more than {MAX_DEPTH} levels here ({prefix[:60]}...): a "
                "recursive $ref (a model that contains itself)? The contract needs a finite "
                "schema: cut the recursion, or give the property x-jsl-type: json to keep "
                "its JSON text",
                at,
            )
        policies.append((schema.get("additionalProperties") is False, at))
        fields = []
        for key, prop, prop_at, is_required in self.properties(schema, at):
            try:
                fields += self.property_fields(
                    key,
                    prop,
                    prop_at,
                    prefix,
                    required and is_required,
                    envelope,
                    policies,
                    columns,
                )
            except ContractError as error:  # reported with the others at the event type's end
                self.problems.append(error)
        return fields

    def property_fields(
        self,
        key: str,
        prop: Any,
        prop_at: At,
        prefix: str,
        required: bool,
        envelope: Envelope,
        policies: list,
        columns: dict[str, At],
    ) -> list[Field]:
        """The fields of one property: one, or its object's fields flattened."""
        prop, prop_at = self.schema(prop, prop_at)
        self.check_keywords(prop, prop_at)
        self.not_here(prop, prop_at, "x-jsl-severities", "at the root of the document")
        path = prefix + key
        nested = self.is_object(prop) and prop.get("properties")
        if nested and self.flattens(prop, prop_at, path, envelope):
            for keyword in ("minProperties", "maxProperties"):
                if keyword in prop:  # no column holds the object: the validator counts
                    self.delegate((*prop_at, keyword))
            if "x-jsl-column" in prop:
                raise self.fail(
                    "x-jsl-column on an object that is flattened into columns; "
                    "set it on its properties, or add x-jsl-type: struct",
                    (*prop_at, "x-jsl-column"),
                )
            # A nullable object may be null: its fields cannot be required then.
            inner = required and prop.get("nullable") is not True
            if not inner and prop.get("required"):
                # Required only when the object is there: no column's rule, the validator's.
                self.delegate((*prop_at, "required"))
            return self.flatten(prop, prop_at, f"{path}.", inner, envelope, policies, columns)
        found = self.field(prop, prop_at, path, required, discriminator=path == envelope.event_type)
        columns[path] = prop_at
        return [found]

    def flattens(self, prop: Mapping, at: At, path: str, envelope: Envelope) -> bool:
        """Whether the object `prop` at `path` is flattened into columns: as its
        `x-jsl-flatten` says, else always when it holds one of the envelope's paths (they
        are top-level columns), else as the layout says (`Layout`); never when it has an
        `x-jsl-type`."""
        if "x-jsl-type" in prop:
            return False
        if "x-jsl-flatten" in prop:
            if not isinstance(prop["x-jsl-flatten"], bool):
                raise self.fail(
                    "x-jsl-flatten is true (this object's properties are columns of their "
                    f"own) or false (one struct column), got {prop['x-jsl-flatten']!r}",
                    (*at, "x-jsl-flatten"),
                )
            return prop["x-jsl-flatten"]
        paths = (envelope.event_type, envelope.event_id, envelope.event_time)
        if any(isinstance(p, str) and p.startswith(f"{path}.") for p in paths):
            return True
        return self.flattened(path)

    def unique_columns(self, fields: list[Field], columns: dict[str, At]) -> list[Field]:
        """The flattened fields, those whose last keys share a column, or whose column is one
        silver adds (`subject`, `seq`, ...), named by their whole path instead
        (`head_commit.author.name` -> `head_commit__author__name`; `subject` ->
        `payload__subject`); a column someone named (`x-jsl-column`) keeps its name."""
        by_column: dict[str, list[Field]] = {}
        for f in fields:
            by_column.setdefault(f.column.lower(), []).append(f)
        renamed = []
        for f in fields:
            shared = len(by_column[f.column.lower()]) > 1 and "." in f.path
            reserved = f.column.lower() in RESERVED_COLUMNS
            if (shared or reserved) and f.column == default_column(f.path):
                f = replace(f, column=path_column(("payload." if reserved else "") + f.path))
            renamed.append(f)
        taken: dict[str, Field] = {}
        for f in renamed:
            other = taken.setdefault(f.column.lower(), f)
            if other is not f:
                raise self.fail(
                    f"two properties land in column {f.column!r}: this one ({f.path}) and "
                    f"#/{'/'.join(map(str, columns[other.path]))} ({other.path}); set "
                    "x-jsl-column on one, or x-jsl-type: struct on an object to keep it as "
                    "one column",
                    columns[f.path],
                )
        return renamed


def as_json_text(found: Field) -> Field:
    """`found` with each VARIANT in its type (a struct's members, an array's elements, ...)
    made `json`, the value's JSON text, as this project wrote such values before VARIANT."""

    def in_type(kind: FieldType) -> FieldType:
        if kind.kind is TypeKind.VARIANT:
            return FieldType(TypeKind.JSON)
        if kind.element is not None:
            return replace(kind, element=in_type(kind.element))
        if kind.fields:
            return replace(kind, fields=tuple(as_json_text(f) for f in kind.fields))
        return kind

    return replace(found, type=in_type(found.type))


def _own_rules_only(found: Field) -> Field:
    """`found` with only the constraints the validator does not judge the same way: those
    someone named or gave a severity (`x-jsl-rule`, `x-jsl-severity`), `x-jsl-not-in-future`,
    and pydantic's Decimal text judged as a number; struct members and array elements too."""

    def own(constraint) -> bool:
        named = constraint.rule is not None or constraint.severity is not Severity.QUARANTINE
        silver_only = isinstance(constraint, NotInFuture) or constraint.numeric_text
        return named or silver_only or getattr(constraint, "regex", None) == DECIMAL_PATTERN

    def in_type(kind: FieldType) -> FieldType:
        if kind.element is not None:
            return replace(kind, element=in_type(kind.element))
        if kind.fields:
            return replace(kind, fields=tuple(_own_rules_only(f) for f in kind.fields))
        return kind

    kept = tuple(c for c in found.constraints if own(c))
    return replace(found, constraints=kept, type=in_type(found.type))


def contract_from_json_schemas(
    schemas: Mapping[str, Mapping[str, Any]],
    *,
    envelope: Envelope = NO_ENVELOPE,
    tables: Mapping[str, str] | None = None,
    subjects: Mapping[str, Sequence[str]] | None = None,
    derived: Mapping[str, Sequence[DerivedColumn]] | None = None,
    source: str | None = None,
    layout: Layout = STRUCT_LAYOUT,
) -> Contract:
    """A contract from one JSON Schema per message type.

    Args:
        schemas: per name (the event type's name when there is no discriminator), the
            payload's schema.
        envelope: the envelope's JSON paths.
        tables: per event type, its silver table (default `silver/<snake_case name>`).
        subjects: per event type, its subjects.
        derived: per event type, its derived columns.
        source: the schemas' name in errors (each schema's is `<source>[<name>]`).
        layout: which nested objects are flattened (default: none, each is a struct).

    Returns:
        The contract.

    Raises:
        ContractError: naming the schema path of the first problem.
    """
    readers = [
        (SchemaReader(schema, source=f"{source or 'schemas'}[{name}]"), schema, name)
        for name, schema in schemas.items()
    ]
    return _contract(readers, envelope, tables, subjects, derived, source, layout)


def read_json_schemas(
    paths: Sequence[str | Path],
    *,
    envelope: Envelope = NO_ENVELOPE,
    tables: Mapping[str, str] | None = None,
    subjects: Mapping[str, Sequence[str]] | None = None,
    derived: Mapping[str, Sequence[DerivedColumn]] | None = None,
    default_subjects: Sequence[str] = (),
    layout: Layout = STRUCT_LAYOUT,
) -> Contract:
    """`contract_from_json_schemas` of JSON or YAML files, each named by its file name's stem
    (or, for each schema of a top-level oneOf/anyOf, by its discriminator's const).

    `default_subjects` are the subjects of an event type `subjects` gives none (a stream
    declared with one event type and no discriminator: the stream's subjects).

    Raises:
        ContractError: naming the file, line and schema path of the first problem.
    """
    readers = []
    for path in paths:
        doc = load_document(path)
        reader = SchemaReader(doc.data, source=doc.source, line_of=doc.line_of)
        readers.append((reader, doc.data, event_name_of(path)))
    return _contract(readers, envelope, tables, subjects, derived, None, layout, default_subjects)


def event_name_of(path: str | Path) -> str:
    """The event type a schema file names: its name without `.json`/`.yaml`/`.yml` and then
    without `.schema` (`OrderPlaced.schema.json` -> `OrderPlaced`, `com.example.order.placed.json`
    -> `com.example.order.placed`, a CloudEvents type as sent)."""
    name = Path(path).name
    for suffix in (".json", ".yaml", ".yml"):
        if name.endswith(suffix):
            name = name.removesuffix(suffix)
            break
    return name.removesuffix(".schema") or name


def _contract(
    readers, envelope, tables, subjects, derived, source, layout, default_subjects=()
) -> Contract:
    subjects, derived = subjects or {}, derived or {}
    events, severities, ids, problems = [], {}, [], []
    for reader, schema, name in readers:
        if isinstance(schema, Mapping) and isinstance(schema.get("$id"), str):
            ids.append(schema["$id"])
        for rule, severity in reader.severities(schema, ()).items():
            if severities.setdefault(rule, severity) is not severity:
                raise reader.fail(
                    f"{rule} is {severity.value} here but {severities[rule].value} in another "
                    "schema; a built-in rule has one severity per contract",
                    ("x-jsl-severities", rule),
                )
        inner = envelope
        if envelope.type_outside_payload:
            # The discriminator is a header (or CloudEvents' type), not in the schema: the
            # file's name (or a union's titles) names each event type, as it is sent.
            inner = NO_ENVELOPE
        for variant, at, variant_name in reader.variants(schema, (), name, inner):
            try:
                event = reader.event_type(
                    variant, at, name=variant_name, envelope=inner, tables=tables, layout=layout
                )
            except ContractError as error:  # every event type's problems in one error
                problems.append(error)
                continue
            extra = {
                "subjects": tuple(subjects.get(event.name, default_subjects)),
                "derived": tuple(derived.get(event.name, ())),
            }
            with located(source, ("events", event.name)):
                events.append(replace(event, **{k: v for k, v in extra.items() if v}))
        reader.log_unknown_formats()
    if problems:
        raise combined(problems)
    with located(source, ()):
        return Contract(tuple(events), envelope, severities, version=" ".join(ids) or None)
