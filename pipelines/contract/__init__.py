"""The event contract of a stream: declared once, read into one immutable `Contract`.

Three forms give the same object:

- YAML inline (a component's defs.yaml): `read_contract(path)`, `contract_from_dict(data)`.
- JSON Schema (draft 2020-12), one per message type: `read_json_schemas(paths, ...)`,
  `contract_from_json_schemas(schemas, ...)`.
- AsyncAPI 2.x or 3.x, the channels under a JetStream stream's subjects:
  `read_asyncapi(path, stream=..., subjects=...)`, `contract_from_asyncapi(document, ...)`.

Every problem raises `ContractError` naming the file, line and path. See docs/contract.md.
"""

from pipelines.contract.asyncapi_reader import contract_from_asyncapi, read_asyncapi
from pipelines.contract.constraints import (
    AllowedValues,
    Constraint,
    Format,
    MaxLength,
    NotInFuture,
    Pattern,
    Range,
    Severity,
    StringFormat,
    parse_duration,
)
from pipelines.contract.datatypes import FieldType, TimestampEncoding, TypeKind, parse_type
from pipelines.contract.errors import ContractError
from pipelines.contract.json_schema_reader import (
    Layout,
    NestedObjects,
    WrittenTable,
    contract_from_json_schemas,
    read_json_schemas,
)
from pipelines.contract.model import (
    RESERVED_COLUMNS,
    UNKNOWN_FIELDS_COLUMN,
    Contract,
    DerivedColumn,
    Envelope,
    EventType,
    Field,
    UnknownFields,
    snake_case,
)
from pipelines.contract.rules import BUILTIN_RULES, Rule
from pipelines.contract.sizes import (
    CONSTRAINT_KINDS,
    MaxItems,
    MaxProperties,
    MinItems,
    MinLength,
    MinProperties,
    MultipleOf,
    UniqueItems,
)
from pipelines.contract.yaml_reader import (
    contract_from_dict,
    default_table,
    derived_from_dict,
    read_contract,
    read_derived,
)

__all__ = [
    "BUILTIN_RULES",
    "CONSTRAINT_KINDS",
    "RESERVED_COLUMNS",
    "UNKNOWN_FIELDS_COLUMN",
    "AllowedValues",
    "Constraint",
    "Contract",
    "ContractError",
    "DerivedColumn",
    "Envelope",
    "EventType",
    "Field",
    "FieldType",
    "Format",
    "Layout",
    "MaxItems",
    "MaxLength",
    "MaxProperties",
    "MinItems",
    "MinLength",
    "MinProperties",
    "MultipleOf",
    "NestedObjects",
    "NotInFuture",
    "Pattern",
    "Range",
    "Rule",
    "Severity",
    "StringFormat",
    "TimestampEncoding",
    "TypeKind",
    "UniqueItems",
    "UnknownFields",
    "WrittenTable",
    "contract_from_asyncapi",
    "contract_from_dict",
    "contract_from_json_schemas",
    "default_table",
    "derived_from_dict",
    "parse_duration",
    "parse_type",
    "read_asyncapi",
    "read_contract",
    "read_derived",
    "read_json_schemas",
    "snake_case",
]
