"""The README's quickstart and the documented CLI on the installed distributions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from torchx.testing import run_torchx

pytest.importorskip("torchx_sched_local")
pytest.importorskip("torchx_components")


def test_quickstart_echo_runs_and_shows_output() -> None:
    proc = run_torchx("run", "-s", "local_cwd", "utils.echo", "--msg", "hello torchx")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("local_cwd://torchx/")
    assert any(line.endswith("hello torchx") for line in lines[1:]), proc.stdout
    handle = lines[0]
    status = run_torchx("status", handle, "--json")
    assert json.loads(status.stdout)["state"] == "SUCCEEDED"
    listed = run_torchx("list", "-s", "local_cwd", "--json")
    assert handle in {a["app_handle"] for a in json.loads(listed.stdout)}
    log = run_torchx("log", f"{handle}/echo/0")
    assert "hello torchx" in log.stdout


def test_failing_job_exits_non_zero_with_state() -> None:
    proc = run_torchx("run", "-s", "local_cwd", "utils.sh", "exit", "3")
    assert proc.returncode != 0
    assert "FAILED" in proc.stderr


def test_detach_then_follow_and_wait_from_other_processes(isolated: Path) -> None:
    proc = run_torchx("run", "--detach", "-s", "local_cwd", "utils.sh", "--", "sh", "-c", "sleep 0.3; echo done")
    assert proc.returncode == 0, proc.stderr
    handle = proc.stdout.strip()
    log = run_torchx("log", "--tail", "--streams", "stdout", handle)
    assert "done" in log.stdout, log.stderr
    waited = run_torchx("wait", handle, "--json")
    assert waited.returncode == 0
    assert json.loads(waited.stdout)["state"] == "SUCCEEDED"


def test_wait_exit_code_follows_the_job() -> None:
    handle = run_torchx("run", "--detach", "-s", "local_cwd", "utils.sh", "exit", "4").stdout.strip()
    waited = run_torchx("wait", handle)
    assert waited.returncode == 1
    assert "FAILED" in waited.stdout


def test_builtins_lists_components_with_summaries() -> None:
    proc = run_torchx("builtins", "--json")
    names = {c["name"]: c["description"] for c in json.loads(proc.stdout)}
    for name in ("utils.echo", "utils.sh", "utils.python", "dist.ddp"):
        assert names.get(name), f"{name} missing or without summary"


def test_dryrun_prints_request_without_running() -> None:
    proc = run_torchx("run", "--dryrun", "-s", "local_cwd", "utils.echo", "--msg", "hi")
    assert proc.returncode == 0, proc.stderr
    assert "hi" in proc.stdout
    assert run_torchx("list", "-s", "local_cwd", "--json").stdout.strip() in ("[]", "")


def test_component_help() -> None:
    proc = run_torchx("run", "utils.echo", "--help")
    assert proc.returncode == 0
    assert "--msg" in proc.stdout
