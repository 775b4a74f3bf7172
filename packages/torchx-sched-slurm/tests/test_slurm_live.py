"""Against the live cluster (marker ``slurm``): submit, state, logs, retries, cancel, list, workspace."""

from __future__ import annotations

import json
import os
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

pytestmark = pytest.mark.slurm

HOSTILE = [
    ":",
    "$(touch /tmp/torchx-pwned)",
    "`id`",
    "a; echo injected",
    'it\'s "quoted"',
    "two\nlines",
    "ünïcödé €𝄞",
    "back\\slash",
    "--",
    "%j",
]


def app(name: str, *roles: specs.Role) -> specs.AppDef:
    return specs.AppDef(name, list(roles))


def role(name: str, entrypoint: str, args: list[str], replicas: int = 1, **kw: Any) -> specs.Role:
    return specs.Role(
        name,
        image="/tmp",
        entrypoint=entrypoint,
        args=args,
        num_replicas=replicas,
        resource=specs.Resource(cpu=1, gpu=0, memMB=256),
        **kw,
    )


def run(runner: Runner, cluster: Any, job_dir: str, appdef: specs.AppDef, **cfg: Any) -> str:
    return runner.run(appdef, "slurm", {"partition": cluster.partition, "job_dir": job_dir, **cfg})


def wait(runner: Runner, handle: str, timeout: float = 90) -> specs.AppStatus:
    status = runner.wait(handle, wait_interval=0.2, timeout=timeout)
    assert status is not None, f"{handle} did not end in {timeout}s: {status}"
    assert status.is_terminal(), f"{handle} did not end in {timeout}s: {status}"
    return status


def log(runner: Runner, handle: str, role_name: str, k: int = 0, stream: Stream = Stream.STDOUT) -> str:
    return "".join(runner.log_lines(handle, role_name, k, streams=stream))


def test_echo_with_hostile_args(runner: Runner, slurm_cluster: Any, job_dir: str) -> None:
    msg = " ".join(HOSTILE)
    handle = run(runner, slurm_cluster, job_dir, app("echo", role("echo", "echo", [msg])))
    status = wait(runner, handle)
    assert status.state == specs.AppState.SUCCEEDED, status
    assert log(runner, handle, "echo") == msg + "\n"
    assert not os.path.exists("/tmp/torchx-pwned")


def test_hostile_argv_env_and_comment_arrive_byte_identical(runner: Runner, slurm_cluster: Any, job_dir: str) -> None:
    code = "import json, os, sys; print(json.dumps([sys.argv[1:], os.environ['HOSTILE']]))"
    env = {"HOSTILE": "a,b=c " + " ".join(HOSTILE)}
    comment = 'a "quoted" #comment \\ with hetjob in it'
    handle = run(
        runner,
        slurm_cluster,
        job_dir,
        app("argv", role("p", sys.executable, ["-c", code, *HOSTILE], replicas=2, env=env)),
        comment=comment,
    )
    assert wait(runner, handle).state == specs.AppState.SUCCEEDED
    for k in range(2):
        assert json.loads(log(runner, handle, "p", k)) == [HOSTILE, env["HOSTILE"]]
    app_id = handle.rsplit("/", 1)[1]
    shown = subprocess.run(
        ["squeue", "-h", "-t", "all", "-j", app_id, "-O", "Comment:\x1f"], capture_output=True, text=True
    )
    assert shown.stdout.split("\x1f")[0] == comment


def test_two_roles_two_replicas_see_rank0_host_and_replica_id(runner: Runner, slurm_cluster: Any, job_dir: str) -> None:
    if slurm_cluster.nodes < 4:
        pytest.skip("needs 4 nodes (one per het-job component)")
    script = 'echo "$(hostname) $TORCHX_RANK0_HOST ${REPLICA} ${APP}"'
    roles = [
        role(name, "bash", ["-c", script], replicas=2, env={"REPLICA": "${replica_id}", "APP": "${app_id}"})
        for name in ("trainer", "ps")
    ]
    handle = run(runner, slurm_cluster, job_dir, app("mr", *roles))
    status = wait(runner, handle)
    assert status.state == specs.AppState.SUCCEEDED, status
    hosts = {(r.role, r.id): r.hostname for rs in status.roles for r in rs.replicas}
    assert len(set(hosts.values())) == 4
    app_id = handle.rsplit("/", 1)[1]
    for (name, k), host in hosts.items():
        assert log(runner, handle, name, k).split() == [host, hosts[("trainer", 0)], str(k), app_id]


def test_failing_replica_fails_the_app_with_its_exit_code(runner: Runner, slurm_cluster: Any, job_dir: str) -> None:
    roles = [role("ok", "sleep", ["60"]), role("bad", "bash", ["-c", "sleep 1; echo oops >&2; exit 3"])]
    handle = run(runner, slurm_cluster, job_dir, app("fail", *roles))
    status = wait(runner, handle)
    assert status.state == specs.AppState.FAILED
    assert "bad/0 FAILED (exit code 3)" in status.msg
    states = {r.role: r for rs in status.roles for r in rs.replicas}
    assert states["bad"].state == specs.AppState.FAILED
    assert json.loads(states["bad"].structured_error_msg)["exit_code"] == 3
    assert states["ok"].state == specs.AppState.CANCELLED  # stopped because "bad" failed
    assert log(runner, handle, "bad", stream=Stream.STDERR) == "oops\n"


def test_log_shows_all_output_by_default(runner: Runner, slurm_cluster: Any, job_dir: str) -> None:
    script = "echo out1; sleep 0.3; echo err1 >&2; sleep 0.3; echo out2"
    handle = run(runner, slurm_cluster, job_dir, app("both", role("s", "bash", ["-c", script])))
    assert wait(runner, handle).state == specs.AppState.SUCCEEDED
    assert "".join(runner.log_lines(handle, "s", 0)) == "out1\nerr1\nout2\n"  # no streams: everything, in order
    assert log(runner, handle, "s", stream=Stream.COMBINED) == "out1\nerr1\nout2\n"
    assert log(runner, handle, "s", stream=Stream.STDOUT) == "out1\nout2\n"
    assert log(runner, handle, "s", stream=Stream.STDERR) == "err1\n"


@pytest.mark.slow
def test_max_retries_recovers_a_failed_first_attempt(runner: Runner, slurm_cluster: Any, job_dir: str) -> None:
    marker = os.path.join(job_dir, "attempted")
    script = f'echo "attempt $SLURM_RESTART_COUNT"; test -e {marker} || {{ touch {marker}; exit 5; }}'
    handle = run(runner, slurm_cluster, job_dir, app("retry", role("w", "bash", ["-c", script], max_retries=1)))
    status = wait(runner, handle, timeout=150)
    assert (status.state, status.num_restarts) == (specs.AppState.SUCCEEDED, 1), status
    assert log(runner, handle, "w") == "attempt \nattempt 1\n"  # both attempts, appended


def test_cancel_and_list(runner: Runner, slurm_cluster: Any, job_dir: str) -> None:
    handle = run(runner, slurm_cluster, job_dir, app("sleepy", role("sleepy", "sleep", ["300"], replicas=2)))
    deadline = time.monotonic() + 30
    while (st := runner.status(handle)) is not None and st.state != specs.AppState.RUNNING:
        assert time.monotonic() < deadline, st
        time.sleep(0.2)
    listed = {a.app_handle: a for a in runner.list("slurm")}
    assert listed[handle].state == specs.AppState.RUNNING
    assert listed[handle].name == "sleepy"
    runner.cancel(handle)
    status = wait(runner, handle, timeout=30)
    assert status.state == specs.AppState.CANCELLED
    assert {r.state for rs in status.roles for r in rs.replicas} == {specs.AppState.CANCELLED}
    assert {a.app_handle: a.state for a in runner.list("slurm")}[handle] == specs.AppState.CANCELLED


def test_list_gives_times_once_a_job_finished(runner: Runner, slurm_cluster: Any, job_dir: str) -> None:
    before = time.time()
    handle = run(runner, slurm_cluster, job_dir, app("timed", role("timed", "sleep", ["1"])))
    assert wait(runner, handle).state == specs.AppState.SUCCEEDED
    listed = {a.app_handle: a for a in runner.list("slurm")}[handle]
    assert None not in (listed.submitted, listed.started, listed.ended), listed
    assert before - 2 <= listed.submitted <= listed.started <= listed.ended <= time.time() + 2  # type: ignore[operator]


def test_log_tail_follows_a_running_job(runner: Runner, slurm_cluster: Any, job_dir: str) -> None:
    script = "for i in 1 2 3 4; do echo line $i; sleep 0.7; done"
    handle = run(runner, slurm_cluster, job_dir, app("tail", role("t", "bash", ["-c", script])))
    seen: list[tuple[float, str]] = []
    ended: list[float] = []

    def watch() -> None:
        runner.wait(handle, wait_interval=0.2, timeout=60)
        ended.append(time.monotonic())

    watcher = threading.Thread(target=watch)
    watcher.start()
    for line in runner.log_lines(handle, "t", 0, regex="line [0-9]", should_tail=True, streams=Stream.STDOUT):
        seen.append((time.monotonic(), line))
    watcher.join()
    assert [line for _, line in seen] == [f"line {i}\n" for i in range(1, 5)]
    assert seen[0][0] < ended[0] - 1.0, "the first line should arrive while the job still runs"


def test_job_dir_workspace(runner: Runner, slurm_cluster: Any, job_dir: str, tmp_path: Any) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "main.sh").write_text('echo "from $(pwd) img=$1"\n')
    job = os.path.join(job_dir, "run")
    info = runner.dryrun(
        app("ws", role("ws", "bash", ["main.sh", "${img_root}"])),
        "slurm",
        {"partition": slurm_cluster.partition, "job_dir": job},
        workspace=str(ws),
    )
    handle = runner.schedule(info)
    assert wait(runner, handle).state == specs.AppState.SUCCEEDED
    assert log(runner, handle, "ws") == f"from {job} img={job}\n"
    assert os.path.exists(os.path.join(job, "main.sh"))


def test_unknown_app(runner: Runner, slurm_cluster: Any) -> None:
    assert runner.status("slurm://slurmtest/999999999") is None
    assert runner.status("slurm://slurmtest/not-a-job") is None


def test_macro_values_are_data_on_the_cluster(runner: Runner, slurm_cluster: Any, job_dir: str) -> None:
    marker = os.path.join(job_dir, "pwned")
    image = os.path.join(job_dir, hostile_value(marker))  # the img_root macro
    probe = macro_probe(image, marker, num_replicas=2, resource=specs.Resource(cpu=1, gpu=0, memMB=256))
    handle = run(runner, slurm_cluster, job_dir, app("macros", probe))
    status = wait(runner, handle)
    assert status.state == specs.AppState.SUCCEEDED, status
    app_id = handle.rsplit("/", 1)[1]
    for k in range(2):
        assert log(runner, handle, "probe", k) == macro_probe_output(image, app_id, k)
    assert not os.path.exists(marker)
