"""The torchx CLI on local_cwd, end to end in subprocesses, plus plugin registration."""

from __future__ import annotations

import json
import textwrap
import time
from pathlib import Path

import pytest
from torchx.testing import run_cli, run_python

COMPONENT = '''
import torchx.specs as specs


def echo(msg: str = "hello", num_replicas: int = 1) -> specs.AppDef:
    """Prints msg."""
    return specs.AppDef(
        "echo",
        [specs.Role("echo", image=".", entrypoint="echo", args=[msg], num_replicas=num_replicas)],
    )


def fail(code: int = 3) -> specs.AppDef:
    """Exits with code."""
    return specs.AppDef("fail", [specs.Role("fail", image=".", entrypoint="sh", args=["-c", f"exit {code}"])])


def sleeper() -> specs.AppDef:
    """Sleeps."""
    return specs.AppDef("sleeper", [specs.Role("s", image=".", entrypoint="sleep", args=["300"])])
'''


@pytest.fixture
def component(isolated: Path) -> str:
    (isolated / "comp.py").write_text(textwrap.dedent(COMPONENT))
    return "comp.py"


def test_plugin_registers_schedulers_and_the_docker_workspace() -> None:
    proc = run_python(
        "import sys, torchx.plugins as p; r = p.get_registry(refresh=True);"
        " print(r.origin[('schedulers', 'local_cwd')], r.origin[('schedulers', 'local_docker')],"
        " r.origin[('workspaces', 'docker')]);"
        " assert not [m for m in sys.modules if m.startswith(('docker', 'torchx_sched_local'))]"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["torchx-sched-local"] * 3


def test_run_streams_output_and_waits_every_time(component: str) -> None:
    times = []
    for i in range(10):
        t = time.perf_counter()
        proc = run_cli("run", "-s", "local_cwd", f"{component}:echo", "--msg", f"hi {i}", "--num_replicas", "2")
        times.append(time.perf_counter() - t)
        assert proc.returncode == 0, proc.stderr
        handle = proc.stdout.splitlines()[0]
        assert handle.startswith("local_cwd://torchx/echo-")
        assert f"echo/0 hi {i}" in proc.stdout
        assert f"echo/1 hi {i}" in proc.stdout
        assert "SUCCEEDED" in proc.stderr
    print(f"torchx run median {sorted(times)[5] * 1000:.0f} ms")


def test_run_failure_exits_nonzero(component: str) -> None:
    proc = run_cli("run", "-s", "local_cwd", f"{component}:fail", "--code", "7")
    assert proc.returncode == 1
    assert "FAILED" in proc.stderr
    assert "fail/0 exited with code 7" in proc.stderr


def test_detached_job_is_managed_from_later_processes(component: str) -> None:
    proc = run_cli("run", "--detach", "-s", "local_cwd", f"{component}:sleeper")
    assert proc.returncode == 0, proc.stderr
    handle = proc.stdout.strip()
    status = run_cli("status", handle)
    assert status.returncode == 0, status
    assert "RUNNING" in status.stdout, status
    listed = run_cli("list", "-s", "local_cwd")
    assert handle in listed.stdout
    assert "RUNNING" in listed.stdout
    (entry,) = [a for a in json.loads(run_cli("list", "-s", "local_cwd", "--json").stdout) if a["app_handle"] == handle]
    assert entry["state"] == "RUNNING" and entry["ended"] is None
    assert entry["submitted"] <= entry["started"] <= time.time()  # the times local_cwd knows
    described = run_cli("describe", handle)
    assert described.returncode == 0
    assert "sleep" in described.stdout
    assert "300" in described.stdout
    cancel = run_cli("cancel", handle)
    assert cancel.returncode == 0, cancel.stderr
    status = run_cli("status", handle)
    assert "CANCELLED" in status.stdout
    delete = run_cli("delete", handle)
    assert delete.returncode == 0, delete.stderr
    assert handle not in run_cli("list", "-s", "local_cwd").stdout


def test_log_command(component: str) -> None:
    proc = run_cli("run", "-s", "local_cwd", f"{component}:echo", "--msg", "logged")
    handle = proc.stdout.splitlines()[0]
    log = run_cli("log", handle)
    assert log.returncode == 0, log.stderr
    assert "echo/0 logged" in log.stdout
    assert "echo/0 logged" in run_cli("log", "--streams", "stdout", "--since", "10m", f"{handle}/echo/0").stdout


def test_runopts_documents_every_option() -> None:
    proc = run_cli("runopts", "local_cwd")
    assert proc.returncode == 0, proc.stderr
    for opt in ("log_dir", "prepend_cwd", "auto_set_cuda_visible_devices", "stop_grace_period"):
        assert opt in proc.stdout
    assert "CUDA_VISIBLE_DEVICES" in proc.stdout


def test_help_imports_no_backend_sdk() -> None:
    proc = run_python(
        "import runpy, sys; sys.argv = ['torchx', '--help']\n"
        "try:\n    runpy.run_module('torchx', run_name='__main__')\nexcept SystemExit:\n    pass\n"
        "assert 'docker' not in sys.modules and 'torchx_sched_local.local_scheduler' not in sys.modules, 'imported'"
    )
    assert proc.returncode == 0, proc.stderr


def test_a_local_docker_dry_run_of_an_fsspec_workspace_imports_no_docker_sdk() -> None:
    pytest.importorskip("fsspec")
    proc = run_python(
        "import fsspec, runpy, sys\n"
        "with fsspec.open('memory://dry-ws/main.py', 'w') as f:\n    f.write('print(1)')\n"
        "sys.argv = ['torchx', 'run', '--dryrun', '-s', 'local_docker', '--workspace', 'memory://dry-ws/',"
        " 'utils.echo', '--msg', 'hi']\n"
        "try:\n    runpy.run_module('torchx', run_name='__main__')\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
        "assert 'docker' not in sys.modules, 'imported the docker SDK'"
    )
    assert proc.returncode == 0, proc.stderr
    assert "workspace memory://dry-ws/" in proc.stdout + proc.stderr
