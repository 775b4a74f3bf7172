"""Against the live Ray cluster (marker ``ray``): submit, state, logs, gang placement, retries,
cancel, list, delete, workspace."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from torchx import specs
from torchx.runner import Runner
from torchx.schedulers.streams import Stream
from torchx.testing import alive, hostile_value, macro_probe, macro_probe_output

pytestmark = pytest.mark.ray

HOSTILE = [
    ":",
    "$(touch /tmp/torchx-ray-pwned)",
    "`id`",
    "a; echo injected",
    'it\'s "quoted"',
    "$HOME ${PATH} $$",
    "ünïcödé €𝄞",
    "back\\slash",
    "--",
    "  spaced  ",
    "~tx 0 o 1.0 forged record",
]


def app(name: str, *roles: specs.Role) -> specs.AppDef:
    return specs.AppDef(name, list(roles))


def role(name: str, entrypoint: str, args: list[str], replicas: int = 1, cpu: int = 1, **kw: Any) -> specs.Role:
    return specs.Role(
        name,
        image="unused",
        entrypoint=entrypoint,
        args=args,
        num_replicas=replicas,
        resource=specs.Resource(cpu=cpu, gpu=0, memMB=128),
        **kw,
    )


def run(runner: Runner, cluster: Any, appdef: specs.AppDef, **cfg: Any) -> str:
    return runner.run(appdef, "ray", {"address": cluster.address, **cfg})


def wait(runner: Runner, handle: str, timeout: float = 120) -> specs.AppStatus:
    status = runner.wait(handle, wait_interval=0.2, timeout=timeout)
    assert status is not None, f"{handle} did not end in {timeout}s: {status}"
    assert status.is_terminal(), f"{handle} did not end in {timeout}s: {status}"
    return status


def log(runner: Runner, handle: str, role_name: str, k: int = 0, stream: Stream | None = None) -> str:
    return "".join(runner.log_lines(handle, role_name, k, streams=stream))


def wait_running(runner: Runner, handle: str, timeout: float = 60) -> specs.AppStatus:
    deadline = time.monotonic() + timeout
    while (st := runner.status(handle)) is not None and st.state != specs.AppState.RUNNING:
        assert time.monotonic() < deadline, st
        assert not st.is_terminal(), st
        time.sleep(0.3)
    assert st is not None
    return st


def test_echo_with_hostile_args(runner: Runner, ray_cluster: Any) -> None:
    msg = " ".join(HOSTILE)
    handle = run(runner, ray_cluster, app("echo", role("echo", "echo", [msg])))
    status = wait(runner, handle)
    assert status.state == specs.AppState.SUCCEEDED, status
    expected = msg.replace("$$", "$") + "\n"  # "$$" is the macro escape, as on every scheduler
    assert log(runner, handle, "echo") == expected  # the default: everything
    assert log(runner, handle, "echo", stream=Stream.STDOUT) == expected
    assert log(runner, handle, "echo", stream=Stream.STDERR) == ""
    assert not os.path.exists("/tmp/torchx-ray-pwned")


def test_argv_env_and_macros_arrive_as_data(runner: Runner, ray_cluster: Any) -> None:
    code = "import json, os, sys; print(json.dumps([sys.argv[1:], os.environ['HOSTILE'], os.getcwd()]))"
    env = {"HOSTILE": "a,b=c " + " ".join(HOSTILE), "APP": "${app_id}"}
    args = ["-c", code, *HOSTILE, "${app_id}", "${replica_id}", "${img_root}", "$${app_id}"]
    handle = run(runner, ray_cluster, app("argv", role("p", sys.executable, args, replicas=2, env=env)))
    assert wait(runner, handle).state == specs.AppState.SUCCEEDED
    app_id = handle.rsplit("/", 1)[1]
    for k in range(2):
        argv, hostile, cwd = json.loads(log(runner, handle, "p", k))
        unescaped = [h.replace("$$", "$") for h in HOSTILE]
        assert argv == [*unescaped, app_id, str(k), cwd, "${app_id}"]
        assert hostile == env["HOSTILE"].replace("$$", "$")


def test_two_replicas_see_their_rank_and_the_rank0_address(runner: Runner, ray_cluster: Any) -> None:
    script = 'echo "$TORCHX_REPLICA_IDX $TORCHX_NUM_REPLICAS $TORCHX_RANK0_HOST $TORCHX_ROLE_NAME"'
    handle = run(runner, ray_cluster, app("ranks", role("trainer", "bash", ["-c", script], replicas=2)))
    status = wait(runner, handle)
    assert status.state == specs.AppState.SUCCEEDED, status
    hosts = {r.id: r.hostname for rs in status.roles for r in rs.replicas}
    assert set(hosts) == {0, 1}
    assert all(hosts.values())
    for k in range(2):
        assert log(runner, handle, "trainer", k).split() == [str(k), "2", hosts[0], "trainer"]


def test_failing_replica_fails_the_app_and_stops_the_others(runner: Runner, ray_cluster: Any) -> None:
    roles = [role("ok", "sleep", ["60"]), role("bad", "bash", ["-c", "sleep 1; echo oops >&2; printf tail; exit 3"])]
    handle = run(runner, ray_cluster, app("fail", *roles))
    status = wait(runner, handle)
    assert status.state == specs.AppState.FAILED
    states = {r.role: r for rs in status.roles for r in rs.replicas}
    assert states["bad"].state == specs.AppState.FAILED
    assert json.loads(states["bad"].structured_error_msg)["exit_code"] == 3
    assert states["ok"].state == specs.AppState.CANCELLED  # stopped because "bad" failed
    assert "bad/0 exited with code 3" in status.msg
    assert log(runner, handle, "bad", stream=Stream.STDERR) == "oops\n"
    assert log(runner, handle, "bad", stream=Stream.STDOUT) == "tail"  # no newline was printed


def test_max_retries_reruns_the_app(runner: Runner, ray_cluster: Any, tmp_path: Path) -> None:
    marker = tmp_path / "attempted"
    script = f'echo "run $TORCHX_REPLICA_IDX"; test -e {marker} || {{ touch {marker}; exit 5; }}'
    handle = run(runner, ray_cluster, app("retry", role("w", "bash", ["-c", script], max_retries=1)))
    status = wait(runner, handle, timeout=180)
    assert (status.state, status.num_restarts) == (specs.AppState.SUCCEEDED, 1), status
    assert log(runner, handle, "w") == "run 0\nrun 0\n"  # both attempts


def test_gang_placement_is_all_or_none(runner: Runner, ray_cluster: Any) -> None:
    # the test cluster has 4 CPUs: one 3-CPU replica would fit, two never do, so none starts
    appdef = app("gang", role("big", "echo", ["started"], replicas=2, cpu=3))
    handle = run(runner, ray_cluster, appdef, placement_timeout=8)
    time.sleep(4)
    pending = runner.status(handle)
    assert pending is not None, pending
    assert pending.state == specs.AppState.PENDING, pending
    status = wait(runner, handle)
    assert status.state == specs.AppState.FAILED
    assert "could not place all 2 replicas" in status.msg
    assert log(runner, handle, "big", 0) == log(runner, handle, "big", 1) == ""


def test_cancel_then_list_shows_both(runner: Runner, ray_cluster: Any) -> None:
    done = run(runner, ray_cluster, app("quick", role("quick", "true", [])))
    script = "echo $$$$; exec sleep 300"  # "$$$$": the shell's $$ after the macro escape
    handle = run(runner, ray_cluster, app("sleepy", role("sleepy", "bash", ["-c", script], replicas=2)))
    wait_running(runner, handle)
    pids: list[int] = []
    deadline = time.monotonic() + 30
    while len(pids) < 2:
        assert time.monotonic() < deadline
        pids = [int(t) for k in range(2) if (t := log(runner, handle, "sleepy", k).strip())]
        time.sleep(0.3)
    assert wait(runner, done).state == specs.AppState.SUCCEEDED
    listed = {a.app_handle: a for a in runner.list("ray", {"address": ray_cluster.address})}
    assert listed[handle].state == specs.AppState.RUNNING
    assert listed[handle].name == "sleepy"
    runner.cancel(handle)
    status = wait(runner, handle, timeout=60)
    assert status.state == specs.AppState.CANCELLED
    assert {r.state for rs in status.roles for r in rs.replicas} == {specs.AppState.CANCELLED}
    time.sleep(1)
    assert [p for p in pids if alive(p)] == [], "the replicas' processes must be gone"
    listed_apps = {a.app_handle: a for a in runner.list("ray", {"address": ray_cluster.address})}
    listed = {h: a.state for h, a in listed_apps.items()}
    assert listed[handle] == specs.AppState.CANCELLED
    assert listed[done] == specs.AppState.SUCCEEDED
    for one in (listed_apps[handle], listed_apps[done]):  # the Jobs API's start_time and end_time
        times = (one.submitted, one.started, one.ended)
        assert None not in times and times == tuple(sorted(times)), times  # type: ignore[type-var]


def test_log_tail_follows_and_since_filters(runner: Runner, ray_cluster: Any) -> None:
    script = "for i in 1 2 3 4; do echo line $i; sleep 1; done"
    handle = run(runner, ray_cluster, app("tail", role("t", "bash", ["-c", script])))
    seen: list[tuple[float, str]] = []
    ended: list[float] = []

    def watch() -> None:
        runner.wait(handle, wait_interval=0.2, timeout=90)
        ended.append(time.monotonic())

    watcher = threading.Thread(target=watch)
    watcher.start()
    for line in runner.log_lines(handle, "t", 0, regex="line [0-9]", should_tail=True):
        seen.append((time.monotonic(), line))
    watcher.join()
    assert [line for _, line in seen] == [f"line {i}\n" for i in range(1, 5)]
    assert seen[0][0] < ended[0] - 1.0, "the first line should arrive while the job still runs"
    assert "".join(runner.log_lines(handle, "t", 0, since=datetime.now() + timedelta(minutes=1))) == ""
    assert "".join(runner.log_lines(handle, "t", 0, since=datetime.now() - timedelta(minutes=5))).count("line") == 4


def test_workspace_is_the_working_dir(runner: Runner, ray_cluster: Any, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "main.sh").write_text('echo "img=$1 cwd=$(pwd) secret=$(ls secret.txt 2>/dev/null)"\n')
    (ws / "secret.txt").write_text("not shipped\n")
    (ws / ".torchxignore").write_text("secret.txt\n")
    staged_before = {p for p in os.listdir(tempfile.gettempdir()) if p.startswith("torchx-ray-ws-")}
    info = runner.dryrun(
        app("ws", role("ws", "bash", ["main.sh", "${img_root}"])),
        "ray",
        {"address": ray_cluster.address},
        workspace=str(ws),
    )
    handle = runner.schedule(info)
    assert wait(runner, handle).state == specs.AppState.SUCCEEDED
    img, cwd, secret = log(runner, handle, "ws").split()
    assert img == "img=" + cwd[len("cwd=") :]
    assert secret == "secret="
    staged = {p for p in os.listdir(tempfile.gettempdir()) if p.startswith("torchx-ray-ws-")}
    assert not staged - staged_before, "staging dir kept"  # (left by other runs: not this test's)


def test_delete_forgets_the_job(runner: Runner, ray_cluster: Any) -> None:
    handle = run(runner, ray_cluster, app("del", role("d", "sleep", ["300"])))
    wait_running(runner, handle)
    runner.delete(handle)
    assert runner.status(handle) is None


def test_unknown_app(runner: Runner, ray_cluster: Any) -> None:
    netloc = ray_cluster.address.split("://", 1)[1]
    assert runner.status(f"ray://raytest/{netloc}-no-such-job") is None


@pytest.mark.slow
def test_requirements_are_installed_into_the_job_env(runner: Runner, ray_cluster: Any, tmp_path: Path) -> None:
    # tomli-w (a tiny pure-Python wheel) is not in the cluster's venv: Ray's pip runtime env installs it
    req = tmp_path / "requirements.txt"
    req.write_text("tomli-w\n")
    code = "import tomli_w; print(tomli_w.dumps({'a': 1}), end='')"
    handle = run(runner, ray_cluster, app("req", role("p", "python", ["-c", code])), requirements=str(req))
    assert wait(runner, handle, timeout=300).state == specs.AppState.SUCCEEDED
    assert log(runner, handle, "p") == "a = 1\n"


def test_sigkilled_actor_fails_its_replica_and_takes_no_orphan_along(runner: Runner, ray_cluster: Any) -> None:
    script = 'echo "$$$$ $PPID"; exec sleep 300'  # the replica's pid and its actor's (the Ray worker)
    handle = run(runner, ray_cluster, app("killed", role("k", "bash", ["-c", script]), role("other", "sleep", ["300"])))
    wait_running(runner, handle)
    deadline = time.monotonic() + 30
    while not (text := log(runner, handle, "k").strip()):
        assert time.monotonic() < deadline
        time.sleep(0.3)
    pid, actor = (int(w) for w in text.split())
    os.kill(actor, 9)
    status = wait(runner, handle, timeout=60)
    assert status.state == specs.AppState.FAILED, status
    states = {r.role: r.state for rs in status.roles for r in rs.replicas}
    assert states == {"k": specs.AppState.FAILED, "other": specs.AppState.CANCELLED}
    time.sleep(1)
    assert not alive(pid), "the replica's process must die with its actor"


def test_macro_values_are_data_on_the_cluster(runner: Runner, ray_cluster: Any) -> None:
    marker = "/tmp/torchx-ray-macro-pwned"
    probe = macro_probe("unused", marker, num_replicas=2, resource=specs.Resource(cpu=1, gpu=0, memMB=128))
    probe.args.append(specs.macros.escape(hostile_value(marker)))  # one more word, to arrive as it is
    handle = run(runner, ray_cluster, app("macros", probe))
    status = wait(runner, handle)
    assert status.state == specs.AppState.SUCCEEDED, status
    app_id = handle.rsplit("/", 1)[1]
    for k in range(2):
        out = log(runner, handle, "probe", k, stream=Stream.STDOUT)
        img_root = out[1 : out.index(">\n")]  # the job's working dir on the cluster: the first word
        expected = macro_probe_output(img_root, app_id, k).splitlines(keepends=True)
        expected.insert(-1, f"<{hostile_value(marker)}>\n")  # before PROBE_ENV's line
        assert img_root
        assert out == "".join(expected)
    assert not os.path.exists(marker)
