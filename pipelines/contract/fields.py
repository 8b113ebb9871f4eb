"""A message's fields and the columns they land in: `Field`, `DerivedColumn`, column names.

A field's path is the dotted JSON path from the message root (`data.fileSize`), its column
by default the snake_case of the path's last key (`file_size`). A top-level field of a scalar
type may instead be read from outside the payload (`FieldSource`, docs/envelopes.md):

- `header:<Name>`: the NATS header `<Name>` (exact name first, else the first header whose
  name matches ignoring case); column by default the snake_case of the name
  (`header:Nats-Msg-Id` -> `nats_msg_id`).
- `subject:<index>`: the 0-based token of the message's subject split on `.`
  (`subject:5` -> column `subject_5`).
- `cloudevents:<attribute>`: a CloudEvents context attribute, only under the envelope preset
  `cloudevents` (the `ce-<attribute>` header in binary mode, the payload's top-level
  `<attribute>` in structured mode); column `ce_<attribute>`.

Their text is typed as the field's type says; absent is missing, unparsable is mistyped.
Column names are plain SQL identifiers, compared case-insensitively as Spark resolves them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pipelines.contract.constraints import Constraint
from pipelines.contract.datatypes import FieldType, TypeKind, stable_repr
from pipelines.contract.errors import ContractError, PathPart
from resources.backports import StrEnum

# Columns silver adds to every table (where the row came from, which run wrote it, what it
# broke): a field or derived column of the same name would collide with them.
RESERVED_COLUMNS = frozenset(
    {
        "stream",
        "seq",
        "subject",
        "published",
        "run_id",
        "processed_at",
        "contract_version",
        "failed_rules",
    }
)
UNKNOWN_FIELDS_COLUMN = "unknown_fields"  # the map column of `UnknownFields.KEEP`
_COLUMN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# A NATS header name: printable ASCII (33-126) except the colon (NATS ADR-4, as HTTP).
_HEADER_NAME = re.compile(r"^[!-9;-~]+$")
_ATTRIBUTE = re.compile(r"^[a-z0-9]{1,20}$")  # a CloudEvents attribute name
# The types a header or subject token's text can be read as.
TEXT_KINDS = (
    TypeKind.STRING,
    TypeKind.INTEGER,
    TypeKind.LONG,
    TypeKind.DOUBLE,
    TypeKind.DECIMAL,
    TypeKind.BOOLEAN,
    TypeKind.TIMESTAMP,
    TypeKind.DATE,
)


class SourceKind(StrEnum):
    """Where a field's value comes from: the prefix of its path (none for the payload)."""

    PAYLOAD = "payload"
    HEADER = "header"
    SUBJECT = "subject"
    CLOUDEVENTS = "cloudevents"


@dataclass(frozen=True)
class FieldSource:
    """Where a field path reads from.

    Attributes:
        kind: payload, header, subject or cloudevents.
        name: the JSON path, the header name, the token index (as text) or the attribute.
    """

    kind: SourceKind
    name: str

    @property
    def index(self) -> int:
        """The subject token's 0-based index."""
        return int(self.name)


def field_source(path: object) -> FieldSource:
    """Where a field `path` reads from (`header:Nats-Msg-Id`, `subject:2`, `data.amount`).

    Raises:
        ContractError: `path` is none of the forms, naming the form it starts like and the fix.
    """
    if not isinstance(path, str):
        raise ContractError(
            f"a field path is dotted JSON keys such as data.fileSize, header:<Name> or "
            f"subject:<index>, got {path!r}"
        )
    prefix, colon, name = path.partition(":")
    if colon and prefix == SourceKind.HEADER:
        if not _HEADER_NAME.match(name):
            raise ContractError(
                f"{path!r} does not name a NATS header: write header:<Name> with a name of "
                "printable ASCII characters other than ':' and space (e.g. header:Nats-Msg-Id)"
            )
        return FieldSource(SourceKind.HEADER, name)
    if colon and prefix == SourceKind.SUBJECT:
        if not re.fullmatch(r"[0-9]{1,3}", name):
            raise ContractError(
                f"{path!r} does not name a subject token: write subject:<index> with the "
                "0-based index of the token (subject:2 is `c` in a.b.c.d)"
            )
        return FieldSource(SourceKind.SUBJECT, str(int(name)))
    if colon and prefix == SourceKind.CLOUDEVENTS:
        if not _ATTRIBUTE.match(name):
            raise ContractError(
                f"{path!r} does not name a CloudEvents attribute: lower-case letters and "
                "digits, at most 20 (e.g. cloudevents:traceparent)"
            )
        return FieldSource(SourceKind.CLOUDEVENTS, name)
    if not path or not all(path.split(".")):
        raise ContractError(
            f"a field path is dotted JSON keys such as data.fileSize, header:<Name> or "
            f"subject:<index>, got {path!r}"
        )
    for key in path.split("."):
        if "'" in key and '"' in key:
            raise ContractError(
                f"the key {key!r} holds both quote characters, which Spark cannot read from a "
                "VARIANT (its paths have no escapes): declare the object holding it as variant "
                "or json"
            )
    return FieldSource(SourceKind.PAYLOAD, path)


def default_column(path: str) -> str:
    """A field's column when it names none: `data.fileSize` -> `file_size`,
    `header:Nats-Msg-Id` -> `nats_msg_id`, `subject:5` -> `subject_5`,
    `cloudevents:id` -> `ce_id`."""
    source = field_source(path)
    if source.kind is SourceKind.HEADER:
        return snake_case(source.name) or "header"
    if source.kind is SourceKind.SUBJECT:
        return f"subject_{source.index}"
    if source.kind is SourceKind.CLOUDEVENTS:
        return f"ce_{source.name}"
    return key_column(path.rsplit(".", 1)[-1])


def key_column(key: str) -> str:
    """A JSON key's column name: its snake_case (`fileSize` -> `file_size`); a key that has
    other characters than letters, digits, `_`, `-`, `.` and spaces, or that would start with
    a digit, has each such character written as `x` and its hex code instead (`+1` ->
    `x2b_1`, `-1` -> `x2d_1`, `1st` -> `_1st`), so that those keys stay apart."""
    name = snake_case(key)
    if re.fullmatch(r"[A-Za-z0-9_\- .]*", key) and name[:1].isalpha():
        return name
    chars = (c if c.isascii() and (c.isalnum() or c == "_") else f"_x{ord(c):x}_" for c in key)
    name = re.sub("_+", "_", snake_case("".join(chars)) or "_")
    return name if name[:1].isalpha() or name[:1] == "_" else f"_{name}"


def path_column(path: str) -> str:
    """The column of a field named by its whole path, its keys' columns joined by `__`
    (`head_commit.author.name` -> `head_commit__author__name`, `hook.id` -> `hook__id`), for
    fields whose last keys would share a column. A key's column never holds `__`, so no such
    name is any other key's or path's column."""
    return "__".join(key_column(part).strip("_") or "x" for part in path.split("."))


def snake_case(name: str) -> str:
    """`fileSize` -> `file_size`, `HTTPStatus` -> `http_status`, `user-id` -> `user_id`."""
    text = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", text)
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").lower()


def check_column_name(name: object, *, key: str = "column") -> None:
    """Raises `ContractError` (path: `key`) unless `name` is a plain SQL identifier."""
    if not isinstance(name, str) or not _COLUMN.match(name):
        raise ContractError(
            f"column name {name!r} is not a plain identifier (letters, digits, _; not starting "
            "with a digit); rename it",
            path=(key,),
        )


@dataclass(frozen=True)
class Field:
    """One field of a message and the column it lands in.

    Attributes:
        path: dotted JSON path from the message root (`data.fileSize`); inside a struct,
            from the struct. A top-level field may read `header:<Name>`, `subject:<index>`
            or (under the cloudevents preset) `cloudevents:<attribute>` instead.
        type: its type.
        column: its column; by default the snake_case of the path's last key
            (`default_column`).
        required: whether a row without it (or with null, unless `nullable`) breaks
            `required_fields_present`.
        description: what it means (the column's comment).
        constraints: checks of its value, at most one of each kind.
        nullable: whether JSON null is a value it may hold: a required nullable field must
            be present but may be null (pydantic's `x: Optional[str]` without a default).
            Unset (None, the YAML form's default), an optional field may be absent or null;
            false (a JSON Schema whose type leaves out null), JSON null on an optional field
            breaks `field_types_valid` (`x (expected a string, got null)`). On a required
            field false is the same as unset, and is kept as unset.
        items_nullable: whether a JSON null element of an array (value of a map) conforms.
            Unset (None), it does and stays null; false (JSON Schema `items` that leave out
            null), it makes the field mistyped.
        closed_items: the objects inside the array have no field beyond their declared
            members (JSON Schema `additionalProperties: false` under `items`): an undeclared
            one is an unknown field (`lines[0].extra`) when the event type keeps or rejects
            them.
        number_text: a string field that also takes a JSON number, as its exact text
            (pydantic's Decimal: `anyOf: [number, string]`); a number that is not held
            exactly (one Spark would read as a double) is mistyped.
    """

    path: str
    type: FieldType
    column: str = ""
    required: bool = False
    description: str | None = None
    constraints: tuple[Constraint, ...] = ()
    nullable: bool | None = None
    items_nullable: bool | None = None
    closed_items: bool = False
    number_text: bool = False

    def __repr__(self) -> str:
        quiet = ("nullable", "items_nullable", "closed_items", "number_text")
        return stable_repr(self, quiet)

    def __post_init__(self) -> None:
        source = field_source(self.path)
        if not self.column:
            object.__setattr__(self, "column", default_column(self.path))
        check_column_name(self.column)
        if not isinstance(self.type, FieldType):
            raise ContractError(f"type must be a FieldType, got {self.type!r}", path=("type",))
        if source.kind is not SourceKind.PAYLOAD and self.type.kind not in TEXT_KINDS:
            raise ContractError(
                f"{self.path!r} is read from text, which cannot hold {self.type}: "
                f"declare it as one of {', '.join(TEXT_KINDS)}",
                path=("type",),
            )
        for member in self.type.innermost.fields:
            if member.source.kind is not SourceKind.PAYLOAD:
                raise ContractError(
                    f"{member.path!r} is inside a struct, and only top-level fields read "
                    "headers or subject tokens: declare it at the top level",
                    path=("fields", member.path),
                )
        if not isinstance(self.required, bool):
            raise ContractError(
                f"required is true or false, got {self.required!r}", path=("required",)
            )
        for key in ("nullable", "items_nullable"):
            if getattr(self, key) is not None and not isinstance(getattr(self, key), bool):
                raise ContractError(
                    f"{key} is true or false, got {getattr(self, key)!r}", path=(key,)
                )
        if self.required and self.nullable is False:
            # The same as unset (null is missing), and the repr (fingerprint) stays as it was.
            object.__setattr__(self, "nullable", None)
        collection = self.type.kind in (TypeKind.ARRAY, TypeKind.MAP)
        if self.items_nullable is not None and not collection:
            raise ContractError(
                f"items_nullable applies to arrays and maps, not {self.type}",
                path=("items_nullable",),
            )
        element = self.type.element
        arrays_of_structs = self.type.kind is TypeKind.ARRAY and element.kind is TypeKind.STRUCT
        if self.number_text and self.type.kind is not TypeKind.STRING:
            raise ContractError(
                f"number_text applies to strings, not {self.type}", path=("number_text",)
            )
        if self.closed_items and not arrays_of_structs:
            raise ContractError(
                f"closed_items applies to arrays of structs, not {self.type}",
                path=("closed_items",),
            )
        object.__setattr__(self, "constraints", tuple(self.constraints))
        kinds = [c.kind for c in self.constraints]
        for kind in kinds:
            if kinds.count(kind) > 1:
                raise ContractError(f"two {kind} constraints; keep one", path=(kind,))
        for constraint in self.constraints:
            constraint.check(self.type)
        check_unique_columns(self.type.innermost.fields, ("type",))

    @property
    def source(self) -> FieldSource:
        """Where the field reads from (the payload, a header, a subject token, CloudEvents)."""
        return field_source(self.path)


@dataclass(frozen=True)
class DerivedColumn:
    """A column computed from the others by a Spark SQL expression (kept as text).

    Attributes:
        name: the column.
        expression: e.g. `deleted_at + INTERVAL 30 DAYS`.
        type: the type to cast the result to; None keeps the expression's.
        description: what it means.
    """

    name: str
    expression: str
    type: FieldType | None = None
    description: str | None = None

    def __post_init__(self) -> None:
        check_column_name(self.name, key="name")
        if not isinstance(self.expression, str) or not self.expression.strip():
            raise ContractError(
                f"a derived column needs a Spark SQL expression, got {self.expression!r}",
                path=("expression",),
            )


def check_unique_columns(fields: tuple[Field, ...], prefix: tuple[PathPart, ...]) -> None:
    """Raises `ContractError` if two of `fields` land in the same column (ignoring case)."""
    seen: dict[str, str] = {}
    for f in fields:
        key = f.column.lower()
        if key in seen:
            raise ContractError(
                f"fields {seen[key]!r} and {f.path!r} both land in column {f.column!r}; "
                "set `column` on one of them",
                path=(*prefix, "fields", f.path, "column"),
            )
        seen[key] = f.path
