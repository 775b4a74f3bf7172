"""Core's import layering: every import (at the top of a module or inside a function; not the
ones under ``if TYPE_CHECKING:``) goes to the same layer or a lower one, and no modules import
each other in a cycle.

Layers, lowest first (a module belongs to the layer of its package)::

    0  torchx.util, torchx.version
    1  torchx.plugins      the registry and discovery need nothing of the job model, and
                           specs looks components and named resources up in the registry;
       torchx.compat       upstream's plugin sources and API, feeding the same registry;
       torchx (the package: it installs the upstream-path import hook of torchx.compat)
    2  torchx.specs
    3  torchx.schedulers, torchx.workspace, torchx.tracker
    4  torchx.runner, torchx.testing
    5  torchx.cli, torchx.__main__
"""

from __future__ import annotations

import ast
from pathlib import Path

import torchx

SRC = Path(torchx.__file__).parent

LAYERS: dict[str, int] = {
    "torchx": 1,
    "torchx.util": 0,
    "torchx.version": 0,
    "torchx.plugins": 1,
    "torchx.compat": 1,
    "torchx.specs": 2,
    "torchx.schedulers": 3,
    "torchx.workspace": 3,
    "torchx.tracker": 3,
    "torchx.runner": 4,
    "torchx.testing": 4,
    "torchx.cli": 5,
    "torchx.__main__": 5,
}

#: upward imports with a reason: upstream module paths kept for code written for TorchX
ALLOWED_UPWARD: dict[tuple[str, str], str] = {
    ("torchx.util.types", "torchx.specs.builders"): "upstream's torchx.util.types re-exports specs helpers",
}


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    name = ".".join(rel.parts)
    return name.removesuffix(".__init__")


def _layer(module: str) -> int:
    while module not in LAYERS:
        module = module.rpartition(".")[0]
    return LAYERS[module]


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, modules: set[str]) -> set[str]:
    """The torchx modules a module imports at run time (``from pkg import submodule`` counts
    the submodule)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "torchx")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "torchx":
            module = str(node.module)
            found.add(module)
            found.update(f"{module}.{a.name}" for a in node.names if f"{module}.{a.name}" in modules)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return {m for m in found if m in modules}


def _graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in SRC.rglob("*.py")}
    modules = set(files)
    return {name: _imports(ast.parse(path.read_text()), modules) - {name} for name, path in files.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return found


def _ancestors(module: str) -> set[str]:
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def test_no_module_imports_a_higher_layer() -> None:
    upward = [
        f"{m} (layer {_layer(m)}) imports {t} (layer {_layer(t)})"
        for m, targets in sorted(_graph().items())
        for t in sorted(targets)
        if _layer(t) > _layer(m) and (m, t) not in ALLOWED_UPWARD
    ]
    assert not upward, "\n".join(upward)


def test_no_import_cycles() -> None:
    graph = _graph()
    # importing a package's submodule runs the package first: that edge is no cycle of ours
    graph = {m: {t for t in targets if t not in _ancestors(m)} for m, targets in graph.items()}
    cycles = _cycles(graph)
    assert not cycles, "\n".join(" <-> ".join(c) for c in cycles)


def test_the_checker_sees_a_cycle_and_an_upward_import() -> None:
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]
    tree = ast.parse(
        "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from torchx.cli import main\n"
        "def f():\n    from torchx.runner import api\n"
    )
    assert _imports(tree, {"torchx.cli.main", "torchx.runner.api", "torchx.runner"}) == {
        "torchx.runner",
        "torchx.runner.api",
    }
