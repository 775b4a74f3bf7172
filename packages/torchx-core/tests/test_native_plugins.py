"""The native registration format: entry points of the group ``torchx`` (``<kind>.<name> = "module:attr  # help"``),
read from metadata without importing any plugin code; event hooks as ``hooks.<name>`` modules. The same
group's entries named without a dot are the older hook modules."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import torchx.plugins
from torchx.plugins import PluginLoadError, Ref, SubmissionRejected, cache, get_registry
from torchx.specs import AppDef, Role, resource

RAISES = "raise RuntimeError('discovery must not import this module')\n"

NATIVE = {
    "scheduler.beta": "beta_impl:create_scheduler  # beta cluster: one line of help",
    "named_resource.beta.big": "beta_impl:big",
    "component": "beta_comps",
    "component.extra": "beta_comps",
    "tracker.beta": "beta_impl:tracker",
    "workspace.beta": "beta_impl:Mixin  # beta workspace",
    "cli_command.beta-hello": "beta_impl:Hello  # say hello",
    "legacy_module.torchx.schedulers.beta_scheduler": "beta_impl",
    "hooks.policy": "beta_policy",
}

POLICY = """
import dataclasses
from torchx.plugins import SubmissionRejected, hookimpl

@hookimpl
def torchx_pre_submit(app):
    if app.name == "forbidden":
        raise SubmissionRejected("not here")
    return dataclasses.replace(app, name=app.name + "-checked")

@hookimpl(wrapper=True)
def torchx_post_submit(app_handle):
    raise AssertionError("a wrapper is never called")
    yield
"""


@pytest.fixture
def beta(make_dist: Callable[..., Path]) -> Path:
    return make_dist(
        "torchx-beta",
        {"torchx": NATIVE},
        {"beta_impl.py": RAISES, "beta_policy.py": POLICY, "beta_comps/__init__.py": RAISES},
        version="0.4",
    )


def test_every_kind_is_read_from_metadata_and_nothing_is_imported(beta: Path) -> None:
    reg = get_registry()
    assert reg.schedulers["beta"] == ("beta", "beta_impl:create_scheduler", "beta cluster: one line of help")
    assert reg.named_resources["beta.big"].factory == "beta_impl:big"
    assert [(c.prefix, c.module) for c in reg.components if c.module == "beta_comps"] == [
        ("", "beta_comps"),
        ("extra", "beta_comps"),
    ]
    assert reg.trackers["beta"].factory == "beta_impl:tracker"
    assert reg.workspaces["beta"].summary == "beta workspace"
    assert reg.cli_commands["beta-hello"].help == "say hello"
    assert reg.legacy_modules["torchx.schedulers.beta_scheduler"].target == "beta_impl"
    (info,) = [p for p in reg.plugins if p.dist == "torchx-beta"]
    assert (info.group, info.ident, info.version, info.errors) == ("torchx", "torchx-beta", "0.4", [])
    assert info.hook_modules == ["beta_policy"]
    assert info.watch == []  # the cache watches sys.path only
    assert not {"beta_impl", "beta_policy", "beta_comps"} & set(sys.modules)


def test_the_cache_needs_no_file_of_a_native_plugin(beta: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = get_registry()
    torchx.plugins.reset()
    (beta / "beta_impl.py").write_text("x = 1\n")  # editing a plugin's code changes nothing it registers
    import torchx.plugins.discovery as discovery

    with monkeypatch.context() as m:
        m.setattr(discovery, "discover", lambda registry: pytest.fail("the cache should have been used"))
        assert get_registry().schedulers == first.schedulers


def test_event_hooks_are_imported_on_the_first_event(beta: Path, fake_scheduler: str) -> None:
    from torchx.runner import get_runner

    get_registry()
    assert "beta_policy" not in sys.modules
    app = AppDef("app", roles=[Role("r", "i", entrypoint="echo", resource=resource(cpu=1))])
    with get_runner() as runner:
        info = runner.dryrun(app, fake_scheduler)
        assert info.app is not None and info.app.name == "app-checked"
        runner.schedule(info)  # the wrapper post-submit hook is skipped, not called
        with pytest.raises(SubmissionRejected, match="rejected by plugin torchx-beta:beta_policy: not here"):
            runner.dryrun(AppDef("forbidden", roles=app.roles), fake_scheduler)


def test_a_malformed_entry_is_a_plugin_error_and_the_rest_loads(make_dist: Callable[..., Path]) -> None:
    """A dotted name is always a registration: an unknown kind is reported, nothing is imported for it."""
    entries = {
        "schedular.typo": "typo_mod:f",
        "scheduler.": "m:f",
        "tracker.empty": "  # no module",
        "scheduler.ok": "m:f",
    }
    make_dist("torchx-odd", {"torchx": entries}, {"typo_mod.py": RAISES})
    reg = get_registry()
    (info,) = [p for p in reg.plugins if p.dist == "torchx-odd"]
    assert [e.split(";")[0] for e in info.errors] == [
        "entry point schedular.typo = 'typo_mod:f': unknown kind 'schedular'",
        "entry point scheduler. = 'm:f': no name",
        "entry point tracker.empty = '# no module': no module",
    ]
    assert all('write <kind>.<name> = "module:attr" (kinds: scheduler, named_resource' in e for e in info.errors)
    assert info.registers == {"schedulers": ["ok"]} and "typo_mod" not in sys.modules
    assert reg.failure_summary() is not None and "\n" not in reg.failure_summary()


def test_a_distribution_with_registrations_and_a_hook_module_in_one_group(make_dist: Callable[..., Path]) -> None:
    """Entries named ``<kind>.<name>`` are read from metadata; one named without a dot (``slurm``,
    ``tracker``: the older way) is a hook module, imported and asked what it registers."""
    hook = (
        "from torchx.plugins import hookimpl, SchedulerPlugin, TrackerPlugin\n"
        "@hookimpl\ndef torchx_schedulers():\n    yield SchedulerPlugin('mixed_old', 'mixed_impl:old', 'from the hook')\n"
        "@hookimpl\ndef torchx_trackers():\n    yield TrackerPlugin('mixed_t', 'mixed_impl:tracker')\n"
    )
    entries = {
        "scheduler.mixed_new": "mixed_impl:new  # from metadata",
        "slurm": "mixed_hooks",
        "tracker": "mixed_hooks2",
        "scheduler": "mixed_impl:create",  # no kind's name alone makes a registration
    }
    make_dist(
        "torchx-mixed",
        {"torchx": entries},
        {"mixed_hooks.py": hook, "mixed_hooks2.py": hook.replace("mixed_old", "mixed_old2"), "mixed_impl.py": RAISES},
    )
    reg = get_registry()
    assert reg.schedulers["mixed_new"].summary == "from metadata"
    assert reg.schedulers["mixed_old"].summary == "from the hook" and "mixed_old2" in reg.schedulers
    assert reg.trackers["mixed_t"].factory == "mixed_impl:tracker"
    infos = {p.ident: p for p in reg.plugins if p.dist == "torchx-mixed"}
    assert set(infos) == {"torchx-mixed", "torchx-mixed:slurm", "torchx-mixed:tracker", "torchx-mixed:scheduler"}
    assert {i.group for i in infos.values()} == {"torchx"}
    assert infos["torchx-mixed"].registers == {"schedulers": ["mixed_new"]} and not infos["torchx-mixed"].errors
    assert infos["torchx-mixed:slurm"].registers == {"schedulers": ["mixed_old"], "trackers": ["mixed_t"]}
    assert infos["torchx-mixed:tracker"].errors == []
    (error,) = infos["torchx-mixed:scheduler"].errors
    assert "a name without a dot names a hook module" in error and "<kind>.<name>" in error
    assert "mixed_impl" not in sys.modules and {"mixed_hooks", "mixed_hooks2"} <= set(sys.modules)


@pytest.mark.parametrize(("levels", "upgrade"), [("2-3", "torchx-core"), ("0", "torchx-old")])
def test_an_api_range_outside_cores_registers_nothing(
    make_dist: Callable[..., Path], levels: str, upgrade: str
) -> None:
    make_dist("torchx-old", {"torchx": {"api": levels, "scheduler.old": "m:f"}})
    reg = get_registry()
    (info,) = [p for p in reg.plugins if p.dist == "torchx-old"]
    assert info.incompatible and "old" not in reg.schedulers
    assert f"written for plugin API level {levels}" in info.errors[0] and f"upgrade {upgrade}" in info.errors[0]


def test_a_clash_of_equal_rank_goes_to_the_distribution_named_first(make_dist: Callable[..., Path]) -> None:
    """Native entries are read before hook modules are imported; the clash rule is the same."""
    hook = "from torchx.plugins import hookimpl, SchedulerPlugin\n@hookimpl\ndef torchx_schedulers():\n    yield SchedulerPlugin('x', 'a:f')\n"
    make_dist("a-hooks", {"torchx": {"a": "a_plugin"}}, {"a_plugin.py": hook})
    make_dist("b-native", {"torchx": {"scheduler.x": "b:f", "scheduler.y": "b:g"}})
    make_dist("c-legacy", {"torchx.schedulers": {"y": "c:g"}})
    reg = get_registry()
    assert reg.schedulers["x"].factory == "a:f"
    assert reg.schedulers["y"].factory == "c:g"  # upstream's groups rank higher
    assert {(c.name, c.winner, c.loser) for c in reg.conflicts} == {
        ("x", "a-hooks:a", "b-native"),
        ("y", "c-legacy:y", "b-native"),
    }


def test_a_ref_imports_on_first_use_and_says_what_is_missing(make_dist: Callable[..., Path]) -> None:
    make_dist("ref-dist", {}, {"ref_mod.py": "LOADS = []\ndef make(x):\n    return x * 2\n"})
    ref = Ref("ref_mod:make")
    assert "ref_mod" not in sys.modules and repr(ref) == "<ref_mod:make>"
    assert ref(21) == 42 and ref.load() is sys.modules["ref_mod"].make
    with pytest.raises(PluginLoadError, match="'ref_mod' has no attribute 'nope'"):
        Ref("ref_mod:nope").load()
    with pytest.raises(PluginLoadError, match="cannot import 'no_such_mod_xyz'"):
        Ref("no_such_mod_xyz:f")()
    cache.clear()


def test_a_distribution_reinstalled_at_the_same_version_is_read_again(make_dist: Callable[..., Path]) -> None:
    """Moving a registration (a new entry point, or from a hook module to ``<kind>.<name>``) and
    reinstalling gives a new dist-info of the same name: the cache must not keep the old one."""
    import shutil

    site = make_dist("torchx-moved", {"torchx": {"scheduler.first": "m:f"}})
    assert "first" in get_registry().schedulers
    torchx.plugins.reset()
    shutil.rmtree(site / "torchx_moved-1.0.dist-info")  # as pip does: the old dist-info goes, a new one comes
    make_dist("torchx-moved", {"torchx": {"scheduler.second": "m:f"}})
    assert "second" in get_registry().schedulers and "first" not in get_registry().schedulers
