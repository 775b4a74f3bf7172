"""local_docker native recovery against the live Docker engine (marker ``docker``): the app runs
under core's restart loop in its container (torchx_sched_local.docker_recovery); real exits, a
real SIGKILL of the app from outside it, a real ``docker stop`` for cancel."""

from __future__ import annotations

import os
import signal
from typing import Any

import pytest
from torchx import specs
from torchx.schedulers.capabilities import UnsupportedFeatureError
from torchx.schedulers.recovery import RecoveryPolicy
from torchx.specs import AppState
from torchx.testing import eventually, hostile_value
from torchx_sched_local.docker_scheduler import LABEL_APP_ID

pytestmark = pytest.mark.docker


def _app(image: str, script: str, *args: str, replicas: int = 1) -> specs.AppDef:
    role = specs.Role("w", image=image, entrypoint="bash", args=["-c", script, "app", *args], num_replicas=replicas)
    return specs.AppDef("drec", [role])


def _submit(sched: Any, app: specs.AppDef, **policy: Any) -> str:
    return str(sched.schedule(sched.submit_recovery_dryrun(app, {"stop_grace_period": 2}, RecoveryPolicy(**policy))))


def _attempts(sched: Any, app_id: str) -> list[tuple[int, str | None, str | None, int | None]]:
    log = sched.recovery_attempts(app_id)
    assert log is not None
    return [(a.n, a.state, a.cause, a.exit_code) for a in log.attempts]


def _container(client: Any, app_id: str) -> Any:
    (container,) = client.containers.list(all=True, filters={"label": f"{LABEL_APP_ID}={app_id}"})
    return container


def _host_pid(container: Any, command: str) -> int | None:
    """This host's pid of the container's process running ``command``."""
    container.reload()
    if container.status != "running":
        return None
    top = container.top()
    column = top["Titles"].index("PID")
    found = [int(p[column]) for p in top["Processes"] if p[-1] == command]
    return found[0] if found else None


def _file(container: Any, path: str) -> str:
    import io
    import tarfile

    chunks, _ = container.get_archive(path)
    with tarfile.open(fileobj=io.BytesIO(b"".join(chunks))) as tar:
        member = tar.extractfile(tar.getmembers()[0])
        assert member is not None
        return member.read().decode()


@pytest.fixture
def image(docker_live: dict[str, str]) -> str:
    return docker_live["TORCHX_TEST_DOCKER_IMAGE"]


def test_app_errors_restart_in_the_container_with_the_attempt_and_checkpoint(
    docker_sched: Any, image: str, client: Any
) -> None:
    # the checkpoint directory (default: in the container) is kept across attempts; the user's
    # argument reaches the app as data (never parsed by the loop's shell)
    script = (
        'echo "attempt $TORCHX_ATTEMPT $TORCHX_CHECKPOINT_DIR"; printf %s "$1" > /tmp/arg;'
        ' echo "$TORCHX_ATTEMPT" >> "$TORCHX_CHECKPOINT_DIR/seen";'
        ' [ "$TORCHX_ATTEMPT" -lt 2 ] && exit 3; echo "seen $(cat "$TORCHX_CHECKPOINT_DIR/seen" | tr "\\n" " ")"'
    )
    app = _app(image, script, hostile_value("/tmp/pwned"))
    app_id = _submit(docker_sched, app, max_restarts=2, restart_backoff=0)
    desc = docker_sched.wait(app_id, timeout=60)
    assert desc is not None and desc.state == AppState.SUCCEEDED, desc
    assert _attempts(docker_sched, app_id) == [
        (0, "FAILED", "APP_ERROR", 3),
        (1, "FAILED", "APP_ERROR", 3),
        (2, "SUCCEEDED", None, 0),
    ]
    lines = "".join(docker_sched.log_iter(app_id, "w", 0)).splitlines()
    assert [line for line in lines if line.startswith("attempt")] == [
        f"attempt {n} /tmp/torchx-checkpoints" for n in range(3)
    ]
    assert "seen 0 1 2 " in lines
    container = _container(client, app_id)
    assert "touch /tmp/pwned" in _file(container, "/tmp/arg")
    with pytest.raises(Exception, match="Not Found|No such"):
        container.get_archive("/tmp/pwned")


def test_max_restarts_used_up_ends_failed_with_the_apps_exit_code(docker_sched: Any, image: str) -> None:
    app_id = _submit(docker_sched, _app(image, "exit 4"), max_restarts=1, restart_backoff=0)
    desc = docker_sched.wait(app_id, timeout=60)
    assert desc is not None and desc.state == AppState.FAILED
    assert _attempts(docker_sched, app_id) == [(0, "FAILED", "APP_ERROR", 4), (1, "FAILED", "APP_ERROR", 4)]
    end = docker_sched.end_cause(app_id)
    assert end is not None and (end.cause.value, end.exit_code) == ("APP_ERROR", 4)
    log = docker_sched.recovery_attempts(app_id)
    assert log is not None and log.final == "FAILED"


def test_app_sigkilled_from_outside_is_a_recovery(docker_sched: Any, image: str, client: Any) -> None:
    script = '[ "$TORCHX_ATTEMPT" = 0 ] && exec sleep 60; exit 0'
    app_id = _submit(docker_sched, _app(image, script), max_restarts=0, max_recoveries=1)
    container = _container(client, app_id)
    eventually(lambda: _host_pid(container, "sleep 60") is not None, 30, 0.1, "the app to start")
    os.kill(_host_pid(container, "sleep 60"), signal.SIGKILL)  # from this host, as the OOM killer would
    desc = docker_sched.wait(app_id, timeout=60)
    assert desc is not None and desc.state == AppState.SUCCEEDED, desc
    assert _attempts(docker_sched, app_id) == [(0, "FAILED", "KILLED", 137), (1, "SUCCEEDED", None, 0)]


def test_cancel_stops_the_loop_and_starts_nothing(docker_sched: Any, image: str, client: Any) -> None:
    script = 'echo "$TORCHX_ATTEMPT" >> /tmp/started; exec sleep 60'
    app_id = _submit(docker_sched, _app(image, script), max_restarts=3, max_recoveries=3)
    container = _container(client, app_id)
    eventually(lambda: container.exec_run(["cat", "/tmp/started"]).exit_code == 0, 30, 0.1, "the app to start")
    docker_sched.cancel(app_id)
    desc = docker_sched.wait(app_id, timeout=30)
    assert desc is not None and desc.state == AppState.CANCELLED
    container.reload()
    assert container.status == "exited" and container.attrs["RestartCount"] == 0
    assert _attempts(docker_sched, app_id) == [(0, None, None, None)]


def test_several_replicas_are_refused(docker_sched: Any, image: str) -> None:
    with pytest.raises(UnsupportedFeatureError, match="app of one replica.*controller=local"):
        docker_sched.submit_recovery_dryrun(_app(image, "true", replicas=2), {}, RecoveryPolicy())


def test_an_ordinary_app_has_no_attempts(docker_sched: Any, image: str) -> None:
    app_id = docker_sched.submit(_app(image, "true"), {})
    docker_sched.wait(app_id, timeout=60)
    assert docker_sched.recovery_attempts(app_id) is None
    assert docker_sched.recovery_attempts("no-such-app") is None
