"""`ComponentDeclarationError`: what a `defs.yaml` declares wrong, as one message without a
Python traceback, and `DeclarationSite`, which knows the file and the line of each attribute.

The message starts with the file and the line of the attribute that led to the error, then the
attribute, what is wrong and what to do; a broken contract adds its own place (file, line,
path in the document), the file relative to the `defs.yaml`'s folder when it is there:

    .../defs/orders/defs.yaml:9: attributes.asyncapi_file: orders.asyncapi.yaml:51:
    #/components/schemas/OrderPlaced/properties/data/properties/customerId/type: unsupported
    type 'varchar'; use string, integer, number, boolean, object or array ...

How it is printed without a traceback. Dagster (1.13) has no error class of its own that a code
location's load prints without its stack: its YAML schema errors get file, line and no stack
from `dg check yaml`, which `dg check defs` runs before loading anything, but whatever a
component raises once loading starts is printed from the `SerializableErrorInfo` Dagster makes
of it (the message, the stack and each cause's), inside the component tree's
`ComponentTreeException` (which prints the whole tree) inside a `DagsterUserCodeLoadError`.
So this error is also each of the three things that Dagster and click print as a message alone:

- a `ComponentTreeException` (`dagster.components.core.component_tree`): the tree wraps any
  other exception of a component's load or build in one, and lets its own class through (as it
  does for a nested component's error, which already says where it is);
- a `DagsterUserCodeProcessError` carrying its own `SerializableErrorInfo` (message, no stack):
  a `DagsterError` passes the user-code boundary unwrapped, and
  `dagster._utils.error.serializable_error_info_from_exc_info`, which makes the load error of
  every code location (`dg check defs`, `dagster definitions validate`, the code server behind
  `dagster dev` and the webserver), takes that info as it is, as it does for an error already
  reported by another process, instead of recording a stack;
- a `click.ClickException`: `dg launch` (and `dagster asset materialize`) load the definitions
  in the CLI's own process, outside that capture; click prints it as `Error: <message>` and
  exits with status 1.

And a code server (`dagster api grpc`, which `dagster dev`, the webserver of a workspace and
`dg check defs` of a workspace load through) also logs a failed load with
`logger.exception("Error while importing code")`, traceback and all: a filter on its logger,
`dagster.code_server`, added when this module is imported (before any component can fail),
logs this error's message instead.

It stays a `ValueError`. tests/pipelines/components/test_declaration_errors.py runs the real
`dg check defs` and fails if a traceback comes back (e.g. after a Dagster upgrade).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import click
from dagster._core.errors import DagsterUserCodeProcessError
from dagster.components.core.component_tree import ComponentTreeException
from dagster_shared.error import SerializableErrorInfo
from dagster_shared.yaml_utils.source_position import (
    SourcePositionTree,
    ValueAndSourcePositionTree,
)

from pipelines.contract import ContractError
from pipelines.contract.errors import format_path
from pipelines.contract.yaml_source import load_document

if TYPE_CHECKING:
    from dagster import ComponentLoadContext

# An attribute's path under `attributes:`, e.g. ("asyncapi_file",) or ("ingests", 1).
Attribute = tuple[str | int, ...]
DEFS_FILES = ("defs.yaml", "defs.yml", "component.yaml")  # what Dagster reads, in its order
CODE_SERVER_LOGGER = "dagster.code_server"


class ComponentDeclarationError(
    ValueError, ComponentTreeException, DagsterUserCodeProcessError, click.ClickException
):
    """A `defs.yaml` declares something the project refuses: the message names the file, the
    line and the attribute, says what is wrong and what to do, and is printed without a
    traceback (the module's docstring says how)."""

    def __init__(self, message: str) -> None:
        click.ClickException.__init__(self, message)  # also sets `args`, as ValueError's would
        self.user_code_process_error_infos = [
            SerializableErrorInfo(
                message=f"{type(self).__name__}: {message}\n",
                stack=[],
                cls_name=type(self).__name__,
            )
        ]


class WithoutTraceback(logging.Filter):
    """Logs a `ComponentDeclarationError` as its message, without the traceback a
    `logger.exception` call would add (other records pass unchanged)."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrites `record` if it carries the error; always keeps it."""
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, ComponentDeclarationError):
            record.msg = f"{record.getMessage()}: {type(error).__name__}: {error}"
            record.args, record.exc_info, record.exc_text = None, None, None
        return True


_code_server = logging.getLogger(CODE_SERVER_LOGGER)
if not any(type(f).__name__ == WithoutTraceback.__name__ for f in _code_server.filters):
    _code_server.addFilter(WithoutTraceback())


@dataclass(frozen=True)
class DeclarationSite:
    """Where a component is declared: its `defs.yaml` and the line of each attribute in it.

    Attributes:
        defs_yaml: the file.
        lines: the 1-based line of each attribute path (`("asyncapi_file",)`,
            `("ingests", 1)`, ...) the file declares.
    """

    defs_yaml: Path
    lines: Mapping[Attribute, int] = field(default_factory=dict)

    @classmethod
    def of(cls, context: ComponentLoadContext) -> DeclarationSite:
        """The site of the component `context` builds: the file and lines Dagster read it with
        (so a file of several documents gives this document's), else those of the defs file in
        its folder (`in_folder`)."""
        tree = getattr(getattr(context, "component_decl", None), "source_tree", None)
        if not isinstance(tree, ValueAndSourcePositionTree):
            return cls.in_folder(context.path)
        positions = tree.source_position_tree
        attributes = positions.children.get("attributes")
        lines = dict(_lines(attributes, ())) if attributes is not None else {}
        return cls(Path(positions.position.filename), lines)

    @classmethod
    def in_folder(cls, folder: Path) -> DeclarationSite:
        """The site of a component declared in `folder`: its defs.yaml (or defs.yml, or
        component.yaml) with the lines of its attributes, or `folder/defs.yaml` without lines
        if there is none (a component built in a test)."""
        defs_yaml = next(
            (folder / name for name in DEFS_FILES if (folder / name).is_file()),
            folder / DEFS_FILES[0],
        )
        try:
            document = load_document(defs_yaml)
        except ContractError:  # no such file, or several documents: no lines
            return cls(defs_yaml)
        lines = {
            path[1:]: line
            for path, line in document.lines.items()
            if len(path) > 1 and path[0] == "attributes"
        }
        return cls(defs_yaml, lines)

    def line_of(self, attribute: Attribute) -> int | None:
        """The line of `attribute`, or of its nearest parent the file declares; None if none."""
        for end in range(len(attribute), 0, -1):
            line = self.lines.get(tuple(attribute[:end]))
            if line is not None:
                return line
        return None

    def error(self, problem: str, attribute: Attribute = ()) -> ComponentDeclarationError:
        """`<defs.yaml>:<line>: attributes.<attribute>: <problem>`; the line and the attribute
        are left out when unknown (no attribute: the component as a whole)."""
        line = self.line_of(attribute)
        parts = [str(self.defs_yaml) if line is None else f"{self.defs_yaml}:{line}"]
        if attribute:
            parts.append(format_path(("attributes", *attribute)))
        return ComponentDeclarationError(": ".join([*parts, problem]))

    def contract_error(
        self, error: ContractError, attribute: Attribute
    ) -> ComponentDeclarationError:
        """`error` at `attribute`, the attribute that declares the contract: the contract's own
        place (its file relative to the defs.yaml's folder when it is there, line, path) and
        problem after the declaration's."""
        source, problem = error.source, error.problem
        if source is not None and Path(source).is_relative_to(self.defs_yaml.parent):
            source = str(Path(source).relative_to(self.defs_yaml.parent))
            problem = problem.replace(f"  - {error.source}", f"  - {source}")  # the others
        shown = ContractError(
            problem,
            source=source,
            path=error.path,
            line=error.line,
            pointer=error.pointer,
            absolute=True,
        )
        return self.error(str(shown), attribute)

    @contextmanager
    def blames(self, attribute: Attribute, stream: str) -> Iterator[None]:
        """Raises a `ValueError` raised inside as this declaration's error at `attribute`.

        A `ContractError` keeps its own place (`contract_error`); any other is named after the
        stream (`stream 'ORDERS': ...`) unless it already is.

        Raises:
            ComponentDeclarationError: what failed, with the file and the attribute's line.
        """
        try:
            yield
        except ComponentDeclarationError:
            raise
        except ContractError as error:
            raise self.contract_error(error, attribute) from error
        except ValueError as error:
            what = str(error)
            if not what.startswith("stream "):
                what = f"stream {stream!r}: {what}"
            raise self.error(what, attribute) from error

    def missing_file(self, attribute: str, given: str) -> ComponentDeclarationError:
        """The error for a contract file (`attribute: given`) that is not there: where it was
        looked for, and the YAML and JSON files that are."""
        folder = self.defs_yaml.parent
        found = sorted(
            p.name
            for p in (folder.iterdir() if folder.is_dir() else ())
            if p.suffix in (".yaml", ".yml", ".json") and p.name not in DEFS_FILES
        )
        there = (
            f"its YAML and JSON files: {', '.join(found)}"
            if found
            else "it has no YAML or JSON file besides this one"
        )
        return self.error(
            f"no file {given!r} in {folder}, the folder of this defs.yaml that the path is "
            f"relative to ({there}); fix the path or put the file there",
            (attribute,),
        )


def _lines(tree: SourcePositionTree, path: Attribute) -> Iterator[tuple[Attribute, int]]:
    for key, child in tree.children.items():
        yield (*path, key), child.position.start.line
        yield from _lines(child, (*path, key))
