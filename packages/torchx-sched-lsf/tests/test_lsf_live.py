"""Against the live cluster (marker ``lsf``; OpenLava in CI): submit, state, logs, retries,
cancel, list, delete, workspace."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from typing import Any

import pytest
from torchx import specs
from torchx.runner import Runner
from torchx.schedulers.streams import Stream
from torchx.testing import hostile_value, macro_probe, macro_probe_output

pytestmark = pytest.mark.lsf


def role(name: str, entrypoint: str, args: list[str], replicas: int = 1, **kw: Any) -> specs.Role:
    return specs.Role(
        name,
        image="/tmp",
        entrypoint=entrypoint,
        args=args,
        num_replicas=replicas,
        resource=specs.Resource(cpu=1, gpu=0, memMB=64),
        **kw,
    )


def run(runner: Runner, job_dir: str, *roles: specs.Role, name: str = "app", **cfg: Any) -> str:
    return runner.run(specs.AppDef(name, list(roles)), "lsf", {"job_dir": job_dir, **cfg})


def wait(runner: Runner, handle: str, timeout: float = 90) -> specs.AppStatus:
    status = runner.wait(handle, wait_interval=0.2, timeout=timeout)
    assert status is not None and status.is_terminal(), f"{handle} did not end in {timeout}s: {status}"
    return status


def wait_running(runner: Runner, handle: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while (st := runner.status(handle)) is not None and st.state != specs.AppState.RUNNING:
        assert time.monotonic() < deadline, st
        time.sleep(0.2)


def log(runner: Runner, handle: str, role_name: str, k: int = 0, stream: Stream | None = None) -> str:
    return "".join(runner.log_lines(handle, role_name, k, streams=stream))


def test_lifecycle_echo_sleep_cancel_list(
    runner: Runner, lsf_cluster: dict[str, str], job_dir: str, hostile: list[str]
) -> None:
    msg = " ".join(hostile)
    echo = run(runner, job_dir, role("echo", "echo", [msg]), name="echo")
    sleeper = run(runner, job_dir, role("sleeper", "sleep", ["300"]), name="sleeper")
    status = wait(runner, echo)
    assert status.state == specs.AppState.SUCCEEDED, status
    assert log(runner, echo, "echo") == msg + "\n"  # everything it printed, by default
    assert log(runner, echo, "echo", stream=Stream.STDOUT) == msg + "\n"
    assert log(runner, echo, "echo", stream=Stream.STDERR) == ""
    assert not os.path.exists("/tmp/torchx-pwned-lsf")
    wait_running(runner, sleeper)
    runner.cancel(sleeper)
    status = wait(runner, sleeper, timeout=30)
    assert status.state == specs.AppState.CANCELLED, status
    listed = {a.app_handle: a for a in runner.list("lsf")}
    assert (listed[echo].state, listed[echo].name) == (specs.AppState.SUCCEEDED, "echo")
    assert (listed[sleeper].state, listed[sleeper].name) == (specs.AppState.CANCELLED, "sleeper")
    for handle in (echo, sleeper):  # bjobs -UF's Submitted, Started and Done/Exited lines
        times = (listed[handle].submitted, listed[handle].started, listed[handle].ended)
        assert None not in times and times == tuple(sorted(times)), times  # type: ignore[type-var]


def test_failing_replica_fails_the_app_and_stops_the_others(
    runner: Runner, lsf_cluster: dict[str, str], job_dir: str
) -> None:
    handle = run(runner, job_dir, role("ok", "sleep", ["60"]), role("bad", "bash", ["-c", "sleep 1; exit 3"]))
    status = wait(runner, handle)
    assert status.state == specs.AppState.FAILED and "bad/0 exit code 3" in status.msg, status
    states = {r.role: r for rs in status.roles for r in rs.replicas}
    assert states["bad"].state == specs.AppState.FAILED
    assert json.loads(states["bad"].structured_error_msg) == {"exit_code": 3}
    assert states["ok"].state == specs.AppState.CANCELLED  # stopped because "bad" failed


def test_stdout_and_stderr_apart_and_together(runner: Runner, lsf_cluster: dict[str, str], job_dir: str) -> None:
    script = "echo out1; sleep 0.2; echo err1 >&2; sleep 0.2; echo out2; exit 3"
    handle = run(runner, job_dir, role("s", "bash", ["-c", script]))
    status = wait(runner, handle)
    assert status.state == specs.AppState.FAILED and "exit code 3" in status.msg, status
    assert log(runner, handle, "s") == "out1\nerr1\nout2\n"
    assert log(runner, handle, "s", stream=Stream.STDOUT) == "out1\nout2\n"
    assert log(runner, handle, "s", stream=Stream.STDERR) == "err1\n"


def test_two_replicas_see_rank0_host_replica_id_and_app_id(
    runner: Runner, lsf_cluster: dict[str, str], job_dir: str, hostile: list[str]
) -> None:
    code = "import json, os, sys; print(json.dumps([os.environ['TORCHX_RANK0_HOST'], sys.argv[1:], os.environ['V']]))"
    env = {"V": "a,b=c " + " ".join(hostile)}
    handle = run(
        runner,
        job_dir,
        role("p", sys.executable, ["-c", code, "${replica_id}", "${app_id}", *hostile], replicas=2, env=env),
    )
    status = wait(runner, handle)
    assert status.state == specs.AppState.SUCCEEDED, status
    app_id = handle.rsplit("/", 1)[1]
    host = socket.gethostname().split(".")[0]
    replicas = [r for rs in status.roles for r in rs.replicas]
    assert [(r.id, r.hostname) for r in replicas] == [(0, host), (1, host)]
    for k in range(2):
        assert json.loads(log(runner, handle, "p", k)) == [host, [str(k), app_id, *hostile], env["V"]]


@pytest.mark.slow
def test_max_retries_recovers_a_failed_first_attempt(runner: Runner, lsf_cluster: dict[str, str], job_dir: str) -> None:
    marker = os.path.join(job_dir, "attempted")
    script = f'echo "attempt"; test -e {marker} || {{ touch {marker}; exit 5; }}'
    handle = run(runner, job_dir, role("w", "bash", ["-c", script], max_retries=2))
    status = wait(runner, handle)
    assert (status.state, status.num_restarts) == (specs.AppState.SUCCEEDED, 1), status
    assert log(runner, handle, "w") == "attempt\nattempt\n"  # both attempts


def test_retries_run_out(runner: Runner, lsf_cluster: dict[str, str], job_dir: str) -> None:
    handle = run(runner, job_dir, role("w", "bash", ["-c", "echo try; exit 4"], max_retries=1))
    status = wait(runner, handle)
    assert (status.state, status.num_restarts) == (specs.AppState.FAILED, 1), status
    assert log(runner, handle, "w") == "try\ntry\n"


def test_log_tail_follows_a_running_job(runner: Runner, lsf_cluster: dict[str, str], job_dir: str) -> None:
    handle = run(runner, job_dir, role("t", "bash", ["-c", "for i in 1 2 3 4; do echo line $i; sleep 0.7; done"]))
    seen: list[tuple[float, str]] = []
    ended: list[float] = []

    def watch() -> None:
        runner.wait(handle, wait_interval=0.2, timeout=60)
        ended.append(time.monotonic())

    watcher = threading.Thread(target=watch)
    watcher.start()
    for line in runner.log_lines(handle, "t", 0, regex="line [0-9]", should_tail=True):
        seen.append((time.monotonic(), line))
    watcher.join()
    assert [line for _, line in seen] == [f"line {i}\n" for i in range(1, 5)]
    assert seen[0][0] < ended[0] - 1.0, "the first line should arrive while the job still runs"


def test_job_dir_workspace_and_delete(runner: Runner, lsf_cluster: dict[str, str], job_dir: str, tmp_path: Any) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "main.sh").write_text('echo "from $(pwd) img=$1"\n')
    job = os.path.join(job_dir, "run")
    info = runner.dryrun(
        specs.AppDef("ws", [role("ws", "bash", ["main.sh", "${img_root}"])]), "lsf", {"job_dir": job}, workspace=str(ws)
    )
    handle = runner.schedule(info)
    assert wait(runner, handle).state == specs.AppState.SUCCEEDED
    assert log(runner, handle, "ws") == f"from {job} img={job}\n"
    app_id = handle.rsplit("/", 1)[1]
    assert any(f.startswith(f"lsf-{app_id}-ws-0.") for f in os.listdir(job))
    runner.delete(handle)
    assert not [f for f in os.listdir(job) if f.startswith(f"lsf-{app_id}")]
    assert os.path.exists(os.path.join(job, "main.sh"))


def test_unknown_app(runner: Runner, lsf_cluster: dict[str, str]) -> None:
    assert runner.status("lsf://lsftest/999999999") is None
    assert runner.status("lsf://lsftest/not-a-job") is None


def test_cli_log_shows_all_output_by_default(lsf_cluster: dict[str, str], job_dir: str, tmp_path: Any) -> None:
    """`torchx log` without --streams prints what the replica wrote to stdout and to stderr."""
    pytest.importorskip("torchx_components")
    torchx = [sys.executable, "-m", "torchx"]
    script = "echo to-stdout; echo to-stderr >&2"
    # `torchx run` ships the current directory as the job's workspace: run it from an empty
    # one (from the repository it would copy every nox virtualenv into the job dir)
    run_cli = subprocess.run(
        [*torchx, "run", "-s", "lsf", "-cfg", f"job_dir={job_dir}", "utils.sh", "bash", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert run_cli.returncode == 0, run_cli.stderr
    handle = run_cli.stdout.strip().splitlines()[-1]
    waited = subprocess.run([*torchx, "wait", handle, "--timeout", "90"], capture_output=True, text=True, timeout=120)
    assert waited.returncode == 0, waited.stdout + waited.stderr
    logged = subprocess.run([*torchx, "log", handle], capture_output=True, text=True, timeout=60)
    assert logged.returncode == 0, logged.stderr
    # both streams, each whole (their relative order is the order the job's two pipes were read in)
    assert sorted(logged.stdout.splitlines()) == ["sh/0 to-stderr", "sh/0 to-stdout"]
    only_err = subprocess.run(
        [*torchx, "log", "--streams", "stderr", handle], capture_output=True, text=True, timeout=60
    )
    assert only_err.stdout.splitlines() == ["sh/0 to-stderr"]


def test_macro_values_are_data_on_the_cluster(runner: Runner, lsf_cluster: dict[str, str], job_dir: str) -> None:
    marker = os.path.join(job_dir, "pwned")
    image = os.path.join(job_dir, hostile_value(marker))  # the img_root macro
    probe = macro_probe(image, marker, num_replicas=2, resource=specs.Resource(cpu=1, gpu=0, memMB=64))
    handle = run(runner, job_dir, probe, name="macros")
    status = wait(runner, handle)
    assert status.state == specs.AppState.SUCCEEDED, status
    app_id = handle.rsplit("/", 1)[1]
    for k in range(2):
        assert log(runner, handle, "probe", k, stream=Stream.STDOUT) == macro_probe_output(image, app_id, k)
    assert not os.path.exists(marker)


def test_job_array_one_bsub_per_element_state_logs_and_delete(
    runner: Runner, lsf_cluster: dict[str, str], job_dir: str, hostile: list[str]
) -> None:
    from torchx.schedulers import get_scheduler_factories

    code = "import json, os, sys; print(json.dumps([sys.argv[1:], os.environ['ID']])); sys.exit(int(sys.argv[1]))"
    app_id_env = {"ID": specs.macros.app_id}
    apps = [
        specs.AppDef(f"arr-{i}", [role("el", sys.executable, ["-c", code, exit_code, *hostile], env=app_id_env)])
        for i, exit_code in enumerate(["0", "3", "0"])
    ]
    sched = get_scheduler_factories()["lsf"]("lsftest")
    array_id = sched.schedule(sched.submit_array_dryrun(apps, {"job_dir": job_dir}, max_parallel=2))
    handles = [f"lsf://lsftest/{sched.array_element_id(array_id, i)}" for i in range(3)]
    assert handles[0].endswith(f"/{array_id}[1]")
    states = [wait(runner, h).state for h in handles]
    assert states == [specs.AppState.SUCCEEDED, specs.AppState.FAILED, specs.AppState.SUCCEEDED]
    for i, h in enumerate(handles):
        argv, job_id = json.loads(log(runner, h, "el", stream=Stream.STDOUT))
        assert argv == [["0", "3", "0"][i], *hostile] and job_id == h.rsplit("/", 1)[1]  # the element's own id
    whole = runner.status(f"lsf://lsftest/{array_id}")
    assert whole is not None and whole.state == specs.AppState.FAILED
    assert [r.state for r in whole.roles[0].replicas] == states
    assert len(os.listdir(job_dir)) > 0
    runner.delete(f"lsf://lsftest/{array_id}")
    assert os.listdir(job_dir) == []  # every element's files
