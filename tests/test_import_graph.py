"""The project's modules import each other without cycles, and the JetStream package is layered.

The graph is read from the source with `ast`, so it holds every import: at the top of a
module, under `if TYPE_CHECKING:` and inside functions (a lazy import hides a cycle from
Python, not from a reader). `from package import name` is an edge to the module
`package.name` when there is one, else to the package's `__init__`.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[1]
PACKAGES = ("resources", "pipelines", "assets", "sensors")
JETSTREAM = "resources.jetstream"
# The JetStream package's layers, lowest first: a module may import its own layer's and
# lower layers' modules only. The facade (client), the Dagster resource, topology and the
# package's __init__ sit on top of all of them.
LAYERS = (
    ("errors",),
    ("core", "connection"),
    ("streams",),
    ("consumers", "kv", "objects", "publishing", "server"),
    ("client",),
    ("resource", "environment", "topology", "metadata"),
)
TOP = len(LAYERS)  # the package's own __init__: the public names, above everything


def module_files() -> dict[str, Path]:
    """Every module of the source packages by dotted name (a package by its own name)."""
    modules = {}
    for package in PACKAGES:
        for path in sorted((PROJECT / package).rglob("*.py")):
            parts = list(path.relative_to(PROJECT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def imported(module: str, path: Path, modules: dict[str, Path]) -> Iterator[str]:
    """The project modules that `module` imports anywhere in its source."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor if is_package else anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in modules:  # `import a.b.c` of a name in a.b
                target = target.rpartition(".")[0]
            if target and target != module:
                yield target


@functools.cache
def import_graph() -> dict[str, set[str]]:
    modules = module_files()
    return {name: set(imported(name, path, modules)) for name, path in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path that ends where it starts, or None."""
    state: dict[str, str] = {}  # "open" while on the current path, then "done"
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def layer_of(module: str) -> int:
    """The index in LAYERS of a `resources.jetstream` module (TOP: the package itself)."""
    if module == JETSTREAM:
        return TOP
    top = module.removeprefix(JETSTREAM + ".").split(".")[0]
    layer = next((i for i, names in enumerate(LAYERS) if top in names), None)
    assert layer is not None, f"{module}: add {top!r} to a layer in LAYERS ({__file__})"
    return layer


def test_no_module_imports_itself_through_others():
    cycle = find_cycle(import_graph())

    assert cycle is None, "import cycle: " + " -> ".join(cycle or ())


def test_the_cycle_finder_returns_the_cycle_as_a_path():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}

    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_type_checking_and_function_imports_count_as_edges(tmp_path):
    source = tmp_path / "mod.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from pkg.low import Thing\n"
        "def late():\n"
        "    from pkg import other\n"
    )
    modules = {"pkg": tmp_path, "pkg.low": tmp_path, "pkg.other": tmp_path, "pkg.mod": source}

    assert set(imported("pkg.mod", source, modules)) == {"pkg.low", "pkg.other"}


@pytest.mark.parametrize(
    "module", sorted(m for m in module_files() if m.startswith(JETSTREAM + "."))
)
def test_jetstream_modules_import_only_their_layer_and_below(module):
    """Feature modules stand on the session core, never on the facade above them."""
    own = layer_of(module)
    above = sorted(
        target
        for target in import_graph()[module]
        if (target == JETSTREAM or target.startswith(JETSTREAM + ".")) and layer_of(target) > own
    )

    assert above == [], f"{module} (layer {own}) imports from a higher layer: {above}"


def imports_dagster(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        names = (
            [alias.name for alias in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
            if isinstance(node, ast.ImportFrom) and not node.level
            else []
        )
        if any(name == "dagster" or name.startswith("dagster.") for name in names):
            return True
    return False


def test_dagster_is_imported_only_by_the_top_layer_of_the_jetstream_package():
    """The client works without Dagster; the resource and its metadata wrap it for Dagster."""
    below = sorted(
        name
        for name, path in module_files().items()
        if name.startswith(JETSTREAM + ".") and layer_of(name) < len(LAYERS) - 1
        if imports_dagster(path)
    )

    assert below == []


# The project's layers, lowest first (the map in pipelines/__init__.py): a module imports
# modules of its own layer and lower layers only. A name stands for the module and all below it.
PROJECT_LAYERS = (
    ("resources",),
    ("pipelines.settings",),
    ("pipelines.lakehouse",),  # generic stages
    ("pipelines.contract", "pipelines.ingest", "pipelines.silver"),  # the engines
    ("pipelines.file_trash",),  # the domain
    ("assets",),
    ("sensors",),
    ("pipelines.wiring",),  # Dagster wiring
    ("pipelines.components",),
    ("pipelines.definitions", "pipelines.defs"),  # the code location
    ("pipelines.cli",),  # operator tools
)
# What runs without Dagster: the settings, the generic stages, the engines and the domain.
WITHOUT_DAGSTER = PROJECT_LAYERS[1:5]


def project_layer_of(module: str) -> int:
    """The index in PROJECT_LAYERS of a project module (`pipelines` itself: above all)."""
    if module == "pipelines":
        return len(PROJECT_LAYERS)
    for index, names in enumerate(PROJECT_LAYERS):
        if any(module == name or module.startswith(name + ".") for name in names):
            return index
    raise AssertionError(f"{module}: add it to a layer in PROJECT_LAYERS ({__file__})")


@pytest.mark.parametrize("module", sorted(module_files()))
def test_project_modules_import_only_their_layer_and_below(module):
    """The tree shows the layers: pipelines/lakehouse is below the engines, the engines below
    the domain, and Dagster's assets, sensors and wiring above all three."""
    own = project_layer_of(module)
    above = sorted(target for target in import_graph()[module] if project_layer_of(target) > own)

    assert above == [], f"{module} (layer {own}) imports from a higher layer: {above}"


def test_the_settings_the_stages_the_engines_and_the_domain_run_without_dagster():
    with_dagster = sorted(
        name
        for name, path in module_files().items()
        if any(name == n or name.startswith(n + ".") for names in WITHOUT_DAGSTER for n in names)
        if imports_dagster(path)
    )

    assert with_dagster == []
