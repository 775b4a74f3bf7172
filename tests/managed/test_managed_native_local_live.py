"""Managed jobs that recover inside local_cwd's supervisor, or in a local_docker container's
restart loop: no driver of torchx_managed runs.

local_cwd's "cluster" is this host: its per-job supervisor (and the replicas it starts) *is*
the backend, so it cannot live in the client's PID namespace as the remote backends' tests tear
it down. Here "the client goes away" is what a logout does on this host: ``torchx run
--detach`` runs in a session of its own, and when it returns that whole session is SIGKILLed
(the supervisor left it for its own session at start). Then the test asserts that nothing of
the client but the job's supervisor (with its watchdog) and replicas is left (no
``torchx_managed`` driver), moves the client's HOME away, breaks the attempt for real (SIGKILL,
exit codes), and reads the job from "another machine": a client with a fresh HOME on this host
that shares only local_cwd's state directory (``TORCHX_LOCAL_STATE_DIR``), where the backend
keeps its jobs, as a Slurm client shares the cluster's job directory. The replicas run in a
shared directory (the client's working directory), since local_cwd runs them where ``torchx
run`` ran. The local_docker tests (marker ``docker``; below) tear the client down as the
remote backends' tests do. Run by ``nox -s integration-managed``, and the local_cwd ones also by
``nox -s e2e``; they are in the root tests/ tree since they need torchx-sched-local and
torchx-components besides torchx-managed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from torchx.testing import live_backend_env
from torchx.testing.machines import Machine, processes_with_home
from torchx.testing.processes import alive, eventually

#: steps of the counter and seconds per step: attempt 0 runs long enough to be broken mid-run
STEPS, STEP_SECONDS = 40, 0.2


class LocalHost(Machine):
    """A client on this host with its own HOME that shares local_cwd's state directory."""

    def __init__(self, root: Path, name: str, state_dir: Path) -> None:
        super().__init__(root, name)
        self.state_dir = state_dir

    def env(self) -> dict[str, str]:
        env = super().env()
        env["TORCHX_LOCAL_STATE_DIR"] = str(self.state_dir)
        return env


def _submit(client: LocalHost, shared: Path, plan: str, *cfg: str) -> str:
    """``torchx run --detach`` from ``shared``, in a session of its own that is SIGKILLed when
    it returns; asserts that only the job's supervisor, watchdog and replicas are left."""
    opts = ",".join(["targets=local_cwd", *cfg])
    cmd = [
        sys.executable, "-m", "torchx", "run", "--detach", "-s", "managed", "-cfg", opts, "utils.sh",
        sys.executable, str(shared / "counter.py"), str(STEPS), str(STEP_SECONDS), plan,
    ]  # fmt: skip
    proc = subprocess.Popen(
        cmd, env=client.env(), cwd=shared, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    out, err = proc.communicate(timeout=120)
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the client's session is gone: a logout
    except ProcessLookupError:
        pass
    assert proc.returncode == 0, err
    handle = out.strip().splitlines()[-1]
    assert handle.startswith("managed://torchx/local_cwd:"), out
    supervisor = _supervisor_pid(client.state_dir, handle)
    for pid in processes_with_home(client.home):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:  # it ended meanwhile (an attempt that exits at once)
            continue
        lineage = _lineage(pid)
        if not Path(f"/proc/{pid}").exists():
            continue  # it ended while its ancestors were read
        assert b"torchx_managed" not in cmdline, cmdline
        assert supervisor in lineage, f"process {pid} {cmdline!r} of the client is not the job's"
    return handle


def _supervisor_pid(state_dir: Path, handle: str) -> int:
    path = _job_dir(state_dir, handle) / "state.json"
    eventually(lambda: '"pid"' in path.read_text(), 30, 0.05, "the job's supervisor to record its pid")
    pid: int = json.loads(path.read_text())["pid"]
    return pid


def _lineage(pid: int) -> list[int]:
    """``pid`` and its ancestors."""
    chain = []
    while pid > 1:
        chain.append(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return chain


def _away(client: LocalHost) -> None:
    """The client's HOME moves away (the job's processes keep the old path in their environment)."""
    client.home.rename(client.home.with_name(client.home.name + "-gone"))


def _job_dir(state_dir: Path, handle: str) -> Path:
    return state_dir / handle.rsplit(":", 1)[1]


def _count(state_dir: Path, handle: str) -> int:
    path = _job_dir(state_dir, handle) / "checkpoints" / "count"
    return int(path.read_text()) if path.exists() else 0


def _nothing_left(client: LocalHost) -> None:
    eventually(lambda: not processes_with_home(client.home), 15, 0.2, "every process of the job to end")


@pytest.fixture
def hosts(tmp_path: Path) -> tuple[LocalHost, LocalHost, Path]:
    state_dir = tmp_path / "local-state"
    return LocalHost(tmp_path, "laptop", state_dir), LocalHost(tmp_path, "other", state_dir), state_dir


def test_sigkill_recover_code_and_app_error_recover_with_no_driver(
    hosts: tuple[LocalHost, LocalHost, Path], shared: Path
) -> None:
    submitter, other, state_dir = hosts
    # attempt 0 counts (its counter SIGKILLed: KILLED), attempt 1 exits 33 (recover_on_exit_codes,
    # uncounted), attempt 2 exits 1 (APP_ERROR, max_restarts=1), attempt 3 finishes
    handle = _submit(submitter, shared, "0,33,1,0", "max_restarts=1", "max_recoveries=1", "recover_on_exit_codes=33")
    _away(submitter)

    eventually(lambda: _count(state_dir, handle) >= 3, 60, 0.1, "attempt 0 to checkpoint a few steps")
    ckpt = _job_dir(state_dir, handle) / "checkpoints"
    app_pid = int((ckpt / "pid-0").read_text())
    os.kill(app_pid, signal.SIGKILL)
    eventually(lambda: not alive(app_pid), 10, 0.1, "attempt 0's counter to die")

    status = other.ended(handle, 120)
    assert status["state"] == "SUCCEEDED", status
    attempts = status["attempts"]
    assert [(a["attempt"], a["state"], a["cause"], a["exit_code"]) for a in attempts] == [
        (0, "FAILED", "KILLED", 137),  # utils.sh's shell: 128 + SIGKILL
        (1, "FAILED", "APP_ERROR", 33),
        (2, "FAILED", "APP_ERROR", 1),
        (3, "SUCCEEDED", None, 0),
    ], attempts
    assert "uncounted" in attempts[1]["reason"]
    assert all(a["started"] and a["ended"] and a["started"] <= a["ended"] for a in attempts)
    assert [int(ckpt.joinpath(f"pid-{n}").exists()) for n in range(4)] == [1, 1, 1, 1]
    assert _count(state_dir, handle) == STEPS
    steps = (ckpt / "steps").read_text().split("\n")
    counted = [int(line.split()[1]) for line in steps if line]
    assert counted == list(range(1, STEPS + 1)), "a step was lost or counted twice across the attempts"
    assert {line.split()[0] for line in steps if line} == {"0", "3"}
    log = other.torchx("log", handle).stdout
    assert log.index("attempt 0 starts") < log.index("attempt 1 starts") < log.index("attempt 3 resumes")
    _nothing_left(submitter)


def test_max_restarts_used_up_ends_failed(hosts: tuple[LocalHost, LocalHost, Path], shared: Path) -> None:
    submitter, other, _ = hosts
    handle = _submit(submitter, shared, "3,3,3", "max_restarts=1", "restart_backoff=0")
    _away(submitter)
    status = other.ended(handle, 60)
    assert status["state"] == "FAILED", status
    assert [(a["state"], a["cause"], a["exit_code"]) for a in status["attempts"]] == [
        ("FAILED", "APP_ERROR", 3),
        ("FAILED", "APP_ERROR", 3),
    ]
    assert "max_restarts=1 used up" in status["msg"]
    _nothing_left(submitter)


def test_cancel_from_another_machine_stops_it_for_good(hosts: tuple[LocalHost, LocalHost, Path], shared: Path) -> None:
    submitter, other, state_dir = hosts
    handle = _submit(submitter, shared, "0", "max_restarts=3", "max_recoveries=3")
    _away(submitter)
    eventually(lambda: _count(state_dir, handle) >= 1, 60, 0.1, "the attempt to run")
    other.torchx("cancel", handle)
    assert other.status(handle)["state"] == "CANCELLED"
    reached = _count(state_dir, handle)
    time.sleep(3 * STEP_SECONDS + 1.5)
    assert _count(state_dir, handle) == reached < STEPS, "the job kept counting after its cancel"
    status = other.status(handle)
    assert [(a["attempt"], a["state"]) for a in status["attempts"]] == [(0, "CANCELLED")], status
    assert not (_job_dir(state_dir, handle) / "checkpoints" / "pid-1").exists()
    _nothing_left(submitter)


# ---------------------------------------------------------------------------- local_docker
# The containers run on the Docker engine, not in the client: the client here is torn down as
# the remote backends' tests do it (its own PID namespace, killed when ``torchx`` returns), and
# "another machine" is a client with a fresh HOME that reaches the same engine.


@pytest.fixture
def docker_image() -> str:
    env = live_backend_env("TORCHX_TEST_DOCKER", "docker")
    pytest.importorskip("docker", reason="needs the docker SDK (torchx-sched-local[docker])")
    if shutil.which("unshare") is None:
        pytest.fail("unshare (util-linux) is needed to tear the submitting client down")
    return env["TORCHX_TEST_DOCKER_IMAGE"]


def _submit_docker(client: Machine, image: str, shared: Path, plan: str, *cfg: str) -> str:
    opts = ",".join(["targets=local_docker", f"checkpoint_dir={shared / 'ckpt'}", "stop_grace_period=2", *cfg])
    proc = client.torchx(
        "run", "--detach", "-s", "managed", "-cfg", opts, "utils.sh", "--image", image,
        "--mounts", f"type=bind,src={shared},dst={shared}",
        "python3", str(shared / "counter.py"), str(STEPS), str(STEP_SECONDS), plan,
        isolated=True,
    )  # fmt: skip
    handle = proc.stdout.strip().splitlines()[-1]
    assert handle.startswith("managed://torchx/local_docker:"), proc.stdout + proc.stderr
    return handle


def _docker_count(shared: Path) -> int:
    path = shared / "ckpt" / "count"
    return int(path.read_text()) if path.exists() else 0


def _container_of(handle: str) -> Any:
    import docker

    client = docker.from_env()
    (container,) = client.containers.list(
        all=True, filters={"label": f"torchx.pytorch.org/app-id={handle.rsplit(':', 1)[1]}"}
    )
    return container


def _host_pid(container: Any, pid_in_container: int) -> int:
    """This host's pid of the container's process ``pid_in_container``."""
    for row in container.top()["Processes"]:
        host_pid = int(row[container.top()["Titles"].index("PID")])
        status = Path(f"/proc/{host_pid}/status").read_text()
        nspid = next(line.split()[1:] for line in status.splitlines() if line.startswith("NSpid:"))
        if int(nspid[-1]) == pid_in_container:
            return host_pid
    raise AssertionError(f"no process {pid_in_container} in the container")


@pytest.mark.docker
def test_docker_sigkill_recover_code_and_app_error_recover_with_no_client_left(
    tmp_path: Path, docker_image: str, shared: Path
) -> None:
    submitter, other = Machine(tmp_path, "laptop"), Machine(tmp_path, "other")
    handle = _submit_docker(
        submitter, docker_image, shared, "0,33,1,0", "max_restarts=1", "max_recoveries=1", "recover_on_exit_codes=33"
    )
    submitter.gone()

    eventually(lambda: _docker_count(shared) >= 3, 120, 0.1, "attempt 0 to checkpoint a few steps")
    container = _container_of(handle)
    os.kill(_host_pid(container, int((shared / "ckpt" / "pid-0").read_text())), signal.SIGKILL)

    status = other.ended(handle, 120)
    assert status["state"] == "SUCCEEDED", status
    attempts = status["attempts"]
    assert [(a["attempt"], a["state"], a["cause"], a["exit_code"]) for a in attempts] == [
        (0, "FAILED", "KILLED", 137),
        (1, "FAILED", "APP_ERROR", 33),
        (2, "FAILED", "APP_ERROR", 1),
        (3, "SUCCEEDED", None, 0),
    ], attempts
    assert all(a["started"] and a["ended"] and a["started"] <= a["ended"] for a in attempts)
    assert _docker_count(shared) == STEPS
    steps = (shared / "ckpt" / "steps").read_text().split("\n")
    counted = [int(line.split()[1]) for line in steps if line]
    assert counted == list(range(1, STEPS + 1)), "a step was lost or counted twice across the attempts"
    assert {line.split()[0] for line in steps if line} == {"0", "3"}
    log = other.torchx("log", handle).stdout
    assert log.index("attempt 0 starts") < log.index("attempt 1 starts") < log.index("attempt 3 resumes")
    container.reload()
    assert container.attrs["RestartCount"] == 0  # every attempt ran in the one container's loop
    other.torchx("delete", handle)


@pytest.mark.docker
def test_docker_max_restarts_used_up_ends_failed(tmp_path: Path, docker_image: str, shared: Path) -> None:
    client = Machine(tmp_path, "laptop")
    handle = _submit_docker(client, docker_image, shared, "3,3,3", "max_restarts=1", "restart_backoff=0")
    status = client.ended(handle, 120)
    assert status["state"] == "FAILED", status
    assert [(a["state"], a["cause"], a["exit_code"]) for a in status["attempts"]] == [
        ("FAILED", "APP_ERROR", 3),
        ("FAILED", "APP_ERROR", 3),
    ]
    client.torchx("delete", handle)


@pytest.mark.docker
def test_docker_cancel_from_another_machine_stops_it_for_good(tmp_path: Path, docker_image: str, shared: Path) -> None:
    submitter, other = Machine(tmp_path, "laptop"), Machine(tmp_path, "other")
    handle = _submit_docker(submitter, docker_image, shared, "0", "max_restarts=3", "max_recoveries=3")
    submitter.gone()
    eventually(lambda: _docker_count(shared) >= 1, 120, 0.1, "the attempt to run")
    other.torchx("cancel", handle)
    eventually(lambda: other.status(handle)["state"] == "CANCELLED", 60, 0.3, "the job to read CANCELLED")
    reached = _docker_count(shared)
    time.sleep(3 * STEP_SECONDS + 1.5)
    assert _docker_count(shared) == reached < STEPS, "the job kept counting after its cancel"
    status = other.status(handle)
    assert [(a["attempt"], a["state"]) for a in status["attempts"]] == [(0, "CANCELLED")], status
    assert not (shared / "ckpt" / "pid-1").exists()
    assert _container_of(handle).status == "exited"
    other.torchx("delete", handle)


def test_docker_native_refuses_several_replicas_in_one_line(tmp_path: Path) -> None:
    client = Machine(tmp_path, "laptop")
    proc = client.torchx(
        "run", "-s", "managed", "-cfg", "targets=local_docker,controller=native", "utils.echo", "--num_replicas", "2",
        check=False,
    )  # fmt: skip
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines() == [
        "torchx: error: local_docker recovers an app of one replica by itself (a restart loop in its container);"
        " an app of several replicas needs controller=local"
    ], proc.stderr
    assert not proc.stdout.strip() and not list(client.home.rglob("spec.json"))
