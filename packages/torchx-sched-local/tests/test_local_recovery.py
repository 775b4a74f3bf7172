"""local_cwd native recovery: the supervisor runs a managed job's attempts itself (real
processes, real signals); see torchx_sched_local.recovering."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from torchx import specs
from torchx.schedulers.recovery import RecoveryPolicy
from torchx.specs import AppState
from torchx.testing import eventually
from torchx_sched_local import store
from torchx_sched_local.local_scheduler import LocalScheduler


def _app(script: str, replicas: int = 1) -> specs.AppDef:
    role = specs.Role("r", image="/tmp", entrypoint="sh", args=["-c", script], num_replicas=replicas)
    return specs.AppDef("rec", [role])


def _submit(sched: LocalScheduler, app: specs.AppDef, **policy: object) -> str:
    info = sched.submit_recovery_dryrun(app, {}, RecoveryPolicy(**policy))  # type: ignore[arg-type]
    return sched.schedule(info)


def _attempts(sched: LocalScheduler, app_id: str) -> list[tuple[int, str | None, str | None, int | None]]:
    log = sched.recovery_attempts(app_id)
    assert log is not None
    return [(a.n, a.state, a.cause, a.exit_code) for a in log.attempts]


def _log(sched: LocalScheduler, app_id: str, k: int = 0) -> str:
    return "".join(sched.log_iter(app_id, "r", k))


def test_app_error_restarts_every_replica_as_the_next_attempt(sched: LocalScheduler, tmp_path: Path) -> None:
    # replica 1 fails attempt 0 while replica 0 still runs: both run again as attempt 1; it fails
    # only once replica 0 printed (on a loaded machine replica 0 was stopped before its echo ran)
    script = (
        'echo "attempt $TORCHX_ATTEMPT ckpt $TORCHX_CHECKPOINT_DIR";'
        ' if [ "$TORCHX_ATTEMPT" = 0 ]; then'
        '   if [ "$TORCHX_REPLICA_IDX" = 1 ]; then'
        '     i=0; while [ ! -e "$TORCHX_CHECKPOINT_DIR/printed" ] && [ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); done;'
        "     exit 3;"
        "   fi;"
        '   touch "$TORCHX_CHECKPOINT_DIR/printed"; sleep 30;'
        " fi"
    )
    app_id = _submit(sched, _app(script, 2), max_restarts=1, restart_backoff=0)
    desc = sched.wait(app_id, timeout=30)
    assert desc is not None and desc.state == AppState.SUCCEEDED, desc
    assert desc.num_restarts == 1
    assert _attempts(sched, app_id) == [(0, "FAILED", "APP_ERROR", 3), (1, "SUCCEEDED", None, 0)]
    ckpt = os.path.join(sched.store.job_dir(app_id), "checkpoints")
    assert os.path.isdir(ckpt)
    for k in (0, 1):
        assert _log(sched, app_id, k) == f"attempt 0 ckpt {ckpt}\nattempt 1 ckpt {ckpt}\n"
    log = sched.recovery_attempts(app_id)
    assert log is not None and log.final == "SUCCEEDED"


def test_max_restarts_used_up_ends_failed(sched: LocalScheduler) -> None:
    app_id = _submit(sched, _app("exit 4"), max_restarts=2, restart_backoff=0)
    desc = sched.wait(app_id, timeout=30)
    assert desc is not None and desc.state == AppState.FAILED
    assert "max_restarts=2 used up" in desc.msg
    assert _attempts(sched, app_id) == [(i, "FAILED", "APP_ERROR", 4) for i in range(3)]
    end = sched.end_cause(app_id)
    assert end is not None and (end.cause.value, end.exit_code) == ("APP_ERROR", 4)
    log = sched.recovery_attempts(app_id)
    assert log is not None and log.final == "FAILED"


def test_recover_on_exit_codes_restart_uncounted(sched: LocalScheduler) -> None:
    script = '[ "$TORCHX_ATTEMPT" -lt 3 ] && exit 33; exit 0'
    app_id = _submit(sched, _app(script), max_restarts=0, recover_on_exit_codes=(33,))
    desc = sched.wait(app_id, timeout=30)
    assert desc is not None and desc.state == AppState.SUCCEEDED
    assert _attempts(sched, app_id) == [
        (0, "FAILED", "APP_ERROR", 33),
        (1, "FAILED", "APP_ERROR", 33),
        (2, "FAILED", "APP_ERROR", 33),
        (3, "SUCCEEDED", None, 0),
    ]


def test_sigkilled_replica_is_a_recovery_under_max_recoveries(sched: LocalScheduler, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    # $$ is torchx's escape of $ (macros): the shell sees $$, its pid, which exec keeps for sleep
    script = f'echo $$$$ >> {pids}; [ "$TORCHX_ATTEMPT" -lt 2 ] && exec sleep 30; exit 0'
    app_id = _submit(sched, _app(script), max_restarts=0, max_recoveries=1)
    for n in (1, 2):
        eventually(lambda n=n: pids.exists() and len(pids.read_text().split()) == n, 10, 0.02, f"attempt {n - 1}")
        os.kill(int(pids.read_text().split()[-1]), signal.SIGKILL)
    desc = sched.wait(app_id, timeout=30)
    assert desc is not None and desc.state == AppState.FAILED
    assert "max_recoveries=1 used up" in desc.msg
    assert _attempts(sched, app_id) == [(0, "FAILED", "KILLED", -9), (1, "FAILED", "KILLED", -9)]
    end = sched.end_cause(app_id)
    assert end is not None and end.cause.value == "KILLED"


def test_backoff_waits_and_doubles(sched: LocalScheduler) -> None:
    app_id = _submit(sched, _app('[ "$TORCHX_ATTEMPT" -lt 2 ] && exit 1; exit 0'), max_restarts=2, restart_backoff=0.4)
    desc = sched.wait(app_id, timeout=30)
    assert desc is not None and desc.state == AppState.SUCCEEDED
    log = sched.recovery_attempts(app_id)
    assert log is not None
    a = log.attempts
    gaps = [a[i + 1].started - a[i].ended for i in (0, 1)]  # type: ignore[operator]
    assert 0.4 <= gaps[0] < 0.4 + 0.5 and 0.8 <= gaps[1] < 0.8 + 0.5, gaps


def test_cancel_during_backoff_starts_nothing(sched: LocalScheduler) -> None:
    app_id = _submit(sched, _app("exit 1"), max_restarts=3, restart_backoff=30)
    eventually(lambda: len(_attempts(sched, app_id)) == 1 and _attempts(sched, app_id)[0][1] == "FAILED", 10, 0.02)
    log = sched.recovery_attempts(app_id)
    assert log is not None and log.backoff_until is not None and log.backoff_until > time.time() + 20
    sched.cancel(app_id)
    desc = sched.wait(app_id, timeout=10)
    assert desc is not None and desc.state == AppState.CANCELLED
    assert _attempts(sched, app_id) == [(0, "FAILED", "APP_ERROR", 1)]


def test_cancel_stops_the_running_attempt_for_good(sched: LocalScheduler, tmp_path: Path) -> None:
    marker = tmp_path / "started"
    app_id = _submit(sched, _app(f"echo $TORCHX_ATTEMPT >> {marker}; exec sleep 30"), max_restarts=3)
    eventually(marker.exists, 10, 0.02, "the attempt to start")
    sched.cancel(app_id)
    desc = sched.wait(app_id, timeout=10)
    assert desc is not None and desc.state == AppState.CANCELLED
    time.sleep(1.5)
    assert marker.read_text() == "0\n"
    assert _attempts(sched, app_id) == [(0, None, None, None)]  # its end is the job's: CANCELLED


def test_checkpoint_dir_given_and_dry_run_shown(sched: LocalScheduler, tmp_path: Path) -> None:
    ckpt = tmp_path / "my ckpt"
    info = sched.submit_recovery_dryrun(
        _app('echo "$TORCHX_CHECKPOINT_DIR"'), {}, RecoveryPolicy(max_restarts=1, checkpoint_dir=str(ckpt))
    )
    assert "recovers in its supervisor: max_restarts=1" in str(info)
    app_id = sched.schedule(info)
    desc = sched.wait(app_id, timeout=10)
    assert desc is not None and desc.state == AppState.SUCCEEDED
    assert _log(sched, app_id) == f"{ckpt}\n" and ckpt.is_dir()


def test_an_ordinary_job_has_no_attempts(sched: LocalScheduler) -> None:
    app_id = sched.submit(_app("true"), {})
    sched.wait(app_id, timeout=10)
    assert sched.recovery_attempts(app_id) is None
    assert sched.recovery_attempts("no-such-job") is None
    assert not os.path.exists(os.path.join(sched.store.job_dir(app_id), "attempts"))
    assert store.read_json(os.path.join(sched.store.job_dir(app_id), store.APP_FILE)).get("recovery") is None


def test_an_attempt_ends_when_its_last_replica_stopped_and_the_backoff_counts_from_there(
    sched: LocalScheduler,
) -> None:
    # attempt 0: replica 1 fails at once, replica 0 takes 0.6 s to stop after the supervisor's SIGTERM
    script = (
        'if [ "$TORCHX_ATTEMPT" = 0 ]; then'
        ' if [ "$TORCHX_REPLICA_IDX" = 1 ]; then sleep 0.2; exit 3; fi;'
        " trap 'sleep 0.6; exit 0' TERM; sleep 30 & wait; fi"
    )
    app_id = _submit(sched, _app(script, 2), max_restarts=1, restart_backoff=0.3)
    desc = sched.wait(app_id, timeout=30)
    assert desc is not None and desc.state == AppState.SUCCEEDED, desc
    log = sched.recovery_attempts(app_id)
    assert log is not None
    first, second = log.attempts
    assert first.ended - first.started >= 0.2 + 0.6  # type: ignore[operator]
    assert 0.3 <= second.started - first.ended < 0.3 + 2.0  # type: ignore[operator]  # the back-off (bound: load)
