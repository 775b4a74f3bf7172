"""The ``torchx`` command lines TorchX 0.7 users type."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import pytest
from torchx.testing import run_torchx

pytest.importorskip("torchx_sched_local")
pytest.importorskip("torchx_components")

ARGS_PY = "import sys\nprint('ARGS', sys.argv[1:])\n"


def test_run_log_is_torchx_flag_not_log_level(isolated: Path) -> None:
    proc = run_torchx("run", "--log", "-s", "local_cwd", "utils.echo", "--msg", "tail me")
    assert proc.returncode == 0, proc.stderr
    assert "tail me" in proc.stderr  # TorchX's `run --log` writes the job's log to stderr
    assert "tail me" not in proc.stdout  # stdout: the app handle only
    assert "ambiguous" not in proc.stderr


@pytest.mark.parametrize(
    "script_args",
    [
        ["--ver"],  # a prefix of torchx's --version / --verbose
        ["--log", "--dryrun", "-s", "x", "-cfg", "k=v"],  # torchx run's own flags
        ["--verbose", "-v", "--log_level", "DEBUG", "--help"],  # torchx's global flags
        ["--w", "--dry", "--sched", "x"],  # prefixes of torchx run's flags
    ],
)
def test_nothing_after_the_component_is_a_torchx_option(
    isolated: Path, script_args: list[str], write: Callable[[Path, str], Path]
) -> None:
    write(isolated / "args.py", ARGS_PY)
    proc = run_torchx("run", "-s", "local_cwd", "utils.python", "--script", "args.py", "--", *script_args)
    assert proc.returncode == 0, proc.stderr
    assert f"ARGS {script_args!r}" in proc.stdout
    proc = run_torchx("run", "-s", "local_cwd", "utils.python", "args.py", *script_args)
    assert proc.returncode == 0, proc.stderr
    assert f"ARGS {script_args!r}" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_run_flags_may_be_abbreviated_before_the_component(isolated: Path) -> None:
    proc = run_torchx("run", "--dry", "--parent", "p1", "-s", "local_cwd", "utils.echo", "--msg", "abbreviated")
    assert proc.returncode == 0, proc.stderr
    assert "abbreviated" in proc.stdout, proc.stderr
    assert run_torchx("run", "--s", "local_cwd", "utils.echo").returncode == 2  # --scheduler or --scheduler_args?


def test_scheduler_twice_is_an_error(isolated: Path) -> None:
    proc = run_torchx("run", "-s", "local_cwd", "-s", "local_docker", "--dryrun", "utils.echo")
    assert proc.returncode == 2
    assert "given twice" in proc.stderr


def test_unknown_cfg_key_warns_once_with_suggestion(isolated: Path) -> None:
    proc = run_torchx(
        "run", "-s", "local_cwd", "-cfg", "log_dri=/tmp/x,partition=a", "-cfg", "log_dri=/tmp/y", "utils.echo"
    )
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "log_dri" in line]
    assert len(warnings) == 1
    assert "did you mean 'log_dir'" in warnings[0]
    assert "'partition'" in warnings[0]


def test_wrong_cfg_type_still_fails(isolated: Path) -> None:
    proc = run_torchx("run", "-s", "local_cwd", "-cfg", "stop_grace_period=soon", "utils.echo")
    assert proc.returncode == 1
    assert "stop_grace_period" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "name, fn, args",
    [
        ("utils.echo", "echo", ["--msg", "from a saved copy"]),
        ("utils.python", "python", ["-c", "print('from a saved copy')"]),
        ("utils.sh", "sh", ["echo", "from a saved copy"]),
        ("utils.booth", "booth", ["--x1", "1", "--x2", "3"]),
    ],
)
def test_builtins_print_gives_a_runnable_component(
    isolated: Path, name: str, fn: str, args: list[str], write: Callable[[Path, str], Path]
) -> None:
    printed = run_torchx("builtins", "--print", name)
    assert printed.returncode == 0, printed.stderr
    ast.parse(printed.stdout)
    write(isolated / "my_component.py", printed.stdout)
    proc = run_torchx("run", "-s", "local_cwd", f"./my_component.py:{fn}", *args)
    if name == "utils.booth":  # needs fsspec in the job; the dry run proves the copy materializes
        proc = run_torchx("run", "--dryrun", "-s", "local_cwd", f"./my_component.py:{fn}", *args)
        assert proc.returncode == 0, proc.stderr
        return
    assert proc.returncode == 0, proc.stderr
    assert "from a saved copy" in proc.stdout


def test_builtins_print_source_api(isolated: Path) -> None:
    from torchx.specs.finder import get_builtin_source

    source = get_builtin_source("dist.ddp")
    assert "def ddp(" in source
    assert "TORCHX_IMAGE" in source
    namespace: dict[str, object] = {}
    exec(compile(source, "ddp_copy.py", "exec"), namespace)  # a self-contained module
    assert callable(namespace["ddp"])


def test_double_dash_before_component_arguments(isolated: Path) -> None:
    """advanced-usage: ``torchx run foo.baz.trainer -- --name "test app"``."""
    proc = run_torchx("run", "--dryrun", "-s", "local_cwd", "utils.echo", "--", "--msg", "test app")
    assert proc.returncode == 0, proc.stderr
    assert "echo 'test app'" in proc.stdout


def test_usage_errors_are_one_line_naming_the_verb(isolated: Path) -> None:
    for argv, verb in ((["run", "--bogus"], "run"), (["status"], "status"), (["log", "-x", "h"], "log")):
        proc = run_torchx(*argv)
        assert proc.returncode == 2
        assert proc.stderr.count("\n") == 1, proc.stderr
        assert proc.stderr.startswith(f"torchx {verb}: error: "), proc.stderr
        assert f"torchx {verb} --help" in proc.stderr
        assert "usage:" not in proc.stderr


def test_unknown_component_section_key_warns(isolated: Path, write: Callable[[Path, str], Path]) -> None:
    write(isolated / ".torchxconfig", "[component:utils.echo]\nmgs = from config\n")
    proc = run_torchx("run", "--dryrun", "-s", "local_cwd", "utils.echo")
    assert proc.returncode == 0, proc.stderr
    assert "mgs" in proc.stderr and "Did you mean 'msg'?" in proc.stderr


def test_status_after_cancel_shows_no_internal_detail(isolated: Path) -> None:
    proc = run_torchx("run", "-s", "local_cwd", "--detach", "utils.sh", "sleep", "60")
    assert proc.returncode == 0, proc.stderr
    handle = proc.stdout.splitlines()[0]
    assert run_torchx("cancel", handle).returncode == 0
    status = run_torchx("status", handle)
    assert "CANCELLED" in status.stdout
    assert "no reply file" not in status.stdout


@pytest.mark.parametrize("component", ["dist.ddp", "dist.spmd", "utils.python", "utils.sh", "serve.torchserve"])
def test_builtins_print_imports_only_public_names(isolated: Path, component: str) -> None:
    proc = run_torchx("builtins", "--print", component)
    assert proc.returncode == 0, proc.stderr
    for node in ast.walk(ast.parse(proc.stdout)):
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            assert not any(part.startswith("_") for part in (node.module or "").split(".")), ast.unparse(node)
            assert not any(a.name.startswith("_") for a in node.names), ast.unparse(node)
        elif isinstance(node, ast.Import):
            assert not any(p.startswith("_") for a in node.names for p in a.name.split(".")), ast.unparse(node)
