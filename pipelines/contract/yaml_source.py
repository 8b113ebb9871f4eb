"""YAML (and JSON) documents that remember the line of every key, for errors that name it.

`load_document` reads a file (JSON with `json`, YAML with PyYAML's safe loader on libyaml) and,
when an error needs a line, composes its node tree, from which it records the line of each
mapping key and list item by path. A key written twice in
one mapping (which PyYAML would silently resolve to the last value) is an error here. With
`yaml12=True` (AsyncAPI documents, which are YAML 1.2) plain `on`, `off`, `yes`, `no` stay
text and dates stay text, as a YAML 1.2 parser (the AsyncAPI tools') reads them; only
`true`/`false` are booleans.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pipelines.contract.errors import ContractError, PathPart


class Yaml12Loader(yaml.SafeLoader):
    """PyYAML's safe loader with YAML 1.2's booleans (true/false only) and no timestamps."""


Yaml12Loader.yaml_implicit_resolvers = {
    first: [
        (tag, regexp)
        for tag, regexp in resolvers
        if tag not in ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:timestamp")
    ]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


class _CYaml12Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """`Yaml12Loader` on libyaml where PyYAML has it (several times faster)."""


_CYaml12Loader.yaml_implicit_resolvers = Yaml12Loader.yaml_implicit_resolvers
_C_LOADERS = {False: getattr(yaml, "CSafeLoader", yaml.SafeLoader), True: _CYaml12Loader}


@dataclass(frozen=True)
class Document:
    """A parsed document and where its keys are.

    Attributes:
        data: the plain Python value (dicts, lists, scalars).
        source: the file name (or another name) used in errors.
        lines: the 1-based line of each path's key or item (indexed on first use: a document
            read without an error never pays for it).
    """

    data: Any
    source: str | None = None
    indexed: Callable[[], dict[tuple[PathPart, ...], int]] | None = field(
        default=None, compare=False, repr=False
    )

    @functools.cached_property
    def lines(self) -> dict[tuple[PathPart, ...], int]:
        return self.indexed() if self.indexed else {}

    def line_of(self, path: tuple[PathPart, ...]) -> int | None:
        """The line of `path`, or of its longest prefix the document has; None if none."""
        for end in range(len(path), 0, -1):
            line = self.lines.get(tuple(path[:end]))
            if line is not None:
                return line
        return None


def load_document(path: str | Path, *, yaml12: bool = False) -> Document:
    """Reads a YAML or JSON file with the line of every key.

    Args:
        path: the file.
        yaml12: read plain scalars as YAML 1.2 does (booleans only true/false, no dates).

    Returns:
        The document; its `source` is `path` as given.

    Raises:
        ContractError: the file cannot be read, is not valid YAML, or repeats a key.
    """
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ContractError(
            f"cannot read the file: {error.strerror or error}", source=source
        ) from error
    return parse_document(text, source=source, yaml12=yaml12)


def parse_document(text: str, *, source: str | None = None, yaml12: bool = False) -> Document:
    """Parses YAML (or JSON) text with the line of every key.

    Args:
        text: the document.
        source: its name in errors.
        yaml12: read plain scalars as YAML 1.2 does (booleans only true/false, no dates).

    Returns:
        The document.

    Raises:
        ContractError: the text is not valid YAML or repeats a key in a mapping.
    """
    if text.lstrip()[:1] in ("{", "["):  # JSON: read as JSON, ten times faster than YAML
        try:
            data = json.loads(text, object_pairs_hook=_no_repeated_keys)
        except ValueError:
            pass  # invalid JSON, or a key written twice: the YAML reading says where
        else:
            return Document(data, source, lambda: _lines(text, source, yaml12))
    loader = _C_LOADERS[yaml12]
    try:
        data = yaml.load(text, Loader=loader)  # a safe loader
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        problem = getattr(error, "problem", None) or str(error)
        raise ContractError(
            f"not valid YAML: {problem}",
            source=source,
            line=mark.line + 1 if mark else None,
            absolute=True,
        ) from None
    lines = _lines(text, source, yaml12)  # also refuses a key written twice
    return Document(data, source, lambda: lines)


def _no_repeated_keys(pairs: list[tuple[str, Any]]) -> dict:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise ValueError("a key written twice")
    return found


def _lines(text: str, source: str | None, yaml12: bool) -> dict[tuple[PathPart, ...], int]:
    node = yaml.compose(text, Loader=_C_LOADERS[yaml12])
    lines: dict[tuple[PathPart, ...], int] = {}
    if node is not None:
        _index(node, (), lines, source)
    return lines


def _index(
    node: yaml.Node,
    path: tuple[PathPart, ...],
    lines: dict[tuple[PathPart, ...], int],
    source: str | None,
) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                continue
            key = key_node.value
            if key in seen:
                raise ContractError(
                    f"key {key!r} appears twice in this mapping; keep one",
                    source=source,
                    path=path,
                    line=key_node.start_mark.line + 1,
                    absolute=True,
                )
            seen.add(key)
            lines[(*path, key)] = key_node.start_mark.line + 1
            _index(value_node, (*path, key), lines, source)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines[(*path, index)] = item.start_mark.line + 1
            _index(item, (*path, index), lines, source)
