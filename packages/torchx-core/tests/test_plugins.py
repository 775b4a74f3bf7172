from __future__ import annotations

import os
import sys

import pytest
import torchx.plugins
from torchx.plugins import SchedulerPlugin, cache, get_registry
from torchx.specs.finder import get_component, get_components
from torchx.testing import run_cli

PLUGIN_OK = """
from torchx.plugins import hookimpl, SchedulerPlugin, NamedResourcePlugin, ComponentSource, CliCommand, TrackerPlugin, WorkspacePlugin

@hookimpl
def torchx_schedulers():
    yield SchedulerPlugin("alpha", "alpha_impl:create_scheduler", "alpha cluster")

@hookimpl
def torchx_named_resources():
    yield NamedResourcePlugin("alpha.big", "alpha_impl:big")

@hookimpl
def torchx_components():
    yield ComponentSource("", "alpha_comps")

@hookimpl
def torchx_trackers():
    yield TrackerPlugin("alpha", "alpha_impl:tracker")

@hookimpl
def torchx_workspaces():
    yield WorkspacePlugin("alpha", "alpha_impl:Mixin", "alpha workspace")

@hookimpl
def torchx_cli_commands():
    yield CliCommand("hello", "alpha_cli:Hello", "say hello")
"""

COMPONENT = '''
import torchx.specs as specs

def trainer(name: str = "t") -> specs.AppDef:
    """Trains.

    Args:
        name: the name
    """
    return specs.AppDef(name=name, roles=[specs.Role("r", "i", entrypoint="echo")])

def _private(name: str) -> specs.AppDef:
    """Private."""

def invalid(name) -> specs.AppDef:
    """No annotation.

    Args:
        name: x
    """
'''

HELLO = """
from torchx.cli.cmd_base import SubCommand

class Hello(SubCommand):
    def add_arguments(self, subparser):
        subparser.add_argument("who")

    def run(self, args):
        print(f"hello {args.who}")
"""


def install_alpha(make_dist) -> None:  # type: ignore[no-untyped-def]
    make_dist(
        "torchx-alpha",
        {"torchx": {"alpha": "alpha_plugin"}},
        {
            "alpha_plugin.py": PLUGIN_OK,
            "alpha_impl.py": "raise RuntimeError('the implementation must not be imported by discovery')\n",
            "alpha_comps/__init__.py": "",
            "alpha_comps/baz.py": COMPONENT,
            "alpha_comps/_helpers.py": COMPONENT,
            "alpha_cli.py": HELLO,
        },
        version="2.3",
    )


def test_discovery_registers_everything_and_imports_no_implementation(make_dist) -> None:  # type: ignore[no-untyped-def]
    install_alpha(make_dist)
    reg = get_registry()
    assert reg.schedulers["alpha"].factory == "alpha_impl:create_scheduler"
    assert reg.named_resources["alpha.big"].factory == "alpha_impl:big"
    assert reg.trackers["alpha"].name == "alpha"
    assert reg.workspaces["alpha"].mixin == "alpha_impl:Mixin"
    assert reg.cli_commands["hello"].help == "say hello"
    info = next(p for p in reg.plugins if p.dist == "torchx-alpha")
    assert info.version == "2.3"
    assert not info.errors
    assert info.registers["schedulers"] == ["alpha"]
    assert "alpha_impl" not in sys.modules


def test_components_listed_statically_and_named_by_prefix(make_dist) -> None:  # type: ignore[no-untyped-def]
    install_alpha(make_dist)
    make_dist("legacy-comps", {"torchx.components": {"foo": "alpha_comps", "_0": "alpha_comps"}})
    names = set(get_components())
    assert {"baz.trainer", "foo.baz.trainer"} <= names
    assert not any("invalid" in n or "_private" in n or "_helpers" in n for n in names)
    assert "alpha_comps.baz" not in sys.modules
    comp = get_component("foo.baz.trainer")
    assert comp.fn().name == "t"
    assert comp.description == "Trains."


def test_legacy_groups_add_to_plugins_and_win_clashes(make_dist) -> None:  # type: ignore[no-untyped-def]
    install_alpha(make_dist)
    make_dist(
        "team-legacy",
        {
            "torchx.schedulers": {"alpha": "team:create_alpha", "team": "team:create_team"},
            "torchx.named_resources": {"gpu_x2": "team:gpu_x2"},
            "torchx.tracker": {"teamtrack": "team:create"},
            "torchx.cli.cmds": {"teamcmd": "team:Cmd"},
        },
    )
    reg = get_registry()
    assert set(reg.schedulers) >= {"alpha", "team"}
    assert reg.schedulers["alpha"].factory == "team:create_alpha"
    assert reg.named_resources["gpu_x2"].factory == "team:gpu_x2"
    assert "teamtrack" in reg.trackers
    assert "teamcmd" in reg.cli_commands
    [conflict] = reg.conflicts
    assert (conflict.kind, conflict.name) == ("schedulers", "alpha")
    assert conflict.winner.startswith("team-legacy")
    assert conflict.loser.startswith("torchx-alpha")


def test_clash_between_plugins_first_distribution_wins(make_dist) -> None:  # type: ignore[no-untyped-def]
    plugin = "from torchx.plugins import hookimpl, SchedulerPlugin\n@hookimpl\ndef torchx_schedulers():\n    yield SchedulerPlugin('x', '{}:f')\n"
    make_dist("b-dist", {"torchx": {"b": "b_plugin"}}, {"b_plugin.py": plugin.format("b")})
    make_dist("a-dist", {"torchx": {"a": "a_plugin"}}, {"a_plugin.py": plugin.format("a")})
    reg = get_registry()
    assert reg.schedulers["x"].factory == "a:f"
    assert reg.conflicts[0].loser.startswith("b-dist")


def test_broken_plugins_are_recorded_and_skipped(make_dist) -> None:  # type: ignore[no-untyped-def]
    install_alpha(make_dist)
    make_dist("broken-import", {"torchx": {"bad": "bad_plugin"}}, {"bad_plugin.py": "import no_such_module_xyz\n"})
    make_dist(
        "broken-hook",
        {"torchx": {"bad2": "bad2_plugin"}},
        {
            "bad2_plugin.py": (
                "from torchx.plugins import hookimpl\n"
                "@hookimpl\ndef torchx_schedulers():\n    raise RuntimeError('boom')\n"
                "@hookimpl\ndef torchx_named_resources():\n    yield 'not a record'\n"
            )
        },
    )
    make_dist("exits", {"torchx": {"ex": "exit_plugin"}}, {"exit_plugin.py": "import sys\nsys.exit(3)\n"})
    reg = get_registry()
    errors = dict(reg.errors)
    assert "No module named 'no_such_module_xyz'" in errors["broken-import:bad"]
    by_plugin = {p.dist: p.errors for p in reg.plugins}
    assert any("torchx_schedulers raised RuntimeError: boom" in e for e in by_plugin["broken-hook"])
    assert any("yielded str, expected NamedResourcePlugin" in e for e in by_plugin["broken-hook"])
    assert any("SystemExit" in e for e in by_plugin["exits"])
    assert "alpha" in reg.schedulers


def test_cache_is_used_and_invalidated_by_installs(make_dist, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    install_alpha(make_dist)
    first = get_registry()
    torchx.plugins.reset()
    assert cache.load() is not None
    import torchx.plugins.discovery as discovery

    with monkeypatch.context() as m:
        m.setattr(discovery, "discover", lambda: pytest.fail("cache should have been used"))
        assert get_registry().schedulers == first.schedulers
    make_dist("later", {"torchx.schedulers": {"later": "later:create"}})
    assert cache.load() is None
    assert "later" in get_registry().schedulers


def test_cache_survives_unrelated_files_in_a_path_directory(make_dist, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`python -m torchx` puts the current directory on sys.path: a file written there (a log,
    a checkpoint) changes its time but not the plugins, and must not cost a new discovery."""
    site = make_dist("steady", {"torchx.schedulers": {"steady": "steady:create"}})
    first = get_registry()
    torchx.plugins.reset()
    (site / "train.log").write_text("epoch 1\n")
    st = os.stat(site)
    os.utime(site, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    import torchx.plugins.discovery as discovery

    with monkeypatch.context() as m:
        m.setattr(discovery, "discover", lambda: pytest.fail("an unrelated file must not invalidate the cache"))
        assert get_registry().schedulers == first.schedulers
        torchx.plugins.reset()
        assert get_registry().schedulers == first.schedulers  # rewritten with the new time: still cached
    (site / "torchx_plugins").mkdir()  # a namespace package appears: discovery must look again
    assert cache.load() is None


def test_cache_invalidated_when_plugin_module_edited(make_dist) -> None:  # type: ignore[no-untyped-def]
    site = make_dist("edit-me", {"torchx": {"e": "edit_plugin"}}, {"edit_plugin.py": "x = 1\n"})
    get_registry()
    assert cache.load() is not None
    path = site / "edit_plugin.py"
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert cache.load() is None


@pytest.mark.parametrize("broken", ["fixme_plugin.py", "fixme_helper.py"])
def test_plugin_fixed_in_place_shows_no_stale_error(make_dist, broken: str) -> None:  # type: ignore[no-untyped-def]
    """A plugin whose module (or a module it imports) failed to import and is then fixed in
    place loads without clearing any cache (the cache notices the file it failed in)."""
    modules = {
        "fixme_plugin.py": "import fixme_helper\nfrom torchx.plugins import hookimpl, SchedulerPlugin\n\n"
        "@hookimpl\ndef torchx_schedulers():\n    yield SchedulerPlugin('fixme', 'fixme_helper:create')\n",
        "fixme_helper.py": "def create(): ...\n",
    }
    good = modules[broken]
    site = make_dist("fix-me", {"torchx": {"fixme": "fixme_plugin"}}, {**modules, broken: good + "def broken(:\n"})
    assert any("SyntaxError" in e for _, e in get_registry().errors), get_registry().errors
    torchx.plugins.reset()
    assert cache.load() is not None  # nothing changed yet: the cached error stands
    path = site / broken
    path.write_text(good)
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    torchx.plugins.reset()
    reg = get_registry()
    assert not reg.errors
    assert "fixme" in reg.schedulers


def test_pre_submit_hook_amends_and_rejects(make_dist, fake_scheduler) -> None:  # type: ignore[no-untyped-def]
    make_dist(
        "policy",
        {"torchx": {"policy": "policy_plugin"}},
        {
            "policy_plugin.py": """
import dataclasses
from torchx.plugins import hookimpl, SubmissionRejected

@hookimpl
def torchx_pre_submit(app, scheduler, cfg):
    if app.name == "forbidden":
        raise SubmissionRejected("name 'forbidden' is not allowed here")
    return dataclasses.replace(app, metadata={**app.metadata, "audited": "yes"})

SEEN = []

@hookimpl
def torchx_post_submit(app_handle, app, scheduler, cfg):
    SEEN.append(app_handle)
    raise RuntimeError("post hook errors are logged, not raised")
"""
        },
    )
    from torchx.plugins import SubmissionRejected
    from torchx.runner import get_runner
    from torchx.specs import AppDef, Role, resource

    app = AppDef("ok", roles=[Role("r", "i", entrypoint="echo", resource=resource(cpu=1))])
    with get_runner() as runner:
        info = runner.dryrun(app, "fake")
        assert info.app is not None
        assert info.app.metadata == {"audited": "yes"}
        assert app.metadata == {}
        handle = runner.schedule(info)
        with pytest.raises(SubmissionRejected, match="rejected by plugin policy:policy: name 'forbidden'"):
            runner.dryrun(AppDef("forbidden", roles=app.roles), "fake")
    assert [handle] == sys.modules["policy_plugin"].SEEN


def test_event_hooks_take_the_arguments_they_declare_and_run_in_distribution_order(  # type: ignore[no-untyped-def]
    make_dist, fake_scheduler
) -> None:
    calls: list[str] = []
    torchx.plugins.__dict__["_TEST_CALLS"] = calls  # where the plugin modules below write
    body = """
import dataclasses
import torchx.plugins
from torchx.plugins import hookimpl

@hookimpl
def torchx_pre_submit(app):
    torchx.plugins._TEST_CALLS.append("{name}:pre:" + app.name)
    return dataclasses.replace(app, name=app.name + "-{name}")

@hookimpl
def torchx_post_submit(app_handle):
    torchx.plugins._TEST_CALLS.append("{name}:post")
"""
    for name in ("zeta", "alpha"):
        make_dist(f"policy-{name}", {"torchx": {name: f"{name}_policy"}}, {f"{name}_policy.py": body.format(name=name)})
    from torchx.runner import get_runner
    from torchx.specs import AppDef, Role, resource

    app = AppDef("app", roles=[Role("r", "i", entrypoint="echo", resource=resource(cpu=1))])
    try:
        with get_runner() as runner:
            info = runner.dryrun(app, "fake")
            assert info.app is not None
            assert info.app.name == "app-alpha-zeta"
            runner.schedule(info)
    finally:
        del torchx.plugins.__dict__["_TEST_CALLS"]
    assert calls == ["alpha:pre:app", "zeta:pre:app-alpha", "alpha:post", "zeta:post"]


def test_event_hook_manager_is_built_once(make_dist, fake_scheduler, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Event hooks go through one pluggy manager per registry: discovery's when it ran in this
    process, else one built on the first event (from the cached registry)."""
    make_dist("counted", {"torchx": {"counted": "counted_policy"}}, {"counted_policy.py": PRE_SUBMIT_COUNTER})
    from torchx.plugins import hookspecs
    from torchx.runner import get_runner
    from torchx.specs import AppDef, Role, resource

    built: list[object] = []
    original = hookspecs.new_plugin_manager

    def counting() -> object:
        built.append(original())
        return built[-1]

    monkeypatch.setattr(hookspecs, "new_plugin_manager", counting)
    app = AppDef("app", roles=[Role("r", "i", entrypoint="echo", resource=resource(cpu=1))])
    for fresh in (True, False):  # discovery in this process, then the disk cache
        torchx.plugins.reset()
        if fresh:
            cache.clear()
        with get_runner() as runner:
            for _ in range(3):
                runner.run(app, "fake")
    assert len(built) == 2
    assert sys.modules["counted_policy"].CALLS == 6


PRE_SUBMIT_COUNTER = """
from torchx.plugins import hookimpl

CALLS = 0

@hookimpl
def torchx_pre_submit():
    global CALLS
    CALLS += 1
"""


def test_wrapper_event_hook_is_a_plugin_error_and_never_called(make_dist, fake_scheduler) -> None:  # type: ignore[no-untyped-def]
    make_dist(
        "policy-wrapper",
        {"torchx": {"wrap": "wrap_policy"}},
        {
            "wrap_policy.py": """
from torchx.plugins import hookimpl

@hookimpl(wrapper=True)
def torchx_pre_submit(app, scheduler, cfg):
    raise AssertionError("a wrapper must never be called")
    yield

@hookimpl
def torchx_post_submit(app_handle):
    pass
"""
        },
    )
    from torchx.runner import get_runner
    from torchx.specs import AppDef, Role, resource

    info = next(p for p in get_registry().plugins if p.dist == "policy-wrapper")
    assert len(info.errors) == 1
    assert "torchx_pre_submit is declared as a wrapper" in info.errors[0]
    assert info.event_hooks == ["torchx_post_submit"]
    app = AppDef("app", roles=[Role("r", "i", entrypoint="echo", resource=resource(cpu=1))])
    with get_runner() as runner:
        dryrun = runner.dryrun(app, "fake")
    assert dryrun.app is not None
    assert dryrun.app.name == "app"


def test_cli_lists_plugins_and_runs_plugin_command(make_dist) -> None:  # type: ignore[no-untyped-def]
    install_alpha(make_dist)
    site = make_dist(
        "broken-import", {"torchx": {"bad": "bad_plugin"}}, {"bad_plugin.py": "raise ImportError('nope')\n"}
    )
    env = {"PYTHONPATH": str(site)}
    code, out, err = run_cli("hello", "world", env=env)
    assert (code, out.strip()) == (0, "hello world")
    code, out, err = run_cli("plugins", env=env)
    assert code == 1
    assert "torchx-alpha 2.3" in out
    assert "error: cannot load module 'bad_plugin': ImportError: nope" in out
    code, out, err = run_cli("plugins", "--json", env=env)
    import json

    data = json.loads(out)
    assert {p["dist"] for p in data["plugins"]} >= {"torchx-alpha", "broken-import"}
    code, out, err = run_cli("--help", env=env)
    assert code == 0
    assert "hello" in out


def test_a_failed_plugin_is_named_where_it_matters(make_dist, fake_scheduler) -> None:  # type: ignore[no-untyped-def]
    site = make_dist("torchx-foo", {"torchx": {"foo": "foo_plugin"}}, {"foo_plugin.py": "import no_such_sdk\n"})
    env = {"PYTHONPATH": str(site)}
    # every verb warns once, in one line that names the distribution and the error
    code, out, err = run_cli("runopts", "fake", env=env)
    assert code == 0
    warnings = [line for line in err.splitlines() if line.startswith("torchx: warning:")]
    assert warnings == [
        "torchx: warning: plugin error in torchx-foo 1.0 (foo): cannot load module 'foo_plugin':"
        " ModuleNotFoundError: No module named 'no_such_sdk'; see `torchx plugins`"
    ]
    # asking for what it would have provided says why it is not there
    code, out, err = run_cli("list", "-s", "foo", env=env)
    assert code == 1
    assert "unknown scheduler 'foo'. Plugin torchx-foo 1.0 failed to load: cannot load module 'foo_plugin'" in err
    assert "No module named 'no_such_sdk'" in err.splitlines()[-1]


def test_registrations_are_frozen_positional_values_and_survive_the_cache(make_dist) -> None:  # type: ignore[no-untyped-def]
    reg_record = SchedulerPlugin("x", "mod:create", "one line")
    assert (reg_record.name, reg_record.factory, reg_record.summary) == ("x", "mod:create", "one line")
    name, factory, summary = reg_record
    assert reg_record == SchedulerPlugin(name=name, factory=factory, summary=summary) == ("x", "mod:create", "one line")
    with pytest.raises(AttributeError, match="frozen"):
        reg_record.name = "y"  # type: ignore[misc]
    assert len({reg_record, SchedulerPlugin("x", "mod:create", "one line")}) == 1
    install_alpha(make_dist)
    make_dist("team-legacy", {"torchx.schedulers": {"alpha": "team:create_alpha"}})
    reg = get_registry()
    assert reg.conflicts
    assert reg.plugins
    again = type(reg).from_data(reg.to_data())  # what the marshal cache stores and reads back
    assert again.schedulers == reg.schedulers
    assert again.components == reg.components
    assert again.conflicts == reg.conflicts
    assert again.plugins == reg.plugins
    assert again.origin == reg.origin
    import marshal

    assert marshal.loads(marshal.dumps(reg.to_data())) == reg.to_data()  # plain data only
