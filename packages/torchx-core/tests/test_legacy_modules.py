"""Upstream module paths resolve to the plugins that register them (torchx.compat.legacy_import),
and the legacy ``torchx.components`` group follows upstream's documented rules."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys

import pytest
import torchx.plugins
from torchx.plugins.registry import PluginInfo, Registry
from torchx.schedulers.calls import call_declared
from torchx.specs.finder import get_components
from torchx.testing import run_cli

SHIM_PLUGIN = """
from torchx.plugins import hookimpl, LegacyModule

@hookimpl
def torchx_legacy_modules():
    yield LegacyModule("torchx.schedulers.alpha_scheduler", "alpha_compat")
    yield LegacyModule("torchx.contrib.alpha", "alpha_compat")
"""

BUILTINS_PLUGIN = """
from torchx.plugins import hookimpl, LegacyModule, ComponentSource

@hookimpl
def torchx_components():
    yield ComponentSource("", "fake_builtins")

@hookimpl
def torchx_legacy_modules():
    yield LegacyModule("torchx.components", "fake_builtins")
"""

COMPONENT = '''
import torchx.specs as specs

def {fn}(name: str = "t") -> specs.AppDef:
    """A component.

    Args:
        name: the name
    """
    return specs.AppDef(name=name, roles=[specs.Role("r", "i", entrypoint="echo")])
'''


def _forget(*names: str) -> None:
    for name in names:
        for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
            del sys.modules[key]


def test_registered_path_is_the_plugins_module(make_dist) -> None:  # type: ignore[no-untyped-def]
    make_dist(
        "torchx-alpha-compat",
        {"torchx": {"alpha": "alpha_shim_plugin"}},
        {"alpha_shim_plugin.py": SHIM_PLUGIN, "alpha_compat.py": "class AlphaScheduler: pass\n"},
    )
    try:
        mod = importlib.import_module("torchx.schedulers.alpha_scheduler")
        import alpha_compat

        assert mod is alpha_compat
        assert mod.__spec__.name == "alpha_compat"
        from torchx.schedulers.alpha_scheduler import AlphaScheduler

        assert AlphaScheduler is alpha_compat.AlphaScheduler
        # a path core does not know, under a parent package core does not have
        from torchx.contrib.alpha import AlphaScheduler as Again

        assert Again is AlphaScheduler
    finally:
        _forget("torchx.schedulers.alpha_scheduler", "torchx.contrib")


def test_threads_import_legacy_paths_at_once(make_dist) -> None:  # type: ignore[no-untyped-def]
    import threading

    make_dist(
        "torchx-alpha-compat",
        {"torchx": {"alpha": "alpha_shim_plugin"}},
        {"alpha_shim_plugin.py": SHIM_PLUGIN, "alpha_compat.py": "class AlphaScheduler: pass\n"},
    )
    errors: list[BaseException] = []

    def load(name: str) -> None:
        try:
            importlib.import_module(name)
        except BaseException as e:
            errors.append(e)

    threads = [
        threading.Thread(target=load, args=(n,)) for n in ("torchx.schedulers.alpha_scheduler", "torchx.contrib.alpha")
    ]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
    finally:
        _forget("torchx.schedulers.alpha_scheduler", "torchx.contrib")


def test_known_path_without_its_plugin_names_the_distribution(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torchx.plugins, "_registry", Registry())
    _forget("torchx.schedulers.slurm_scheduler", "torchx.components", "torchx.runtime")
    with pytest.raises(ModuleNotFoundError) as info:
        importlib.import_module("torchx.schedulers.slurm_scheduler")
    # from PyPI, or from the clone core was installed from (torchx.util.distributions.pip_install)
    assert re.fullmatch(
        r"torchx.schedulers.slurm_scheduler is provided by torchx-sched-slurm: pip install \S*torchx-sched-slurm",
        str(info.value),
    ), str(info.value)
    assert info.value.name == "torchx.schedulers.slurm_scheduler"
    with pytest.raises(ModuleNotFoundError, match=r"provided by torchx-components: pip install \S*torchx-components"):
        importlib.import_module("torchx.components.dist")
    with pytest.raises(ModuleNotFoundError, match="provided by torchx-tracker"):
        importlib.import_module("torchx.runtime.tracking")
    with pytest.raises(ModuleNotFoundError, match="No module named 'torchx.no_such_module'"):
        importlib.import_module("torchx.no_such_module")
    _forget("torchx.runtime")


def test_known_path_whose_plugin_failed_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    broken = PluginInfo(
        "lsf", "torchx-sched-lsf", "0.1", "torchx", "torchx_sched_lsf.plugin", errors=["ImportError: boom"]
    )
    monkeypatch.setattr(torchx.plugins, "_registry", Registry(plugins=[broken]))
    _forget("torchx.schedulers.lsf_scheduler")
    with pytest.raises(ModuleNotFoundError) as info:
        importlib.import_module("torchx.schedulers.lsf_scheduler")
    assert str(info.value) == (
        "torchx.schedulers.lsf_scheduler is provided by torchx-sched-lsf, which is installed but failed to load:"
        " ImportError: boom (see `torchx plugins`)"
    )


def test_importing_torchx_looks_up_no_plugin() -> None:
    # the import hook lives in torchx.compat (a small package); the registry is not loaded
    code = "import sys, torchx.runner; print(sorted(m for m in sys.modules if m.startswith(('torchx.plugins.', 'torchx.compat.'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['torchx.compat.legacy_import']"


def _install_builtins(make_dist) -> None:  # type: ignore[no-untyped-def]
    make_dist(
        "a-fake-builtins",
        {"torchx": {"builtins": "fake_builtins_plugin"}},
        {
            "fake_builtins_plugin.py": BUILTINS_PLUGIN,
            "fake_builtins/__init__.py": "",
            "fake_builtins/fakedist.py": COMPONENT.format(fn="ddp"),
            "my_project/__init__.py": "",
            "my_project/bar/__init__.py": "",
            "my_project/bar/baz.py": COMPONENT.format(fn="trainer"),
            "my_project/bar/ns/deep.py": COMPONENT.format(fn="deep"),
            "ns_top/top.py": COMPONENT.format(fn="top"),
            "ns_top/sub/below.py": COMPONENT.format(fn="below"),
        },
    )


def test_no_legacy_entries_builtins_unprefixed(make_dist) -> None:  # type: ignore[no-untyped-def]
    _install_builtins(make_dist)
    assert "fakedist.ddp" in get_components()


def test_legacy_entry_hides_builtins_and_is_reported(make_dist) -> None:  # type: ignore[no-untyped-def]
    _install_builtins(make_dist)
    site = make_dist("team-comps", {"torchx.components": {"foo": "my_project.bar", "test": "my_project"}})
    names = set(get_components())
    assert {"foo.baz.trainer", "test.bar.baz.trainer"} <= names
    assert "fakedist.ddp" not in names
    assert "torchx.fakedist.ddp" not in names
    assert not any("deep" in n for n in names)  # my_project/bar/ns has no __init__.py
    reg = torchx.plugins.get_registry()
    assert any(c.kind == "components" and c.name == "fake_builtins" for c in reg.conflicts)
    _, out, err = run_cli("plugins", env={"PYTHONPATH": str(site)})
    assert "fake_builtins" in out + err


def test_prefixed_and_underscore_aliases_add_builtins_back(make_dist) -> None:  # type: ignore[no-untyped-def]
    _install_builtins(make_dist)
    make_dist("team-comps", {"torchx.components": {"torchx": "torchx.components", "_0": "my_project.bar"}})
    names = set(get_components())
    assert {"torchx.fakedist.ddp", "baz.trainer"} <= names
    assert "fakedist.ddp" not in names
    torchx.plugins.reset()


def test_underscore_alias_of_builtins_restores_plain_names(make_dist) -> None:  # type: ignore[no-untyped-def]
    _install_builtins(make_dist)
    make_dist("team-comps", {"torchx.components": {"_0": "my_project.bar", "_1": "torchx.components"}})
    names = set(get_components())
    assert {"baz.trainer", "fakedist.ddp"} <= names
    assert not any(n.startswith(("torchx.", "_")) for n in names)


def test_top_level_namespace_package_is_searched_but_not_its_namespace_subpackages(make_dist) -> None:  # type: ignore[no-untyped-def]
    _install_builtins(make_dist)
    make_dist("team-comps", {"torchx.components": {"ns": "ns_top"}})
    names = set(get_components())
    assert "ns.top.top" in names
    assert not any("below" in n for n in names)


def test_torchx_group_components_stay_additive(make_dist) -> None:  # type: ignore[no-untyped-def]
    _install_builtins(make_dist)
    other = "from torchx.plugins import hookimpl, ComponentSource\n@hookimpl\ndef torchx_components():\n    yield ComponentSource('extra', 'my_project')\n"
    make_dist("b-extra", {"torchx": {"extra": "extra_plugin"}}, {"extra_plugin.py": other})
    make_dist("team-comps", {"torchx.components": {"foo": "my_project.bar"}})
    names = set(get_components())
    assert {"foo.baz.trainer", "extra.bar.baz.trainer"} <= names
    assert "fakedist.ddp" not in names


class _Old:
    def _validate(self, app: object, scheduler: str) -> None:
        self.seen = (app, scheduler)

    def list(self) -> list[str]:
        return ["old"]


class _New:
    def _validate(self, app: object, scheduler: str, cfg: object) -> None:
        self.seen = (app, scheduler, cfg)

    def wrapped(self, *args: object) -> None:
        self.seen = args


def test_extension_points_are_called_as_declared() -> None:
    old, new = _Old(), _New()
    call_declared(old._validate, "app", "s", {"k": 1})
    assert old.seen == ("app", "s")
    assert call_declared(old.list, {"k": 1}) == ["old"]
    call_declared(new._validate, "app", "s", {"k": 1})
    assert new.seen == ("app", "s", {"k": 1})
    call_declared(new.wrapped, 1, 2, 3)
    assert new.seen == (1, 2, 3)
