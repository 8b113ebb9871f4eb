"""A message's fields and the columns they land in: `Field`, `DerivedColumn`, column names.

A field's path is the dotted JSON path from the message root (`data.fileSize`), its column
by default the snake_case of the path's last key (`file_size`). Column names are plain SQL
identifiers, compared case-insensitively as Spark resolves them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pipelines.contract.constraints import Constraint
from pipelines.contract.datatypes import FieldType
from pipelines.contract.errors import ContractError, PathPart

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
            from the struct.
        type: its type.
        column: its column; by default the snake_case of the path's last key.
        required: whether a row without it (or with null) breaks `required_fields_present`.
        description: what it means (the column's comment).
        constraints: checks of its value, at most one of each kind.
    """

    path: str
    type: FieldType
    column: str = ""
    required: bool = False
    description: str | None = None
    constraints: tuple[Constraint, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.path, str) or not all(self.path.split(".")):
            raise ContractError(
                f"a field path is dotted JSON keys such as data.fileSize, got {self.path!r}"
            )
        if not self.column:
            object.__setattr__(self, "column", snake_case(self.path.rsplit(".", 1)[-1]))
        check_column_name(self.column)
        if not isinstance(self.type, FieldType):
            raise ContractError(f"type must be a FieldType, got {self.type!r}", path=("type",))
        if not isinstance(self.required, bool):
            raise ContractError(
                f"required is true or false, got {self.required!r}", path=("required",)
            )
        object.__setattr__(self, "constraints", tuple(self.constraints))
        kinds = [c.kind for c in self.constraints]
        for kind in kinds:
            if kinds.count(kind) > 1:
                raise ContractError(f"two {kind} constraints; keep one", path=(kind,))
        for constraint in self.constraints:
            constraint.check(self.type)
        check_unique_columns(self.type.innermost.fields, ("type",))


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
