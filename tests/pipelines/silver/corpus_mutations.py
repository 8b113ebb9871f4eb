"""Mutations of real example payloads at every nesting level, for the corpus differential.

From each example (a JSON object as shipped), `mutations(example, seed)` makes changed
copies, each labelled with what was changed and where: a value of another JSON type (a
string where a number was, a number where a string was, an object where a scalar was), an
object or array made null, a key removed, an unknown key added, an array emptied, a string
made empty or very long, a number made negative, fractional or beyond 64 bits. The places are
chosen at every depth: top-level fields, members of nested objects, members of objects
inside arrays, values of maps. Deterministic for a seed: the same messages in every run.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from typing import Any

Path = tuple[str | int, ...]


def _places(value: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    """Every (path, value) below the root, depth first."""
    if isinstance(value, dict):
        for key, inner in value.items():
            yield (*path, key), inner
            yield from _places(inner, (*path, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value[:3]):  # the first elements are enough
            yield (*path, index), inner
            yield from _places(inner, (*path, index))


def _set(document: Any, path: Path, value: Any) -> Any:
    changed = copy.deepcopy(document)
    target = changed
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return changed


def _delete(document: Any, path: Path) -> Any:
    changed = copy.deepcopy(document)
    target = changed
    for part in path[:-1]:
        target = target[part]
    del target[path[-1]]
    return changed


def _changes(value: Any) -> list[tuple[str, Any]]:
    """The replacements tried for a value, by its JSON type."""
    if isinstance(value, bool):
        return [("a_string", "true"), ("a_number", 1)]
    if isinstance(value, int):
        return [("a_string", str(value)), ("negative", -abs(value) - 1), ("fraction", value + 0.5),
                ("beyond_64_bits", 2**64 + 1)]  # fmt: skip
    if isinstance(value, float):
        return [("a_string", str(value)), ("negative", -abs(value) - 1.5)]
    if isinstance(value, str):
        return [("a_number", 42), ("empty", ""), ("long", "x" * 5000), ("not_a_date", "31/12")]
    if isinstance(value, dict):
        return [("null", None), ("an_array", [value]), ("a_string", "{}")]
    if isinstance(value, list):
        return [("null", None), ("empty", []), ("an_object", {"k": value})]
    return [("a_string", "null"), ("an_object", {})]  # null


def mutations(example: dict, seed: int, count: int = 24) -> list[tuple[str, dict]]:
    """`count` labelled copies of `example`, each with one change at a place chosen at
    random, spread over the depths (`label` as `<path>:<change>`)."""
    rng = random.Random(seed)
    places = list(_places(example))
    by_depth: dict[int, list[tuple[Path, Any]]] = {}
    for path, value in places:
        by_depth.setdefault(len(path), []).append((path, value))
    depths = sorted(by_depth)
    found: list[tuple[str, dict]] = []
    for n in range(count):
        if not depths:
            break
        path, value = rng.choice(by_depth[depths[n % len(depths)]])
        where = "/".join(map(str, path))
        kind = rng.randrange(10)
        if kind == 0 and isinstance(path[-1], str):
            found.append((f"{where}:removed", _delete(example, path)))
        elif kind == 1 and isinstance(value, dict):
            found.append((f"{where}:unknown_key", _set(example, (*path, "zz_unknown"), 1)))
        else:
            label, new = rng.choice(_changes(value))
            found.append((f"{where}:{label}", _set(example, path, new)))
    return found


def text(document: Any) -> str:
    """A message's JSON text (integers beyond 64 bits written as they are)."""
    return json.dumps(document)
