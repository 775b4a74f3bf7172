"""local_docker against the live Docker engine (marker ``docker``; images are local, nothing is pulled:
pulls are in test_docker_pull_live.py)."""

from __future__ import annotations

import json
import textwrap
import time
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from torchx import specs
from torchx.schedulers.causes import EndCause
from torchx.schedulers.streams import Stream
from torchx.specs import AppState
from torchx.testing import eventually, hostile_value, macro_probe, macro_probe_output, run_cli
from torchx_sched_local.docker_scheduler import LABEL_APP_ID

pytestmark = pytest.mark.docker

SERVER = """
import os, socket, sys
if os.environ["TORCHX_REPLICA_IDX"] == "0":
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("", 29500)); s.listen()
    conn, _ = s.accept(); print("rank0 got", conn.recv(100).decode())
else:
    for _ in range(100):
        try:
            c = socket.create_connection((os.environ["TORCHX_RANK0_HOST"], 29500), timeout=1); break
        except OSError:
            import time; time.sleep(0.1)
    c.sendall(b"hello from " + socket.gethostname().encode()); print("sent")
"""


def _role(image: str, *cmd: str, **kwargs: Any) -> specs.Role:
    return specs.Role("w", image=image, entrypoint=cmd[0], args=list(cmd[1:]), **kwargs)


def _run(sched: Any, role: specs.Role, cfg: dict[str, Any] | None = None, name: str = "tdock") -> str:
    return sched.submit(specs.AppDef(name, [role]), cfg or {})


def test_replicas_reach_rank0_by_hostname(docker_sched: Any, docker_live: dict[str, str]) -> None:
    role = _role(docker_live["TORCHX_TEST_DOCKER_IMAGE"], "python3", "-c", SERVER, num_replicas=2)
    app_id = _run(docker_sched, role)
    desc = docker_sched.wait(app_id, timeout=60)
    assert desc is not None, desc
    assert desc.state == AppState.SUCCEEDED, desc
    assert list(docker_sched.log_iter(app_id, "w", 0)) == ["rank0 got hello from w-1\n"]
    assert list(docker_sched.log_iter(app_id, "w", 1)) == ["sent\n"]
    assert [r.hostname for r in desc.roles_statuses[0].replicas] == ["w-0", "w-1"]
    assert desc.roles == [role]


def test_logs_streams_time_filters_regex_and_tail(docker_sched: Any, docker_live: dict[str, str]) -> None:
    script = "echo out; echo err >&2; sleep 1.5; echo late; echo later"
    app_id = _run(docker_sched, _role(docker_live["TORCHX_TEST_BUSYBOX_IMAGE"], "sh", "-c", script))
    start = datetime.now()
    tailed = list(docker_sched.log_iter(app_id, "w", 0, should_tail=True))
    assert sorted(tailed) == sorted(["out\n", "err\n", "late\n", "later\n"])
    assert docker_sched.wait(app_id, timeout=30).state == AppState.SUCCEEDED
    assert list(docker_sched.log_iter(app_id, "w", 0, streams=Stream.STDOUT)) == ["out\n", "late\n", "later\n"]
    assert list(docker_sched.log_iter(app_id, "w", 0, streams=Stream.STDERR)) == ["err\n"]
    assert list(docker_sched.log_iter(app_id, "w", 0, regex="^lat")) == ["late\n", "later\n"]
    middle = start + timedelta(seconds=0.75)
    assert list(docker_sched.log_iter(app_id, "w", 0, since=middle, streams=Stream.STDOUT)) == ["late\n", "later\n"]
    assert list(docker_sched.log_iter(app_id, "w", 0, until=middle, streams=Stream.STDOUT)) == ["out\n"]


def test_failure_message_and_retries_through_the_restart_policy(
    docker_sched: Any, docker_live: dict[str, str], tmp_path: Path
) -> None:
    image = docker_live["TORCHX_TEST_BUSYBOX_IMAGE"]
    script = "echo x >> /state/starts; [ $(wc -l < /state/starts) -ge 2 ]"
    mount = specs.BindMount(str(tmp_path), "/state")
    app_id = _run(
        docker_sched,
        _role(image, "sh", "-c", script, max_retries=2, retry_policy=specs.RetryPolicy.REPLICA, mounts=[mount]),
    )
    desc = docker_sched.wait(app_id, timeout=60)
    assert desc is not None, desc
    assert desc.state == AppState.SUCCEEDED, desc
    assert desc.num_restarts == 1
    assert (tmp_path / "starts").read_text() == "x\nx\n"
    failing = _run(docker_sched, _role(image, "sh", "-c", "exit 7"))
    desc = docker_sched.wait(failing, timeout=60)
    assert desc is not None
    assert desc.state == AppState.FAILED
    assert desc.msg == "w/0 exited with code 7"


def test_a_replica_failing_for_good_stops_the_others(
    docker_sched: Any, docker_live: dict[str, str], client: Any
) -> None:
    script = 'if [ "$TORCHX_REPLICA_IDX" = 1 ]; then sleep 1; exit 1; fi; exec sleep 300'
    role = _role(docker_live["TORCHX_TEST_BUSYBOX_IMAGE"], "sh", "-c", script, num_replicas=2)
    t = time.monotonic()
    app_id = _run(docker_sched, role, {"stop_grace_period": 2})
    desc = docker_sched.wait(app_id, timeout=60)
    assert time.monotonic() - t < 15
    assert client.containers.list(filters={"label": f"{LABEL_APP_ID}={app_id}"}) == []  # running ones only
    for d in (desc, docker_sched.describe(app_id)):  # again, now that w/0 has an exit code too
        assert d is not None, d
        assert d.state == AppState.FAILED, d
        assert d.msg == "w/1 exited with code 1", d
        replicas = d.roles_statuses[0].replicas
        assert [r.state for r in replicas] == [AppState.FAILED] * 2
        assert json.loads(replicas[1].structured_error_msg) == {"message": "w/1 exited with code 1", "exit_code": 1}
    assert (app_id, AppState.FAILED) in [(a.app_id, a.state) for a in docker_sched.list()]


def test_mounts_devices_and_limits(docker_sched: Any, docker_live: dict[str, str], tmp_path: Path, client: Any) -> None:
    volume = client.volumes.create(name=f"torchx-test-{uuid.uuid4().hex[:8]}")
    try:
        (tmp_path / "in.txt").write_text("from host\n")
        role = _role(
            docker_live["TORCHX_TEST_BUSYBOX_IMAGE"],
            "sh",
            "-c",
            "cat /ro/in.txt; echo written > /rw/out.txt; echo v > /vol/f; cat /vol/f; test -c /dev/tnull && echo dev;"
            " touch /ro/x 2>/dev/null || echo read-only",
            mounts=[
                specs.BindMount(str(tmp_path), "/ro", read_only=True),
                specs.BindMount(str(tmp_path), "/rw"),
                specs.VolumeMount(volume.name, "/vol"),
                specs.DeviceMount("/dev/null", "/dev/tnull", "rw"),
            ],
            resource=specs.Resource(cpu=1, gpu=0, memMB=64),
        )
        app_id = _run(docker_sched, role)
        desc = docker_sched.wait(app_id, timeout=60)
        assert desc is not None, desc
        assert desc.state == AppState.SUCCEEDED, desc
        assert list(docker_sched.log_iter(app_id, "w", 0)) == ["from host\n", "v\n", "dev\n", "read-only\n"]
        assert (tmp_path / "out.txt").read_text() == "written\n"
        (container,) = client.containers.list(all=True, filters={"label": f"{LABEL_APP_ID}={app_id}"})
        host = container.attrs["HostConfig"]
        assert host["NanoCpus"] == 1_000_000_000
        assert host["Memory"] == 64 * 1024 * 1024
    finally:
        for app_id in docker_sched.submitted:
            docker_sched.delete(app_id)
        volume.remove(force=True)


def test_cancel_list_and_delete(docker_sched: Any, docker_live: dict[str, str], client: Any) -> None:
    role = _role(docker_live["TORCHX_TEST_BUSYBOX_IMAGE"], "sleep", "300", num_replicas=2)
    app_id = _run(docker_sched, role, {"stop_grace_period": 1})
    eventually(lambda: docker_sched.describe(app_id).state == AppState.RUNNING, timeout=30)
    assert app_id in [a.app_id for a in docker_sched.list() if a.state == AppState.RUNNING]
    t = time.monotonic()
    docker_sched.cancel(app_id)
    assert time.monotonic() - t < 10
    desc = docker_sched.describe(app_id)
    assert desc.state == AppState.CANCELLED
    assert [r.state for r in desc.roles_statuses[0].replicas] == [AppState.CANCELLED] * 2
    assert {c.status for c in client.containers.list(all=True, filters={"label": f"{LABEL_APP_ID}={app_id}"})} == {
        "exited"
    }
    assert (app_id, AppState.CANCELLED) in [(a.app_id, a.state) for a in docker_sched.list()]
    docker_sched.delete(app_id)
    assert docker_sched.describe(app_id) is None
    assert client.containers.list(all=True, filters={"label": f"{LABEL_APP_ID}={app_id}"}) == []
    assert client.networks.list(filters={"label": f"{LABEL_APP_ID}={app_id}"}) == []


def test_workspace_is_built_into_the_image(
    docker_sched: Any, docker_live: dict[str, str], tmp_path: Path, client: Any
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "hello.txt").write_text("from the workspace\n")
    (ws / "secret.txt").write_text("keep out\n")
    (ws / ".torchxignore").write_text("secret.txt\n")
    (ws / "docker-only.txt").write_text("left out by .dockerignore, as TorchX\n")
    (ws / ".dockerignore").write_text("docker-only.txt\n")
    # content of this run only: a layer the engine's build cache (earlier runs, other torchx
    # versions) cannot hand back as an image other images are built on
    (ws / "run.txt").write_text(f"{uuid.uuid4()}\n")
    role = _role(
        docker_live["TORCHX_TEST_BUSYBOX_IMAGE"],
        "sh",
        "-c",
        "cat /hello.txt; test -e /secret.txt || echo no-secret; test -e /docker-only.txt || echo no-docker-only",
    )
    role.workspace = specs.Workspace({str(ws): ""})
    docker_sched.build_workspaces([role], {"quiet": True})
    built = role.image
    assert built.startswith("sha256:")
    try:
        assert client.images.get(built).labels["torchx.pytorch.org/version"]
        app_id = _run(docker_sched, role)
        assert docker_sched.wait(app_id, timeout=60).state == AppState.SUCCEEDED
        assert list(docker_sched.log_iter(app_id, "w", 0)) == [
            "from the workspace\n",
            "no-secret\n",
            "no-docker-only\n",
        ]
        digest = built.split(":", 1)[1]
        pushed = docker_sched.dryrun_push_images(specs.AppDef("x", [role]), {"image_repo": "registry.invalid/t"})
        assert pushed == {built: ("registry.invalid/t", digest)}
        assert role.image == f"registry.invalid/t:{digest}"
        with pytest.raises(ValueError, match="image_repo"):
            docker_sched.dryrun_push_images(specs.AppDef("x", [_role(built, "true")]), {})
    finally:
        for app_id in docker_sched.submitted:
            docker_sched.delete(app_id)
        client.images.remove(built, force=True)


def test_a_workspace_given_as_an_fsspec_url_is_built_into_the_image(
    docker_sched: Any, docker_live: dict[str, str], client: Any
) -> None:
    fsspec = pytest.importorskip("fsspec")
    root = f"memory://torchx-docker-ws-{uuid.uuid4().hex}"
    for rel, text in {
        "bin/hello.sh": "echo from memory",
        "secret.txt": "keep out",
        ".torchxignore": "secret.txt",
    }.items():
        with fsspec.open(f"{root}/{rel}", "w") as f:
            f.write(text)
    role = _role(
        docker_live["TORCHX_TEST_BUSYBOX_IMAGE"], "sh", "-c", "sh bin/hello.sh; test -e secret.txt || echo no-secret"
    )
    try:
        app_id = docker_sched.submit(specs.AppDef("tdockws", [role]), {"quiet": True}, workspace=f"{root}/")
        assert docker_sched.wait(app_id, timeout=60).state == AppState.SUCCEEDED
        assert list(docker_sched.log_iter(app_id, "w", 0)) == ["from memory\n", "no-secret\n"]
    finally:
        images = {c.image.id for app_id in docker_sched.submitted for c in docker_sched._containers(app_id)}
        for app_id in docker_sched.submitted:
            docker_sched.delete(app_id)
        for image in images:
            client.images.remove(image, force=True)
        fsspec.filesystem("memory").rm(root.removeprefix("memory://"), recursive=True)


def test_torchx_run_on_local_docker(docker_live: dict[str, str], isolated: Path) -> None:
    (isolated / "comp.py").write_text(
        textwrap.dedent(f'''
        import torchx.specs as specs
        def echo(msg: str) -> specs.AppDef:
            """Echoes."""
            return specs.AppDef("tdockcli", [specs.Role("echo", image="{docker_live["TORCHX_TEST_BUSYBOX_IMAGE"]}", entrypoint="echo", args=[msg])])
    ''')
    )
    proc = run_cli("run", "-s", "local_docker", "--workspace", "", "comp.py:echo", "--msg", "hi docker", timeout=120)
    assert proc.returncode == 0, proc.stderr
    handle = proc.stdout.splitlines()[0]
    assert "echo/0 hi docker" in proc.stdout
    assert run_cli("delete", handle).returncode == 0


def test_macro_values_are_data_in_containers(docker_sched: Any, docker_live: dict[str, str]) -> None:
    marker = "/tmp/pwned"
    role = macro_probe(docker_live["TORCHX_TEST_BUSYBOX_IMAGE"], marker, num_replicas=2)
    role.args.append(specs.macros.escape(hostile_value(marker)))  # one more word, to arrive as it is
    app_id = _run(docker_sched, role, name="macros")
    desc = docker_sched.wait(app_id, timeout=60)
    assert desc is not None, desc
    assert desc.state == AppState.SUCCEEDED, desc
    for k in (0, 1):
        out = "".join(docker_sched.log_iter(app_id, "probe", k, streams=Stream.STDOUT))
        expected = macro_probe_output("", app_id, k).splitlines(keepends=True)
        expected.insert(-1, f"<{hostile_value(marker)}>\n")  # before PROBE_ENV's line
        assert out == "".join(expected)


# ---------------------------------------------------------------- why an app ended (end_cause)


def test_end_cause_of_exit_codes_oom_and_kills_from_outside(
    docker_sched: Any, docker_live: dict[str, str], client: Any
) -> None:
    busybox = docker_live["TORCHX_TEST_BUSYBOX_IMAGE"]
    python = docker_live["TORCHX_TEST_DOCKER_IMAGE"]
    exit3 = _run(docker_sched, _role(busybox, "sh", "-c", "exit 3"))
    ok = _run(docker_sched, _role(busybox, "true"))
    oom = _run(
        docker_sched,
        _role(python, "python3", "-c", "x = bytearray(200 * 2**20)", resource=specs.Resource(cpu=1, gpu=0, memMB=32)),
    )
    killed = _run(docker_sched, _role(busybox, "sleep", "300", num_replicas=2), {"stop_grace_period": 1})
    eventually(lambda: docker_sched.describe(killed).state == AppState.RUNNING, timeout=30)
    assert docker_sched.end_cause(killed) is None  # running
    victim = client.containers.list(filters={"label": [f"{LABEL_APP_ID}={killed}", "torchx.pytorch.org/replica-id=1"]})
    victim[0].kill()  # `docker kill` by someone else
    expected = {
        exit3: (EndCause.APP_ERROR, 3),
        ok: (EndCause.APP_ERROR, 0),
        oom: (EndCause.KILLED, 137),
        killed: (EndCause.KILLED, 137),
    }
    for app_id, (cause, code) in expected.items():
        desc = docker_sched.wait(app_id, timeout=60)
        assert desc is not None and desc.state in (AppState.SUCCEEDED, AppState.FAILED), desc
        end = docker_sched.end_cause(app_id)
        assert end is not None
        assert (end.cause, end.exit_code) == (cause, code), end
    assert "OOMKilled" in docker_sched.end_cause(oom).reason
    assert docker_sched.end_cause(killed).reason.startswith("w/1 ")  # the killed one, not the sibling torchx stopped
    assert docker_sched.end_cause("no-such-app") is None


def test_end_cause_of_a_cancel_through_torchx(docker_sched: Any, docker_live: dict[str, str]) -> None:
    app_id = _run(
        docker_sched, _role(docker_live["TORCHX_TEST_BUSYBOX_IMAGE"], "sleep", "300"), {"stop_grace_period": 1}
    )
    eventually(lambda: docker_sched.describe(app_id).state == AppState.RUNNING, timeout=30)
    docker_sched.cancel(app_id)
    end = docker_sched.end_cause(app_id)
    assert end is not None and end.cause == EndCause.CANCELLED
