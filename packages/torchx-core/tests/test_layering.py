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

No distribution under ``packages/`` has an import cycle either (checked from the source tree,
so this needs none of them installed), and torchx-sched-local keeps the layers of
:data:`LOCAL_LAYERS`.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest
import torchx

SRC = Path(torchx.__file__).parent
#: the repository's ``packages/`` (this file is ``packages/torchx-core/tests/test_layering.py``)
PACKAGES = Path(__file__).resolve().parents[2]

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


def _module_name(path: Path, package: Path = SRC) -> str:
    rel = path.relative_to(package.parent).with_suffix("")
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


def _imports(tree: ast.AST, modules: set[str], name: str = "", is_package: bool = False) -> set[str]:
    """Which of ``modules`` the module ``name`` imports at run time (``from pkg import submodule``
    counts the submodule; relative imports are resolved against ``name``)."""
    found: set[str] = set()
    here = name.split(".") if is_package else name.split(".")[:-1]

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.add(module)
            found.update(f"{module}.{a.name}" for a in node.names if f"{module}.{a.name}" in modules)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return {m for m in found if m in modules}


def _graph(package: Path = SRC) -> dict[str, set[str]]:
    """Module -> the modules of the same import package it imports at run time."""
    files = {_module_name(p, package): p for p in package.rglob("*.py")}
    modules = set(files)
    return {
        name: _imports(ast.parse(path.read_text()), modules, name, path.name == "__init__.py") - {name}
        for name, path in files.items()
    }


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


def _import_packages() -> list[Path]:
    """The import package of every distribution under ``packages/`` (``torchx`` included)."""
    found = sorted(p for src in PACKAGES.glob("*/src") for p in src.iterdir() if (p / "__init__.py").is_file())
    assert SRC.name in {p.name for p in found}, f"no distributions found under {PACKAGES}"
    return found


@pytest.mark.parametrize("package", _import_packages(), ids=lambda p: p.name)
def test_no_import_cycles(package: Path) -> None:
    graph = _graph(package)
    # importing a package's submodule runs the package first: that edge is no cycle of ours
    graph = {m: {t for t in targets if t not in _ancestors(m)} for m, targets in graph.items()}
    cycles = _cycles(graph)
    assert not cycles, "\n".join(" <-> ".join(c) for c in cycles)


#: imports of one distribution's package by another's (design: only through ``torchx``), each
#: optional (the importing module works, or is not reached, without the other distribution)
CROSS_DISTRIBUTION: dict[tuple[str, str], str] = {
    ("torchx_dashboard.sweeps", "torchx_sweep"): "sweeps are shown when torchx-sweep is installed (find_spec first)",
    ("torchx_managed.controller", "torchx_sched_k8s"): "controller=kubernetes only: its API client",
    ("torchx_managed.k8s_controller", "torchx_sched_k8s"): "controller=kubernetes only: its API client",
    ("torchx_managed.lease", "torchx_sched_k8s"): "controller=kubernetes only: its API client",
}


def _top_packages(tree: ast.AST) -> set[str]:
    """Top-level names of every absolute import in a module (lazy and TYPE_CHECKING ones too)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            found.add(str(node.module).split(".")[0])
    return found


def test_distributions_import_each_other_only_through_torchx() -> None:
    packages = {p.name for p in _import_packages()}
    found = {
        (_module_name(path, package), other)
        for package in _import_packages()
        for path in package.rglob("*.py")
        for other in _top_packages(ast.parse(path.read_text())) & packages - {package.name, "torchx"}
    }
    assert found - set(CROSS_DISTRIBUTION) == set()
    assert set(CROSS_DISTRIBUTION) - found == set(), "an allowed import is gone: drop it from CROSS_DISTRIBUTION"


#: torchx-sched-local's layers, lowest first (a module not named here is of the scheduler's layer,
#: 5). Layers 0-3 are the supervisor's side: it runs as ``python -I -S`` (no site-packages), so
#: they import only the standard library at module level. The supervisor starts its watchdog
#: before its first replica, so the watchdog sits below it.
LOCAL_LAYERS: dict[str, int] = {
    # 0 processes: finding, signalling and waiting for a job's processes in /proc; private,
    # atomic, durable files (a copy of core's torchx.util.files)
    "torchx_sched_local._files": 0,
    "torchx_sched_local.sessions": 0,
    "torchx_sched_local.orphans": 0,
    # 1 the job directory: its files, journal, logs, the outcome socket, the supervisor's command
    # line, the SUCCESS summary of a job run with log_dir
    "torchx_sched_local.journal": 1,
    "torchx_sched_local.store": 1,
    "torchx_sched_local.logfiles": 1,
    "torchx_sched_local.outcome": 1,
    "torchx_sched_local.entry": 1,
    "torchx_sched_local.summary": 1,
    # 2 the watchdog (its shell handle and the Python watchdog that ends an orphaned job)
    "torchx_sched_local.watchdog": 2,
    # 3 the supervisor, its re-exec handover, its recovery and its entry script
    "torchx_sched_local.handover": 3,
    "torchx_sched_local.recovering": 3,
    "torchx_sched_local.supervisor": 3,
    "torchx_sched_local._supervise": 3,
    # 4 starting a supervisor from the launcher (a fork running the supervisor, or a spawn)
    "torchx_sched_local.launch": 4,
}
LOCAL = PACKAGES / "torchx-sched-local" / "src" / "torchx_sched_local"


def _local_layer(module: str) -> int:
    return LOCAL_LAYERS.get(module, 0 if module == LOCAL.name else 5)


def test_local_scheduler_layers() -> None:
    upward = [
        f"{m} (layer {_local_layer(m)}) imports {t} (layer {_local_layer(t)})"
        for m, targets in sorted(_graph(LOCAL).items())
        for t in sorted(targets)
        if _local_layer(t) > _local_layer(m)
    ]
    assert not upward, "\n".join(upward)


def _top_level_imports(tree: ast.Module) -> set[str]:
    """Top-level names of what a module imports when it is imported (not inside a function,
    not under ``if TYPE_CHECKING:``)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return
        if isinstance(node, ast.If) and _is_type_checking(node):
            children: list[ast.AST] = list(node.orelse)
        else:
            children = list(ast.iter_child_nodes(node))
        if isinstance(node, ast.Import):
            found.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            found.add(str(node.module).split(".")[0])
        for child in children:
            visit(child)

    visit(tree)
    return found


def test_the_supervisor_side_imports_only_the_standard_library() -> None:
    modules = {_module_name(p, LOCAL): p for p in LOCAL.rglob("*.py")}
    strays = {
        name: sorted(found - set(sys.stdlib_module_names) - {LOCAL.name, "__future__"})
        for name, path in modules.items()
        if _local_layer(name) <= 3
        for found in [_top_level_imports(ast.parse(path.read_text()))]
    }
    assert {n: s for n, s in strays.items() if s} == {}
    assert "torchx_sched_local.supervisor" in strays and "torchx_sched_local.sessions" in strays


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
