"""aws_batch recovery: the retry strategy and the wrapped command (checked against botocore's
model of Batch's API and run under a real /bin/sh), the tag that marks the job as one that
recovers, and attempts read from ``describe_jobs``."""

from __future__ import annotations

import os
import re
import subprocess
from typing import Any

import botocore.session
import pytest
from botocore.validate import ParamValidator
from torchx import specs
from torchx.schedulers.capabilities import UnsupportedFeatureError
from torchx.schedulers.recovery import RECOVERY_MARK, RecoveryPolicy
from torchx_sched_aws.batch import CANCEL_REASON, create_scheduler
from torchx_sched_aws.batch_recovery import attempts_of, is_marked, recover, retry_strategy
from torchx_sched_aws.batch_request import BatchOpts, build_job

HOSTILE = ["it's", 'say "hi"', "$HOME", "`id`", "a;b|c&d", "*", "", "new\nline", "$0", "$@"]
MODEL = botocore.session.get_session().get_service_model("batch")


def _valid(operation: str, params: dict[str, Any]) -> None:
    """Raises unless ``params`` are a valid request of ``operation`` by botocore's model of Batch."""
    shape = MODEL.operation_model(operation).input_shape
    report = ParamValidator().validate(params, shape)
    assert not report.has_errors(), report.generate_report()
    strategy = params.get("retryStrategy")
    if strategy is not None:
        rules = strategy.get("evaluateOnExit", [])
        assert 1 <= strategy["attempts"] <= 10 and len(rules) <= 5
        actions = shape.members["retryStrategy"].members["evaluateOnExit"].member.members["action"].enum
        for rule in rules:
            assert rule["action"] in actions
            assert all(len(v) <= 512 for v in rule.values())
            code = rule.get("onExitCode")
            assert code is None or code.rstrip("*").isdigit() or code == "*"


def _app(replicas: int = 1, args: list[str] | None = None) -> specs.AppDef:
    role = specs.Role(
        "trainer", image="img:1", entrypoint="printf", args=args or ["%s|", *HOSTILE], num_replicas=replicas
    )
    return specs.AppDef("train", roles=[role])


def _job(policy: RecoveryPolicy, replicas: int = 1) -> Any:
    return recover(build_job(_app(replicas), BatchOpts.from_cfg({"queue": "q", "user": "u"}), "train-1"), policy)


def test_defaults_retry_a_lost_host_only() -> None:
    assert retry_strategy(RecoveryPolicy()) == {
        "attempts": 10,
        "evaluateOnExit": [
            {"onStatusReason": "Host EC2*", "action": "RETRY"},
            {"onStatusReason": "Your Spot Task*", "action": "RETRY"},
            {"onReason": "*", "action": "EXIT"},
        ],
    }


def test_app_errors_and_lost_hosts_share_one_budget() -> None:
    strategy = retry_strategy(RecoveryPolicy(max_restarts=2, max_recoveries=3))
    assert strategy == {
        "attempts": 6,
        "evaluateOnExit": [
            {"onStatusReason": "Host EC2*", "action": "RETRY"},
            {"onStatusReason": "Your Spot Task*", "action": "RETRY"},
            {"onExitCode": "*", "action": "RETRY"},
            {"onReason": "*", "action": "EXIT"},
        ],
    }
    # more than Batch counts: capped at its 10 attempts
    assert retry_strategy(RecoveryPolicy(max_restarts=20))["attempts"] == 10


def test_no_budget_is_one_attempt_that_never_retries() -> None:
    assert retry_strategy(RecoveryPolicy(max_recoveries=0)) == {
        "attempts": 1,
        "evaluateOnExit": [{"onReason": "*", "action": "EXIT"}],
    }


def test_recover_on_exit_codes_each_retry_with_the_whole_budget() -> None:
    strategy = retry_strategy(RecoveryPolicy(max_recoveries=1, recover_on_exit_codes=(42, 33, 33)))
    assert strategy == {
        "attempts": 10,
        "evaluateOnExit": [
            {"onStatusReason": "Host EC2*", "action": "RETRY"},
            {"onStatusReason": "Your Spot Task*", "action": "RETRY"},
            {"onExitCode": "33", "action": "RETRY"},
            {"onExitCode": "42", "action": "RETRY"},
            {"onReason": "*", "action": "EXIT"},
        ],
    }
    # with max_restarts every exit code retries already: the codes need no rule of their own
    rules = retry_strategy(RecoveryPolicy(max_restarts=1, recover_on_exit_codes=(1, 2, 3, 4, 5)))["evaluateOnExit"]
    assert [r.get("onExitCode") for r in rules] == [None, None, "*", None]
    # without max_recoveries, no lost-host rule: room for four codes
    rules = retry_strategy(RecoveryPolicy(max_recoveries=0, recover_on_exit_codes=(1, 2, 3, 4)))["evaluateOnExit"]
    assert [r.get("onExitCode") for r in rules] == ["1", "2", "3", "4", None]


def test_policies_batch_cannot_express_are_refused_in_one_line() -> None:
    sched = create_scheduler("t")
    cfg = sched.run_opts().resolve({"queue": "q"})
    for policy, words in (
        (RecoveryPolicy(recover_on_exit_codes=(1, 2, 3)), "at most 2 exit codes"),
        (RecoveryPolicy(restart_backoff=5), "cannot wait between attempts"),
    ):
        with pytest.raises(UnsupportedFeatureError, match=words) as e:
            sched.submit_recovery_dryrun(_app(), cfg, policy)
        assert "\n" not in str(e.value)


@pytest.mark.parametrize("replicas", [1, 3])
def test_requests_are_valid_by_botocores_model(replicas: int) -> None:
    for policy in (
        RecoveryPolicy(),
        RecoveryPolicy(max_restarts=3, max_recoveries=0, checkpoint_dir="/mnt/ckpt"),
        RecoveryPolicy(max_restarts=0, recover_on_exit_codes=(33,)),
    ):
        job = _job(policy, replicas)
        _valid("RegisterJobDefinition", job.job_definition)
        _valid("SubmitJob", {**job.submit, "jobDefinition": "arn:aws:batch:us-east-1:1:job-definition/x:1"})


def _run(container: dict[str, Any], attempt: str | None) -> str:
    env = {"PATH": os.environ["PATH"], **{e["name"]: e["value"] for e in container["environment"]}}
    if attempt is not None:
        env["AWS_BATCH_JOB_ATTEMPT"] = attempt
    command = container["command"]
    assert command[:2] == ["/bin/sh", "-c"]
    probe = [*command[:3], "sh", "-c", 'printf "%s|" "$TORCHX_ATTEMPT" "$TORCHX_CHECKPOINT_DIR"; exec "$@"', "sh"]
    return subprocess.run([*probe, *command[3:]], env=env, capture_output=True, text=True, check=True).stdout


def test_every_attempt_reads_its_number_and_user_words_pass_unchanged() -> None:
    container = _job(RecoveryPolicy(checkpoint_dir="/mnt/it's ckpt")).job_definition["containerProperties"]
    assert not any(w in container["command"][2] for w in ("printf", "it's"))  # nothing of the user's in the script
    for attempt, n in ((None, "0"), ("1", "0"), ("2", "1"), ("10", "9")):
        assert _run(container, attempt) == f"{n}|/mnt/it's ckpt|" + "".join(f"{w}|" for w in HOSTILE)


def test_every_node_of_a_multinode_job_is_wrapped() -> None:
    definition = _job(RecoveryPolicy(), replicas=3).job_definition
    (rng,) = definition["nodeProperties"]["nodeRangeProperties"]
    container = rng["container"]
    assert container["command"][3:5] == ["/bin/sh", "-c"]  # the node's own script, run by the wrapper
    env = {e["name"]: e["value"] for e in container["environment"]}
    assert env["TORCHX_CHECKPOINT_DIR"] == "/tmp/torchx-checkpoints/train-1"
    out = subprocess.run(
        [*container["command"][:3], "sh", "-c", 'echo "$TORCHX_ATTEMPT"'],
        env={"PATH": os.environ["PATH"], "AWS_BATCH_JOB_ATTEMPT": "3"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out == "2\n"


# ---------------------------------------------------------------- attempts from describe_jobs


def _attempt(started: int, stopped: int | None = None, reason: str = "", code: int | None = None) -> dict[str, Any]:
    attempt: dict[str, Any] = {"container": {} if code is None else {"exitCode": code}, "startedAt": started}
    if stopped is not None:
        attempt["stoppedAt"] = stopped
    if reason:
        attempt["statusReason"] = reason
    return attempt


def test_a_lost_host_then_an_app_error_then_a_run_under_way() -> None:
    job = {
        "status": "RUNNING",
        "startedAt": 9000,
        "attempts": [
            _attempt(1000, 2000, "Host EC2 (instance i-0abc) terminated."),
            _attempt(3000, 4000, "Essential container in task exited", code=1),
        ],
    }
    log = attempts_of(job, CANCEL_REASON)
    got = [(a.n, a.state, a.cause, a.exit_code, a.started, a.ended) for a in log.attempts]
    assert got == [
        (0, "FAILED", "NODE_FAILURE", None, 1.0, 2.0),
        (1, "FAILED", "APP_ERROR", 1, 3.0, 4.0),
        (2, None, None, None, 9.0, None),
    ]
    assert "Host EC2" in log.attempts[0].reason and log.final is None


def test_waiting_for_the_retry_lists_no_attempt_under_way() -> None:
    job = {"status": "RUNNABLE", "attempts": [_attempt(1000, 2000, "Essential container in task exited", code=33)]}
    assert [(a.state, a.exit_code) for a in attempts_of(job, CANCEL_REASON).attempts] == [("FAILED", 33)]


def test_the_last_attempt_takes_the_jobs_end() -> None:
    done = {"status": "SUCCEEDED", "attempts": [_attempt(1000, 2000, "x", code=1), _attempt(3000, 4000, code=0)]}
    log = attempts_of(done, CANCEL_REASON)
    assert [(a.state, a.cause, a.exit_code) for a in log.attempts] == [
        ("FAILED", "APP_ERROR", 1),
        ("SUCCEEDED", None, 0),
    ]
    assert log.final == "SUCCEEDED"
    # moto's shape: the attempt lists no exit code; the job's status reason is torchx's cancel
    cancelled = {"status": "FAILED", "statusReason": CANCEL_REASON, "attempts": [_attempt(1000)]}
    log = attempts_of(cancelled, CANCEL_REASON)
    assert [(a.state, a.cause) for a in log.attempts] == [("CANCELLED", "CANCELLED")]
    # an attempt under way that Batch already lists (moto): not ended, not listed twice
    running = {"status": "RUNNING", "startedAt": 1000, "attempts": [_attempt(1000)]}
    assert [(a.n, a.state) for a in attempts_of(running, CANCEL_REASON).attempts] == [(0, None)]


def test_a_job_not_started_has_no_attempt() -> None:
    assert attempts_of({"status": "RUNNABLE", "attempts": []}, CANCEL_REASON).attempts == []


def test_a_spot_task_taken_back_is_a_preemption() -> None:
    job = {"status": "RUNNABLE", "attempts": [_attempt(1000, 2000, "Your Spot Task was interrupted.")]}
    assert [(a.state, a.cause) for a in attempts_of(job, CANCEL_REASON).attempts] == [("FAILED", "PREEMPTED")]


# ---------------------------------------------------------------- the mark (list from any machine)

#: what AWS takes as a tag value: letters, digits, spaces and _ . : / = + - @, at most 256
AWS_TAG_VALUE = re.compile(r"[\w .:/=+\-@]{0,256}")


def test_a_recovering_job_and_its_definition_carry_the_mark_as_a_valid_tag() -> None:
    policy = RecoveryPolicy(max_restarts=2, max_recoveries=0, recover_on_exit_codes=(75,), checkpoint_dir="/it's $x")
    job = _job(policy)
    want = "max_restarts=2 max_recoveries=0 recover_on_exit_codes=75"
    assert job.submit["tags"][RECOVERY_MARK] == want == job.job_definition["tags"][RECOVERY_MARK]
    assert AWS_TAG_VALUE.fullmatch(want)
    assert job.submit["tags"]["torchx.pytorch.org/app-name"] == "train"  # the plain tags stay
    assert is_marked({"tags": job.submit["tags"]})


def test_a_plain_job_carries_no_mark_even_if_its_metadata_names_it() -> None:
    app = _app()
    app.metadata = {RECOVERY_MARK: "forged", "team": "a"}
    job = build_job(app, BatchOpts.from_cfg({"queue": "q", "user": "u"}), "train-1")
    assert RECOVERY_MARK not in job.submit["tags"] and RECOVERY_MARK not in job.job_definition["tags"]
    assert job.submit["tags"]["team"] == "a"
    assert not is_marked({"tags": job.submit["tags"]}) and not is_marked({})


def test_a_long_mark_is_cut_to_what_a_tag_holds() -> None:
    job = _job(RecoveryPolicy(max_restarts=1, recover_on_exit_codes=tuple(range(1, 120))))
    assert AWS_TAG_VALUE.fullmatch(job.submit["tags"][RECOVERY_MARK])
    _valid("SubmitJob", {**job.submit, "jobDefinition": "arn:aws:batch:us-east-1:1:job-definition/x:1"})
