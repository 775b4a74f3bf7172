"""Finds components: by name among installed component packages, or as ``path/file.py:fn``.

Listing reads the component packages' source with the linter and imports nothing, so a
module that cannot be imported (a missing optional dependency, say) never breaks the
list; it fails only when one of its components is run, with a message that says why.
What the linter found in a file is cached (``components-*.marshal`` in the plugin cache
directory) until the file's modification time or size changes: finding a component then
parses nothing.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Callable, Iterable

from torchx.util.disk_cache import read_cache, write_cache
from torchx.util.record import field, record
from torchx.util.suggest import did_you_mean

TYPE_CHECKING = False
if TYPE_CHECKING:
    import ast
    from typing import Any

    from torchx.specs.file_linter import LinterMessage


class ComponentNotFoundException(Exception):
    """No component has that name."""


class ComponentValidationException(Exception):
    """A component function fails the linter."""


class ComponentLoadError(Exception):
    """A component's module cannot be imported."""


@record
class _Component:
    """A component: its name, summary, where it lives and (once loaded) its function."""

    name: str
    description: str
    fn_name: str
    module: str
    path: str
    validation_errors: list[LinterMessage] = field(default_factory=list)
    _fn: Callable[..., Any] | None = None

    def __repr__(self) -> str:
        return f"_Component({self.name!r}, {self.module}:{self.fn_name})"

    @property
    def fn(self) -> Callable[..., Any]:
        """The component function (imports its module on first access).

        Raises:
            ComponentLoadError: the module cannot be imported or lacks the function
        """
        if self._fn is None:
            self._fn = _load_function(self.module, self.fn_name, self.name)
        return self._fn


def _load_function(module: str, fn_name: str, component: str) -> Callable[..., Any]:
    try:
        mod = importlib.import_module(module)
    except Exception as e:
        raise ComponentLoadError(f"component {component!r}: cannot import {module}: {type(e).__name__}: {e}") from e
    fn = getattr(mod, fn_name, None)
    if not callable(fn):
        raise ComponentLoadError(f"component {component!r}: {module} has no function {fn_name!r}")
    return fn  # type: ignore[no-any-return]


#: (function name, summary, descriptions of the linter's errors) of each component of a file
ScanResult = list[tuple[str, str, list[str]]]
_SCAN_CACHE_FORMAT = 2
_scan_cache: dict[str, tuple[tuple[int, int], ScanResult]] | None = None


def _scan_cache_name() -> str:
    return f"components-{sys.version_info[0]}{sys.version_info[1]}.marshal"


def _load_scan_cache() -> dict[str, tuple[tuple[int, int], ScanResult]]:
    global _scan_cache
    if _scan_cache is None:
        cached = read_cache(_scan_cache_name(), _SCAN_CACHE_FORMAT)
        _scan_cache = cached if isinstance(cached, dict) else {}
    return _scan_cache


def _lint_file(path: str) -> ScanResult:
    import ast

    from torchx.specs.file_linter import parse_docstring, returns_appdef, validate_function

    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return []
    found = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_") and returns_appdef(node):
            errors = [m.description for m in validate_function(node) if m.severity == "error"]
            summary = parse_docstring(ast.get_docstring(node)).short_description
            found.append((node.name, summary, errors))
    return found


def _scan_files(paths: list[str]) -> dict[str, ScanResult]:
    """Path -> (function name, summary, errors) of the top-level AppDef-returning public functions
    in each file: from the cache when the file is unchanged, else linted (the cache is written once)."""
    cache = _load_scan_cache()
    results: dict[str, ScanResult] = {}
    changed = False
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            results[path] = []
            continue
        stamp = (st.st_mtime_ns, st.st_size)
        hit = cache.get(path)
        if hit is None or tuple(hit[0]) != stamp:
            hit = cache[path] = (stamp, _lint_file(path))
            changed = True
        results[path] = hit[1]
    if changed:
        write_cache(_scan_cache_name(), _SCAN_CACHE_FORMAT, cache)
    return results


def _module_files(module: str) -> list[tuple[str, str]]:
    """(dotted module name, file) of ``module`` and, for a package, its submodules (recursively)."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return []
    if spec is None:
        return []
    if not spec.submodule_search_locations:
        return [(module, spec.origin)] if spec.origin and spec.origin.endswith(".py") else []
    files: list[tuple[str, str]] = []
    for root in spec.submodule_search_locations:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(
                d
                for d in dirnames
                if not d.startswith(("_", ".")) and os.path.isfile(os.path.join(dirpath, d, "__init__.py"))
            )
            rel = os.path.relpath(dirpath, root)
            prefix = module if rel == "." else module + "." + rel.replace(os.sep, ".")
            for name in sorted(filenames):
                if name.endswith(".py") and not name.startswith("_"):
                    files.append((f"{prefix}.{name[:-3]}", os.path.join(dirpath, name)))
    return files


def _sources() -> list[Any]:
    from torchx.plugins import get_registry

    return list(get_registry().components)


def get_components(validators: Any = None) -> dict[str, _Component]:
    """Every valid component of the installed component packages, by name (imports nothing)."""
    found: dict[str, _Component] = {}
    for source in _sources():
        files = _module_files(source.module)
        scanned = _scan_files([path for _, path in files])
        for module, path in files:
            rel = module[len(source.module) :].lstrip(".")
            for fn_name, summary, errors in scanned[path]:
                if errors:
                    continue
                name = ".".join(p for p in (source.prefix, rel, fn_name) if p)
                if name not in found:
                    found[name] = _Component(name, summary, fn_name, module, path)
    return dict(sorted(found.items()))


def _file_component(name: str) -> _Component:
    path, _, fn_name = name.rpartition(":")
    if not os.path.isfile(path):
        raise ComponentNotFoundException(f"component file {path!r} does not exist (in {name!r})")
    module_name = "torchx_component_file_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ComponentNotFoundException(f"cannot load {path!r} as python")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        raise ComponentLoadError(f"component file {path}: {type(e).__name__}: {e}") from e
    fn = getattr(module, fn_name, None)
    if not callable(fn):
        funcs = [
            n
            for n, v in vars(module).items()
            if callable(v) and not n.startswith("_") and getattr(v, "__module__", None) == module.__name__
        ]
        listed = f" Its functions: {', '.join(funcs)}." if funcs else " It defines no public function."
        raise ComponentNotFoundException(f"{path} has no function {fn_name!r}.{did_you_mean(fn_name, funcs)}{listed}")
    for found_fn, _, errors in _scan_files([path])[path]:
        if found_fn == fn_name and errors:
            raise ComponentValidationException(f"component {name!r} is invalid: " + "; ".join(errors))
    from torchx.specs.file_linter import parse_docstring

    summary = parse_docstring(fn.__doc__).short_description
    return _Component(name, summary, fn_name, module_name, path, _fn=fn)


def get_component(name: str) -> _Component:
    """The component called ``name`` (``utils.echo``) or at ``path/file.py:fn``.

    Raises:
        ComponentNotFoundException: no such component (the message suggests close names)
        ComponentValidationException: the component fails the linter
    """
    if ":" in name:
        return _file_component(name)
    for source in _sources():
        rel = name
        if source.prefix:
            if not name.startswith(source.prefix + "."):
                continue
            rel = name[len(source.prefix) + 1 :]
        module_rel, _, fn_name = rel.rpartition(".")
        module = source.module + ("." + module_rel if module_rel else "")
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            spec = None
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            continue
        for found_fn, summary, errors in _scan_files([spec.origin])[spec.origin]:
            if found_fn != fn_name:
                continue
            if errors:
                raise ComponentValidationException(f"component {name!r} is invalid: " + "; ".join(errors))
            return _Component(name, summary, fn_name, module, spec.origin)
    names = get_components()
    if not _sources():
        from torchx.util import distributions
        from torchx.util.distributions import pip_install

        hint = f" No component package is installed: `{pip_install(distributions.COMPONENTS)}` for the builtins."
    else:
        hint = " `torchx builtins` lists them; a file works too: path/to/file.py:function"
    raise ComponentNotFoundException(f"unknown component {name!r}.{_suggest(name, names)}{hint}")


def _suggest(name: str, names: Iterable[str]) -> str:
    """``" Did you mean ...?"``: the components whose own name (after the last dot) is ``name``
    (``echo`` -> ``utils.echo``), else the closest full names, else those whose own name is close."""
    import difflib

    names = list(names)
    own = {n: n.rpartition(".")[2] for n in names}
    same = [n for n in names if own[n] == name]
    if not same:
        close = did_you_mean(name, names)
        if close or "." in name:
            return close
        leaves = difflib.get_close_matches(name, set(own.values()), n=3, cutoff=0.6)
        same = [n for leaf in leaves for n in names if own[n] == leaf]
    return " Did you mean " + " or ".join(repr(n) for n in same[:3]) + "?" if same else ""


def get_builtin_source(name: str) -> str:
    """The source of component ``name`` as a file that runs on its own (for ``torchx builtins
    --print``): the module's imports (relative ones made absolute), the module-level names the
    function uses, then the function. Save it as ``my.py`` and ``torchx run ./my.py:<fn>`` runs.
    """
    import ast

    component = get_component(name)
    with open(component.path, encoding="utf-8") as f:
        source = f.read()
    tree = ast.parse(source)
    lines = source.splitlines()

    def text(node: ast.stmt) -> str:
        first = min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno])
        return "\n".join(lines[first - 1 : node.end_lineno])

    defined: dict[str, ast.stmt] = {}
    imports: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.append(_absolute_import(node, component.module) if isinstance(node, ast.ImportFrom) else text(node))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    defined[target.id] = node
    target_fn = defined.get(component.fn_name)
    if target_fn is None:
        raise ComponentNotFoundException(f"cannot find the source of {name!r}")
    needed: list[ast.stmt] = []
    todo = [target_fn]
    while todo:
        node = todo.pop()
        if node in needed:
            continue
        needed.append(node)
        todo += [defined[n.id] for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in defined]
    body = [text(node) for node in tree.body if node in needed]
    return "\n".join(imports) + "\n\n\n" + "\n\n\n".join(body) + "\n"


def _absolute_import(node: ast.ImportFrom, module: str) -> str:
    """``from .x import y`` in ``module`` as ``from pkg.x import y``."""
    names = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in node.names)
    source = importlib.util.resolve_name("." * node.level + (node.module or ""), module) if node.level else node.module
    return f"from {source} import {names}"
