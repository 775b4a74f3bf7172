from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from torchx.testing import run_cli

COMPONENTS = '''
import torchx.specs as specs

def echo(msg: str = "hello", n: int = 1) -> specs.AppDef:
    """Echoes a message.

    Args:
        msg: what to print
        n: replicas
    """
    return specs.AppDef(name="echo", roles=[specs.Role("echo", "/tmp", entrypoint="echo", args=[msg], num_replicas=n,
                                                       resource=specs.resource(cpu=1))])
'''


@pytest.fixture
def cli_env(fake_scheduler: str, make_dist, tmp_path: Path) -> dict[str, str]:  # type: ignore[no-untyped-def]
    site = make_dist(
        "comps",
        {"torchx": {"comps": "comps_plugin"}},
        {
            "comps_plugin.py": "from torchx.plugins import hookimpl, ComponentSource\n"
            "@hookimpl\ndef torchx_components():\n    yield ComponentSource('', 'mycomps')\n",
            "mycomps/__init__.py": "",
            "mycomps/utils.py": COMPONENTS,
        },
    )
    return {"PYTHONPATH": str(site)}


def test_help_and_version() -> None:
    code, out, _ = run_cli("--help")
    assert code == 0
    assert "run a component" in out
    assert "plugins" in out
    code, out, _ = run_cli("--version")
    assert code == 0
    assert out.startswith("torchx ")


@pytest.mark.parametrize(
    "args, message, exit_code",
    [
        (["rnu"], "unknown command 'rnu'. Did you mean 'run'?", 2),
        (["status", "garbage"], "'garbage' is not an app handle", 1),
        (["status", "nosched://s/x"], "unknown scheduler 'nosched'", 1),
        (["run", "-s", "fak", "utils.echo"], "unknown scheduler 'fak'. Did you mean 'fake'?", 1),
        (["run", "-s", "fake", "utils.ecoh"], "unknown component 'utils.ecoh'. Did you mean 'utils.echo'", 1),
        (["run", "-s", "fake", "echo"], "unknown component 'echo'. Did you mean 'utils.echo'?", 1),
        (["run", "-s", "fake", "ech"], "unknown component 'ech'. Did you mean 'utils.echo'?", 1),
        (["run", "-s", "fake", "zzz"], "unknown component 'zzz'. `torchx builtins` lists them", 1),
        (["run", "-s", "fake", "utils.echo", "--n", "x"], "argument --n/-n: invalid int value 'x'", 1),
        (
            ["run", "-s", "fake", "-cfg", "cluster=a,retries=x", "utils.echo"],
            "'retries' expects int",
            1,
        ),
        (["run", "-s", "fake", "nofile.py:fn"], "component file 'nofile.py' does not exist", 1),
        (["status", "fake://torchx/nope"], "unknown app 'fake://torchx/nope'", 1),
        (["log", "fake://torchx/nope"], "unknown app", 1),
        (["wait", "fake://torchx/nope"], "unknown app", 1),
        (["cancel", "fake://torchx/nope"], "unknown app", 1),
        pytest.param(
            ["runopts", "slurm"],
            "torchx-sched-slurm",
            1,
            marks=pytest.mark.skipif(
                importlib.util.find_spec("torchx_sched_slurm") is not None,
                reason="the install hint needs torchx-sched-slurm absent (nox -s \"tests(package='torchx-core')\")",
            ),
        ),
        (
            ["run", "-s", "fake", "utils.echo", "--mgs", "hi"],
            "unrecognized arguments: --mgs hi. Did you mean '--msg'?",
            1,
        ),
        (["run", "-s", "fake", "utils.echo", "--zzz"], "unrecognized arguments: --zzz (its arguments: --msg, --n)", 1),
        (["log", "--regex", "(", "fake://torchx/x"], "invalid --regex '(': missing ), unterminated subpattern", 1),
    ],
)
def test_bad_input_is_one_line_without_traceback(
    cli_env: dict[str, str], args: list[str], message: str, exit_code: int
) -> None:
    code, out, err = run_cli(*args, env=cli_env)
    assert code == exit_code, (out, err)
    assert message in err
    assert "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err


def test_verbose_shows_traceback(cli_env: dict[str, str]) -> None:
    code, _, err = run_cli("--verbose", "status", "garbage", env=cli_env)
    assert code == 1
    assert "Traceback" in err
    code, _, err = run_cli("status", "garbage", env={**cli_env, "TORCHX_DEBUG": "1"})
    assert code == 1
    assert "Traceback" in err


@pytest.mark.parametrize(
    "text, says",
    [
        ("this is not ini\n", "line 1: 'this is not ini' comes before any section header; put settings under one"),
        ("[fake]\ncluster = x\n[[oops\n", "line 3: '[[oops' is not `key = value`, a [section] header or a comment"),
        ("[fake]\n[fake]\n", "line 2: section [fake] appears twice; merge the two"),
        ("[fake]\ncluster = x\ncluster = y\n", "line 3: 'cluster' is set twice in section [fake]; keep one"),
    ],
)
def test_malformed_torchxconfig(cli_env: dict[str, str], isolated: Path, text: str, says: str) -> None:
    """The file, the line, what is wrong and how to fix it, in one line."""
    (isolated / ".torchxconfig").write_text(text)
    code, _, err = run_cli("run", "-s", "fake", "utils.echo", env=cli_env, cwd=str(isolated))
    assert code == 1
    (line,) = err.strip().splitlines()
    assert line.startswith(f"torchx: error: malformed {isolated / '.torchxconfig'}, {says}")
    assert "Traceback" not in err


def test_run_dryrun_and_run(cli_env: dict[str, str]) -> None:
    code, out, err = run_cli(
        "run", "--dryrun", "-s", "fake", "-cfg", "cluster=c9", "utils.echo", "--msg", "hi", env=cli_env
    )
    assert code == 0, err
    assert out.strip() == "FAKE echo on c9", err
    code, out, err = run_cli("run", "-s", "fake", "utils.echo", env=cli_env)
    assert code == 0
    assert out.strip().startswith("fake://torchx/echo-")


def test_component_help(cli_env: dict[str, str]) -> None:
    code, out, _ = run_cli("run", "-s", "fake", "utils.echo", "--help", env=cli_env)
    assert code == 0
    assert "Echoes a message." in out
    assert "what to print (str, default: 'hello')" in out


def test_builtins_and_runopts_json(cli_env: dict[str, str]) -> None:
    code, out, _ = run_cli("builtins", env=cli_env)
    assert code == 0
    assert "utils.echo" in out
    assert "Echoes a message." in out
    code, out, _ = run_cli("builtins", "--json", env=cli_env)
    ours = [c for c in json.loads(out) if c["module"].startswith("mycomps")]
    assert ours == [{"name": "utils.echo", "description": "Echoes a message.", "module": "mycomps.utils"}]
    code, out, _ = run_cli("builtins", "--print", "utils.echo", env=cli_env)
    assert code == 0
    assert out.startswith("import torchx.specs as specs\n")
    assert "\ndef echo(" in out
    code, out, _ = run_cli("runopts", "fake", "--json", env=cli_env)
    assert json.loads(out)["fake"]["cluster"] == {
        "type": "str",
        "required": False,
        "default": "default",
        "help": "Cluster to submit to.",
        "aliases": [],
    }
    code, out, _ = run_cli("runopts", env=cli_env)
    assert code == 0
    assert "fake:" in out
    assert "cluster (str, default: default)" in out


def test_configure_print(cli_env: dict[str, str]) -> None:
    code, out, _ = run_cli("configure", "--print", "-a", "-s", "fake", env=cli_env)
    assert code == 0
    assert "[fake]" in out
    assert "cluster = default" in out


def test_no_scheduler_installed_says_what_to_install() -> None:
    import importlib.util

    if importlib.util.find_spec("torchx_sched_local") or importlib.util.find_spec("torchx_components"):
        pytest.skip("needs torchx-core installed without scheduler and component packages")
    code, _, err = run_cli("run", "utils.echo")
    assert code == 1, err
    assert re.search(r"pip install \S*torchx-sched-local", err), err
    code, out, _ = run_cli("builtins")
    assert code == 0, out
    assert re.search(r"pip install \S*torchx-components", out), out


def test_help_imports_no_plugin_machinery_when_cache_is_warm(cli_env: dict[str, str]) -> None:
    run_cli("--help", env=cli_env)
    probe = (
        "import sys, runpy; sys.argv=['torchx','--help']\n"
        "try:\n    runpy.run_module('torchx', run_name='__main__')\nexcept SystemExit:\n    pass\n"
        "bad=[m for m in ('pluggy','importlib.metadata','fake_sched.scheduler','mycomps.utils','json','torchx.compat.authoring','torchx.compat.namespace','torchx.compat.plugin_registry','torchx.specs.overlays') if m in sys.modules]\n"
        "print('IMPORTED', bad, file=sys.stderr)\n"
    )
    import os

    for _ in range(2):  # the first run fills the cache for this sys.path
        proc = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, env={**os.environ, **cli_env}
        )
    assert "IMPORTED []" in proc.stderr, proc.stderr


def test_closed_pipe_is_quiet(cli_env: dict[str, str]) -> None:
    import os

    for reader in ("head -c 10", "true"):  # reads a little / closes before we write
        proc = subprocess.run(
            f"{sys.executable} -m torchx runopts fake | {reader}",
            shell=True,
            capture_output=True,
            text=True,
            env={**os.environ, **cli_env},
        )
        assert proc.stderr == "", proc.stderr
    assert proc.returncode == 0


def test_errors_list_what_is_there(cli_env: dict[str, str], isolated: Path) -> None:
    (isolated / "comps.py").write_text(COMPONENTS)
    code, _, err = run_cli("run", "-s", "fake", "comps.py:ecoh", env=cli_env, cwd=str(isolated))
    assert code == 1, err
    assert "comps.py has no function 'ecoh'. Did you mean 'echo'? Its functions: echo." in err, err
    # the fake scheduler keeps its apps in memory: ask it in this process
    from torchx.cli.cmd_log import CmdLog
    from torchx.runner import get_runner
    from torchx.specs import AppDef, Role, resource

    with get_runner() as runner:
        handle = runner.run(AppDef("a", roles=[Role("r", "i", entrypoint="e", resource=resource(cpu=1))]), "fake")
    import argparse

    parser = argparse.ArgumentParser()
    command = CmdLog()
    command.add_arguments(parser)
    with pytest.raises(ValueError, match=r"no replicas match .*/r/3; the app has r/0"):
        command.run(parser.parse_args([f"{handle}/r/3"]))


def test_status_leads_with_the_state(cli_env: dict[str, str]) -> None:
    from torchx.cli.cmd_status import CmdStatus
    from torchx.runner import get_runner
    from torchx.specs import AppDef, Role, resource

    with get_runner() as runner:
        handle = runner.run(AppDef("a", roles=[Role("r", "i", entrypoint="e", resource=resource(cpu=1))]), "fake")
    import argparse
    import contextlib
    import io

    parser = argparse.ArgumentParser()
    command = CmdStatus()
    command.add_arguments(parser)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        command.run(parser.parse_args([handle]))
    assert out.getvalue().splitlines()[0] == f"SUCCEEDED  {handle}"


def test_run_flags_global_options_not_abbreviated_scheduler_once(cli_env: dict[str, str]) -> None:
    code, out, err = run_cli("run", "--log", "-s", "fake", "utils.echo", "--msg", "hi", env=cli_env)
    assert code == 0, err
    assert "ambiguous" not in err, err
    code, out, err = run_cli("run", "--dry", "-s", "fake", "utils.echo", env=cli_env)
    assert code == 0, err
    assert "FAKE" in out, err  # a verb's options may be abbreviated, as in TorchX
    code, _, err = run_cli("run", "-s", "fake", "-s", "fake", "utils.echo", env=cli_env)
    assert code == 2
    assert "given twice" in err
    code, _, err = run_cli("run", "-s", "fake", "-cfg", "clustr=a", "-cfg", "clustr=b", "utils.echo", env=cli_env)
    assert code == 0
    assert err.count("'clustr'") == 1
    assert "did you mean 'cluster'" in err
    code, _, err = run_cli("run", "-s", "fake", "utils.echo", "--msg", "x", "--verbose", env=cli_env)
    assert "Traceback" not in err
    assert "--verbose" in err  # the component's error, not torchx's debug mode


def test_runopts_imports_a_backend_only_when_its_code_changed(cli_env: dict[str, str], tmp_path: Path) -> None:
    """``torchx runopts`` keeps each scheduler's options in the torchx cache: a later run imports
    no backend; editing a file of the scheduler's package recomputes them."""
    module = Path(cli_env["PYTHONPATH"]) / "fake_sched" / "scheduler.py"
    marker = tmp_path / "imported"
    source = module.read_text()
    module.write_text(source + f"\nopen({str(marker)!r}, 'a').write('x')\n")
    first = run_cli("runopts", env=cli_env)
    second = run_cli("runopts", env=cli_env)
    assert first == second
    assert first[0] == 0 and "Cluster to submit to." in first[1], first
    assert marker.read_text() == "x"  # the second run read the cache
    module.write_text(module.read_text().replace("Cluster to submit to.", "Cluster, edited."))
    third = run_cli("runopts", "--json", env=cli_env)
    assert json.loads(third[1])["fake"]["cluster"]["help"] == "Cluster, edited."
    assert marker.read_text() == "xx"
