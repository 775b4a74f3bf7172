"""Finds plugins published the way upstream TorchX now teaches: functions marked with
``@register.scheduler()`` / ``@register.named_resource()`` / ``@register.tracker()`` in modules of
the namespace packages ``torchx_plugins.schedulers``, ``torchx_plugins.named_resources`` and
``torchx_plugins.tracker`` (no entry point).

Rules (upstream's):

* every public module (name not starting with ``_``) under a namespace is imported, recursively,
  including sub-directories without ``__init__.py``;
* only functions *defined* in a module count (a re-exported function is not registered twice);
* a function of another kind than its namespace is refused and reported;
* the first module to register a name wins; a later different registration is a conflict
  (reported); the same resource registered twice is no conflict;
* entry points (the group ``torchx``: registrations and hook modules; the legacy groups) win over namespace plugins: this
  is the ``SOURCE_RANKS`` rule of :mod:`torchx.plugins.registry` (a namespace ranks 0).

Each module becomes one :class:`PluginInfo` (group: its namespace) whose registrations name
``module:attr``, so once discovery is cached, a start-up imports none of these modules
until one of their plugins is used. A module that fails to import is recorded and skipped.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
from typing import Any

from torchx.compat.authoring import PluginType
from torchx.compat.import_errors import describe_error, import_failure_files
from torchx.plugins.registrations import NamedResourcePlugin, SchedulerPlugin, TrackerPlugin
from torchx.plugins.registry import PluginInfo, Registry

logger: logging.Logger = logging.getLogger(__name__)

#: namespace kind -> (registry kind, registration type)
KIND_OF: dict[PluginType, tuple[str, type]] = {
    PluginType.SCHEDULER: ("schedulers", SchedulerPlugin),
    PluginType.NAMED_RESOURCE: ("named_resources", NamedResourcePlugin),
    PluginType.TRACKER: ("trackers", TrackerPlugin),
}

#: the registry kinds a namespace group stands for (``torchx_plugins.schedulers`` -> ``schedulers``)
NAMESPACE_GROUPS: dict[str, str] = {t.namespace: kind for t, (kind, _) in KIND_OF.items()}

ENV_SOURCE = "TORCHX_PLUGINS_SOURCE"
SOURCE_NAMESPACE = 1
SOURCE_ENTRY_POINTS = 2


def plugin_sources(strict: bool = False) -> int:
    """The discovery channels ``TORCHX_PLUGINS_SOURCE`` selects, as upstream documents it: ``0`` none,
    ``1`` namespace packages only, ``2`` entry points only, ``3`` (default) both.

    "Entry points" are upstream's groups (``torchx.schedulers``, ``torchx.named_resources``,
    ``torchx.tracker``, ...). The group ``torchx``, through which torchx's own backends register
    (upstream has them in-tree), registrations and hook modules alike, is always read.

    Raises:
        ValueError: (``strict`` only) the value is not one of those; otherwise it is ignored with a warning
    """
    raw = os.environ.get(ENV_SOURCE, "").strip()
    both = SOURCE_NAMESPACE | SOURCE_ENTRY_POINTS
    if not raw:
        return both
    if raw in ("0", "1", "2", "3"):
        return int(raw)
    message = f"{ENV_SOURCE}={raw!r} is invalid: use 0 (none), 1 (namespace packages), 2 (entry points) or 3 (both)"
    if strict:
        raise ValueError(message)
    logger.warning("%s; reading both", message)
    return both


def _children(paths: list[str]) -> list[tuple[str, str, bool]]:
    """(name, path, is_package) of the public modules and sub-packages in ``paths`` (first path
    wins a name, as for imports), in path order then name order."""
    found: list[tuple[str, str, bool]] = []
    seen: set[str] = set()
    for folder in paths:
        try:
            entries = sorted(os.listdir(folder))
        except OSError:
            continue
        for entry in entries:
            path = os.path.join(folder, entry)
            if entry.endswith(".py") and os.path.isfile(path):
                name, package = entry[:-3], False
            elif os.path.isdir(path) and entry.isidentifier():
                name, package = entry, True
                if not os.path.isfile(os.path.join(path, "__init__.py")) and not _holds_python(path):
                    continue
            else:
                continue
            if name.startswith("_") or not name.isidentifier() or name in seen:
                continue
            seen.add(name)
            found.append((name, path, package))
    return found


def _holds_python(folder: str) -> bool:
    return any(any(f.endswith(".py") for f in files) for _, _, files in os.walk(folder))


class _Owners:
    """Which installed distribution holds a file (built on first use; None for a plain directory)."""

    def __init__(self) -> None:
        self._by_file: dict[str, tuple[str, str]] | None = None

    def __call__(self, path: str) -> tuple[str, str] | None:
        if self._by_file is None:
            self._by_file = {}
            try:
                from importlib.metadata import distribution, packages_distributions

                for dist_name in set(packages_distributions().get("torchx_plugins", [])):
                    dist = distribution(dist_name)
                    for f in dist.files or []:
                        if str(f).endswith(".py"):
                            self._by_file[os.path.realpath(str(dist.locate_file(f)))] = (
                                dist.metadata["Name"] or dist_name,
                                dist.version or "?",
                            )
            except Exception as e:  # a broken dist-info must not stop discovery
                logger.debug("cannot map namespace modules to distributions: %s", e)
        return self._by_file.get(os.path.realpath(path))


def _same_resource(a: Any, b: Any) -> bool:
    """Whether two named-resource factories make the same resource (an unset and a False
    ``is_fractional`` tag are the same)."""
    try:
        ra, rb = a(), b()
    except Exception:
        return False
    from torchx.compat.authoring import resource_tags

    def canon(r: Any) -> Any:
        tags = dict(r.tags)
        if not tags.get(resource_tags.IS_FRACTIONAL):
            tags.pop(resource_tags.IS_FRACTIONAL, None)
        return (r.cpu, r.gpu, r.memMB, r.capabilities, r.devices, tags)

    try:
        return bool(canon(ra) == canon(rb))
    except AttributeError:
        return bool(ra == rb)


class _Scan:
    """One namespace's scan: the plugins found so far (name -> function) and the folders seen."""

    def __init__(self, ptype: PluginType, registry: Registry, owners: _Owners) -> None:
        self.ptype = ptype
        self.registry = registry
        self.owners = owners
        self.found: dict[str, Any] = {}
        self.folders: list[str] = []
        self.infos: list[PluginInfo] = []

    def info(self, fqn: str, path: str) -> PluginInfo:
        owner = self.owners(path)
        dist, version = owner if owner else ("(not installed)", os.path.dirname(path))
        info = PluginInfo(name=fqn, dist=dist, version=version, group=self.ptype.namespace, value=path)
        self.registry.plugins.append(info)
        self.infos.append(info)
        return info

    def package(self, fqn: str, paths: list[str]) -> None:
        self.folders.extend(paths)
        for name, path, is_package in _children(paths):
            child = f"{fqn}.{name}"
            file = os.path.join(path, "__init__.py") if is_package else path
            # a folder without __init__.py (a namespace sub-package) has no code of its own
            info = self.info(child, file) if os.path.isfile(file) else None
            try:
                module = importlib.import_module(child)
            except BaseException as e:
                if isinstance(e, KeyboardInterrupt):
                    raise
                logger.debug("plugin module %s: %s", child, describe_error(e))
                if info is not None:
                    info.watch = [file, os.path.dirname(path)]
                    info.errors.append(f"cannot import {child!r}: {describe_error(e)}")
                continue
            if info is not None:
                info.watch = [file, os.path.dirname(path)]
                self.collect(info, module)
            sub = list(getattr(module, "__path__", []) or [])
            if sub:
                self.package(child, sub)

    def collect(self, info: PluginInfo, module: Any) -> None:
        kind, rtype = KIND_OF[self.ptype]
        seen_here: set[int] = set()
        for attr in dir(module):
            obj = getattr(module, attr, None)
            ptype = getattr(obj, "_plugin_type", None)
            if not callable(obj) or not isinstance(ptype, PluginType) or getattr(obj, "__module__", None) != info.name:
                continue
            if id(obj) in seen_here:
                continue
            seen_here.add(id(obj))
            name = str(getattr(obj, "_plugin_name", attr))
            if ptype is not self.ptype:
                info.errors.append(
                    f"{name!r} is a {ptype.name.lower()} but is under {self.ptype.namespace}: use"
                    f" @register.{self.ptype.name.lower()}() or move it to {ptype.namespace}"
                )
                continue
            first = self.found.get(name)
            if first is not None and (
                first is obj or (self.ptype is PluginType.NAMED_RESOURCE and _same_resource(first, obj))
            ):
                continue
            self.found.setdefault(name, obj)
            target = f"{info.name}:{attr}"
            if rtype is SchedulerPlugin:
                doc = (getattr(obj, "__doc__", None) or "").strip().splitlines()
                self.registry.add(info, SchedulerPlugin(name, target, doc[0] if doc else ""))
            else:
                self.registry.add(info, rtype(name, target))
        if not info.registers.get(kind) and not info.errors:
            logger.debug("namespace module %s registers no %s", info.name, kind)


def discover_namespaces(registry: Registry) -> None:
    """Adds every namespace plugin to ``registry`` (after the entry points, which win clashes)."""
    owners = _Owners()
    for ptype in KIND_OF:
        namespace = ptype.namespace
        try:
            root = importlib.import_module(namespace)
        except ModuleNotFoundError as e:
            if e.name and (namespace == e.name or namespace.startswith(e.name + ".")):
                continue  # nothing installed under this namespace
            _root_error(registry, ptype, e)
            continue
        except Exception as e:
            _root_error(registry, ptype, e)
            continue
        paths = list(getattr(root, "__path__", []) or [])
        if not paths:
            continue
        scan = _Scan(ptype, registry, owners)
        scan.package(namespace, paths)
        folders = sorted(set(scan.folders))
        if not scan.infos:  # an empty namespace: still watched, so its first module is noticed
            empty = PluginInfo(name=namespace, dist="(namespace)", version="", group=namespace, value=";".join(paths))
            registry.plugins.append(empty)
            scan.infos.append(empty)
        for info in scan.infos:
            info.watch = sorted({*info.watch, *folders})


def _root_error(registry: Registry, ptype: PluginType, error: BaseException) -> None:
    root = sys.modules.get(ptype.namespace)
    file = getattr(root, "__file__", "") or ""
    info = PluginInfo(name=ptype.namespace, dist="(namespace)", version="", group=ptype.namespace, value=file)
    info.errors.append(f"cannot import {ptype.namespace!r}: {describe_error(error)}")
    info.watch = import_failure_files(ptype.namespace, error)
    registry.plugins.append(info)
