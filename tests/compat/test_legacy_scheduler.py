"""A scheduler plugin written for TorchX 0.7 (plugins/legacy_sched, registered under the legacy
``torchx.schedulers`` group) runs its whole lifecycle through the CLI and the Runner."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from torchx.testing import run_torchx

pytest.importorskip("torchx_components")


@pytest.fixture(autouse=True)
def legacy_sched(use_dist: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    use_dist("legacy_sched")
    monkeypatch.setenv("LEGACY_PROC_STATE", str(tmp_path / "legacy-state"))


def _wait_for(handle: str, state: str) -> dict[str, object]:
    deadline = time.monotonic() + 30
    while True:
        status = json.loads(run_torchx("status", handle, "--json").stdout)
        if status["state"] == state or time.monotonic() > deadline:
            return status  # type: ignore[no-any-return]
        time.sleep(0.1)


def test_cli_lifecycle(isolated: Path) -> None:
    opts = run_torchx("runopts", "legacy_proc")
    assert opts.returncode == 0, opts.stdout + opts.stderr
    assert "shell" in opts.stdout, opts.stdout + opts.stderr

    dry = run_torchx("run", "--dryrun", "-s", "legacy_proc", "utils.echo", "--msg", "hi")
    assert dry.returncode == 0, dry.stderr
    assert "ProcRequest" in dry.stdout
    assert "'echo', 'hi'" in dry.stdout

    run = run_torchx(
        "run",
        "-s",
        "legacy_proc",
        "-cfg",
        "shell=sh",
        "utils.sh",
        "--",
        "sh",
        "-c",
        "echo from-legacy; touch made-here",
    )
    assert run.returncode == 0, run.stderr
    handle = run.stdout.strip().splitlines()[0]
    assert handle.startswith("legacy_proc://torchx/"), run.stdout
    assert run_torchx("wait", handle).returncode == 0
    assert _wait_for(handle, "SUCCEEDED")["state"] == "SUCCEEDED"
    assert (isolated / "made-here").exists()  # the replica ran in the launcher's directory

    log = run_torchx("log", f"{handle}/sh/0")
    assert "from-legacy" in log.stdout, log.stdout + log.stderr
    described = run_torchx("describe", handle)
    assert described.returncode == 0, described.stderr
    listed = run_torchx("list", "-s", "legacy_proc", "--json")
    assert handle in {a["app_handle"] for a in json.loads(listed.stdout)}, listed.stdout + listed.stderr

    long = run_torchx("run", "-s", "legacy_proc", "utils.sh", "sleep", "60")
    long_handle = long.stdout.strip().splitlines()[0]
    assert _wait_for(long_handle, "RUNNING")["state"] == "RUNNING"
    assert run_torchx("cancel", long_handle).returncode == 0
    assert _wait_for(long_handle, "CANCELLED")["state"] == "CANCELLED"


def test_two_argument_validate_is_called() -> None:
    proc = run_torchx("run", "--dryrun", "-s", "legacy_proc", "utils.echo", "--num_replicas", "5")
    assert proc.returncode != 0
    assert "runs at most 4 replicas per role" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_legacy_named_resource() -> None:
    from torchx.specs import get_named_resources

    res = get_named_resources("gpu_x2")
    assert (res.cpu, res.gpu, res.memMB) == (16, 2, 122_000)


def test_runner_lifecycle(isolated: Path) -> None:
    from torchx import specs
    from torchx.runner import get_runner
    from torchx.schedulers import get_scheduler_factories

    assert "legacy_proc" in get_scheduler_factories()
    assert "local_cwd" in get_scheduler_factories()  # a legacy scheduler adds, it hides nothing

    app = specs.AppDef(
        name="greet",
        roles=[
            specs.Role(
                name="worker",
                image=".",
                entrypoint="sh",
                args=["-c", "echo replica $REPLICA of ${app_id}"],
                env={"REPLICA": specs.macros.replica_id},
                num_replicas=2,
                resource=specs.resource(h="gpu_x2"),
            )
        ],
    )
    with get_runner() as runner:
        assert "shell" in str(runner.scheduler_run_opts("legacy_proc"))
        info = runner.dryrun(app, "legacy_proc", cfg={"shell": "sh"})
        assert len(info.request.replicas) == 2
        handle = runner.schedule(info)
        status = runner.wait(handle, wait_interval=0.1)
        assert status is not None
        assert status.state == specs.AppState.SUCCEEDED
        lines = "".join(runner.log_lines(handle, "worker", k=1))
        app_id = handle.rsplit("/", 1)[1]
        assert f"replica 1 of {app_id}" in lines
        assert handle in {a.app_handle for a in runner.list("legacy_proc")}
        assert runner.describe(handle) is not None
        assert runner.status(handle).roles[0].replicas[1].state == specs.AppState.SUCCEEDED  # type: ignore[union-attr]

        sleeper = specs.AppDef(
            name="sleeper",
            roles=[specs.Role(name="s", image=".", entrypoint="sleep", args=["60"], resource=specs.resource(cpu=1))],
        )
        handle2 = runner.run(sleeper, "legacy_proc")
        runner.cancel(handle2)
        final = runner.wait(handle2, wait_interval=0.1)
        assert final is not None
        assert final.state == specs.AppState.CANCELLED
