"""Recovery inside the Ray job: the policy written into ``app.json`` and the mark in the job's
metadata, the driver's budget loop (attempts scripted, no cluster), and the attempts read back
from the job log's records."""

from __future__ import annotations

import io
import json
from typing import Any

from torchx import specs
from torchx.schedulers.recovery import RECOVERY_MARK, RecoveryPolicy
from torchx_sched_ray.recovery import policy_spec, read_attempts
from torchx_sched_ray.request import ENTRYPOINT, META_APP
from torchx_sched_ray.scheduler import create_scheduler
from torchx_sched_ray.torchx_ray_driver import records
from torchx_sched_ray.torchx_ray_driver.driver import Driver


def test_the_request_carries_the_policy_and_no_retries_of_its_own() -> None:
    sched = create_scheduler("t")
    cfg = sched.run_opts().resolve({"address": "http://127.0.0.1:8265"})
    app = specs.AppDef("a", [specs.Role("r", image="", entrypoint="echo", max_retries=3)])
    policy = RecoveryPolicy(max_restarts=2, recover_on_exit_codes=(33, 33), checkpoint_dir="/shared/ckpt")
    job = sched.submit_recovery_dryrun(app, cfg, policy).request
    assert job.spec["max_retries"] == 0
    recovery = job.spec["recovery"]
    assert {k: recovery[k] for k in ("max_restarts", "max_recoveries", "recover_on_exit_codes", "checkpoint_dir")} == {
        "max_restarts": 2,
        "max_recoveries": 10,
        "recover_on_exit_codes": [33],
        "checkpoint_dir": "/shared/ckpt",
    }
    assert 9 in recovery["killed_signals"] and 11 not in recovery["killed_signals"]  # SIGKILL yes, SIGSEGV no
    json.dumps(job.spec)  # app.json
    assert policy_spec(RecoveryPolicy(), "sub-1")["checkpoint_dir"] == "/tmp/torchx-checkpoints/sub-1"


def test_the_job_is_marked_in_its_metadata_and_a_plain_one_is_not() -> None:
    sched = create_scheduler("t")
    cfg = sched.run_opts().resolve({"address": "http://127.0.0.1:8265"})
    app = specs.AppDef("a", [specs.Role("r", image="", entrypoint="echo", args=["it's", "$HOME"])])
    policy = RecoveryPolicy(max_restarts=1, recover_on_exit_codes=(75, 3), restart_backoff=2.5)
    job = sched.submit_recovery_dryrun(app, cfg, policy).request
    want = "max_restarts=1 max_recoveries=10 recover_on_exit_codes=3:75 restart_backoff=2.5 max_backoff=300"
    assert job.metadata[RECOVERY_MARK] == want
    assert job.metadata[META_APP] == "a"  # the plain keys stay
    assert all(isinstance(v, str) for v in job.metadata.values())  # the Jobs API takes str -> str
    assert job.entrypoint == ENTRYPOINT  # nothing of the user's or the policy's in the command line
    assert RECOVERY_MARK not in sched.submit_dryrun(app, cfg).request.metadata


class Scripted(Driver):
    """The driver with each attempt's outcome given: None (success) or (kind, exit code)."""

    def __init__(self, spec: dict[str, Any], outcomes: list[tuple[str, int | None] | None]) -> None:
        super().__init__({"roles": [], **spec}, io.StringIO())
        self.outcomes = outcomes
        self.envs: list[dict[str, str]] = []

    def attempt(self) -> bool:
        self.envs.append(dict(self.attempt_env))
        outcome = self.outcomes.pop(0)
        if outcome is not None:
            self._failed(*outcome)
        return outcome is None


def _policy(**kw: Any) -> dict[str, Any]:
    return policy_spec(RecoveryPolicy(checkpoint_dir="/ck", **kw), "s")


def test_budgets_are_counted_apart_and_recover_codes_uncounted() -> None:
    outcomes = [("infra", None), ("app", 33), ("app", 1), ("app", -9), ("app", 33), None]
    driver = Scripted({"recovery": _policy(max_restarts=1, max_recoveries=2, recover_on_exit_codes=(33,))}, outcomes)
    assert driver.run() == 0
    assert [e["TORCHX_ATTEMPT"] for e in driver.envs] == ["0", "1", "2", "3", "4", "5"]
    assert {e["TORCHX_CHECKPOINT_DIR"] for e in driver.envs} == {"/ck"}
    log = read_attempts(driver.out.getvalue().splitlines())
    assert [(a.n, a.state, a.exit_code) for a in log.attempts] == [
        (0, "FAILED", None),
        (1, "FAILED", 33),
        (2, "FAILED", 1),
        (3, "FAILED", -9),
        (4, "FAILED", 33),
        (5, "SUCCEEDED", 0),
    ]
    assert "recover_on_exit_codes" in log.attempts[1].reason


def test_a_budget_used_up_fails_the_job() -> None:
    driver = Scripted({"recovery": _policy(max_restarts=1)}, [("app", 3), ("app", 3), None])
    assert driver.run() == 1
    assert "max_restarts=1 used up" in driver.out.getvalue()
    driver = Scripted({"recovery": _policy(max_recoveries=0)}, [("infra", None), None])
    assert driver.run() == 1
    assert "max_recoveries=0 used up" in driver.out.getvalue()


def test_app_errors_in_a_row_back_off() -> None:
    driver = Scripted(
        {"recovery": _policy(max_restarts=3, restart_backoff=0.05, max_backoff=0.08)}, [("app", 1)] * 3 + [None]
    )
    assert driver.run() == 0
    waits = [
        r.payload for r in map(records.parse, driver.out.getvalue().splitlines()) if r and r.kind == records.BACKOFF
    ]
    assert waits == ["1 0.05", "2 0.08", "3 0.08"]


def _line(*parts: object) -> str:
    return " ".join(str(p) for p in parts)


def test_attempts_read_from_the_log_with_their_causes() -> None:
    lines = [
        "Ray's own line\n",
        records.attempt(10.0, 0),
        records.state(0, 10.5, "RUNNING", None, "h1"),
        records.message(12.0, "replica 0: The actor died unexpectedly before finishing this task."),
        records.state(0, 12.0, "FAILED", None, "h1"),
        records.attempt_end(12.1, 0, None, "RECOVERY"),
        records.attempt(13.0, 1),
        records.output(0, "o", 13.5, "attempt 1 starts"),
        records.state(0, 14.0, "FAILED", -9, "h1"),
        records.attempt_end(14.0, 1, -9, "RECOVERY"),
        records.attempt(15.0, 2),
        records.state(0, 15.5, "FAILED", 1, "h1"),
        records.attempt_end(16.0, 2, 1, "RESTART"),
        records.backoff(16.0, 3, 5),
    ]
    log = read_attempts("".join(lines).splitlines())
    got = [(a.n, a.state, a.cause, a.exit_code, a.started, a.ended) for a in log.attempts]
    assert got == [
        (0, "FAILED", "NODE_FAILURE", None, 10.0, 12.1),
        (1, "FAILED", "KILLED", 137, 13.0, 14.0),
        (2, "FAILED", "APP_ERROR", 1, 15.0, 16.0),
    ]
    assert log.backoff_until == 21.0
    log = read_attempts([*lines, records.attempt(21.0, 3)])
    assert log.attempts[-1].state is None and log.backoff_until is None
