"""`ContractError`: a contract that cannot be read, with where it went wrong and what to do.

Every reader raises this one class. Its message starts with the location: the file (and line,
when the YAML loader knows it) and the path inside the document, e.g.

    orders.yaml:12: events.OrderPlaced.fields['data.amount'].type: unknown type 'decimel'; ...
    orders.asyncapi.yaml:40: #/components/schemas/OrderPlaced/properties/data/oneOf: ...

Paths are dotted key paths for the YAML form (a key with a dot in it in `['...']`) and JSON
pointers for JSON Schema and AsyncAPI documents. The model's own checks raise errors with a
path relative to the object being built; `located` adds the reader's position.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

PathPart = str | int
Path = tuple[PathPart, ...]


class ContractError(ValueError):
    """An event contract that is invalid or uses something the contract does not support.

    Attributes:
        problem: what is wrong and what to do, without the location.
        source: the file it was read from (or another name of the document), if known.
        path: the keys (and list indexes) from the document's root to the offending value.
        line: the 1-based line in `source`, if known.
        pointer: whether `path` is shown as a JSON pointer (`#/a/b`) rather than dotted.
        absolute: whether `path` starts at the document's root (a reader raised it, or
            `located` placed it); otherwise it is relative to the object being built.
    """

    def __init__(
        self,
        problem: str,
        *,
        source: str | None = None,
        path: Sequence[PathPart] = (),
        line: int | None = None,
        pointer: bool = False,
        absolute: bool | None = None,
    ) -> None:
        self.problem = problem
        self.source = source
        self.path: Path = tuple(path)
        self.line = line
        self.pointer = pointer
        self.absolute = source is not None if absolute is None else absolute
        super().__init__(self._render())

    def _render(self) -> str:
        where = []
        if self.source is not None:
            where.append(self.source if self.line is None else f"{self.source}:{self.line}")
        if self.path or self.pointer:
            where.append(format_path(self.path, pointer=self.pointer))
        return ": ".join([*where, self.problem])

    def located(
        self,
        *,
        source: str | None,
        prefix: Sequence[PathPart],
        pointer: bool,
        line_of: Callable[[Path], int | None] | None = None,
    ) -> ContractError:
        """This error with the reader's position put in front of its relative path.

        Args:
            source: the document's file or name.
            prefix: the path of the object whose construction raised the error.
            pointer: whether paths of this document are JSON pointers.
            line_of: looks up the line of a path in the document, if the reader can.

        Returns:
            A new error (or this one, unchanged, if its path is already absolute).
        """
        if self.absolute:
            return self
        path = (*prefix, *self.path)
        line = self.line if self.line is not None else (line_of(path) if line_of else None)
        return ContractError(
            self.problem, source=source, path=path, line=line, pointer=pointer, absolute=True
        )


def combined(errors: Sequence[ContractError]) -> ContractError:
    """One error for several problems of a document: the first, with the others (each with
    its own place) listed after it, so that one read reports every problem."""
    first, *others = errors
    if not others:
        return first
    more = "".join(f"\n  - {error}" for error in others)
    problem = f"{first.problem}\n  and {len(others)} more problem(s):{more}"
    return ContractError(
        problem,
        source=first.source,
        path=first.path,
        line=first.line,
        pointer=first.pointer,
        absolute=first.absolute,
    )


def format_path(path: Sequence[PathPart], *, pointer: bool = False) -> str:
    """A path for an error message: `a.b[0]['c.d']`, or as a JSON pointer `#/a/b/0/c.d`.

    Args:
        path: keys and list indexes from the root.
        pointer: render as a JSON pointer (RFC 6901 escaping of `~` and `/`).

    Returns:
        The path as text; `#` (pointer) or an empty string for the root.
    """
    if pointer:
        parts = (str(p).replace("~", "~0").replace("/", "~1") for p in path)
        return "#/" + "/".join(parts) if path else "#"
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif "." in part or not part or " " in part:
            text += f"[{part!r}]"
        else:
            text += f".{part}" if text else part
    return text


@contextmanager
def located(
    source: str | None,
    prefix: Sequence[PathPart],
    *,
    pointer: bool = False,
    line_of: Callable[[Path], int | None] | None = None,
) -> Iterator[None]:
    """Re-raises a relative `ContractError` with this position in front of its path.

    Args:
        source: the document's file or name.
        prefix: the path of what is being built inside the block.
        pointer: whether paths of this document are JSON pointers.
        line_of: looks up the line of a path in the document, if the reader can.

    Raises:
        ContractError: the error raised inside the block, located.
    """
    try:
        yield
    except ContractError as error:
        raise error.located(
            source=source, prefix=prefix, pointer=pointer, line_of=line_of
        ) from None
