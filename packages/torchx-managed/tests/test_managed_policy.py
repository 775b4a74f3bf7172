"""Pure parts of torchx-managed (installed with torchx-core alone): option checks, the restart
policy by cause, the journal fold, notifications derived from the journal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from torchx.specs.runopts import InvalidRunConfigException, runopts
from torchx_managed.journal import JobState, ManagedStore, next_step
from torchx_managed.notify import pending
from torchx_managed.options import ManagedOptions, check, parse_duration, run_opts

INSTALLED = {"slurm": None, "local_cwd": None, "managed": None}


def target_opts(name: str) -> runopts:
    opts = runopts()
    if name == "slurm":
        opts.add("partition", str, "the partition")
    opts.add("log_dir", str, "logs")
    return opts


def checked(**cfg: Any) -> tuple[ManagedOptions, list[str]]:
    return check(run_opts().resolve(cfg), INSTALLED, target_opts)


@pytest.mark.parametrize(
    ("cfg", "match"),
    [
        ({"targets": []}, "targets is empty"),
        ({"targets": ["nope"]}, "'nope' is not an installed scheduler"),
        ({"targets": ["managed"]}, "cannot be its own target"),
        ({"targets": ["slurm", "slurm"]}, "twice"),
        ({"targets": ["slurm"], "max_restarts": -1}, "max_restarts=-1: must be 0 or more"),
        ({"targets": ["slurm"], "max_recoveries": -2}, "max_recoveries=-2"),
        ({"targets": ["slurm"], "pending_timeout": "soon"}, "'soon' is not a duration"),
        ({"targets": ["slurm"], "notify": "ftp://x/y"}, "http:// or https://"),
        ({"targets": ["slurm"], "notify": "localhost:80"}, "http:// or https://"),
        ({"targets": ["slurm"], "notify": "http://[::1"}, r"notify=http://\[::1: Invalid IPv6 URL"),
        ({"targets": ["slurm"], "recover_on_exit_codes": ["x"]}, "'x' is not an exit code"),
    ],
)
def test_bad_options_are_one_line_errors(cfg: dict[str, Any], match: str) -> None:
    with pytest.raises(InvalidRunConfigException, match=match) as e:
        checked(**cfg)
    assert "\n" not in str(e.value)


def test_python_values_are_taken() -> None:
    opts, _ = checked(targets=["slurm"], recover_on_exit_codes=[33, 34], pending_timeout=15)
    assert opts.recover_on_exit_codes == [33, 34]
    assert opts.pending_timeout == 15.0
    opts, _ = checked(targets=["slurm"], pending_timeout=2.5)
    assert opts.pending_timeout == 2.5


def test_a_list_type_error_names_the_element_type() -> None:
    with pytest.raises(InvalidRunConfigException, match=r"'targets' expects list\[str\], got list \(\[1\]\)"):
        run_opts().resolve({"targets": [1]})


def test_missing_targets_is_required() -> None:
    with pytest.raises(InvalidRunConfigException, match="required run option 'targets'"):
        run_opts().resolve({})


def test_other_keys_go_to_the_targets_that_declare_them() -> None:
    opts, unknown = checked(targets=["slurm", "local_cwd"], partition="debug", log_dir="/l", bogus="1")
    assert opts.target_cfgs == {"slurm": {"partition": "debug", "log_dir": "/l"}, "local_cwd": {"log_dir": "/l"}}
    assert unknown == ["bogus"]


def test_cfg_string_keeps_target_keys() -> None:
    cfg, unknown = run_opts().parse_cfg_str("targets=slurm;local_cwd,max_restarts=2,partition=debug")
    assert cfg == {"targets": ["slurm", "local_cwd"], "max_restarts": 2, "partition": "debug"}
    assert unknown == []


@pytest.mark.parametrize(
    ("text", "seconds"), [("90", 90.0), ("90s", 90.0), ("1.5m", 90.0), ("2h", 7200.0), ("1d", 86400.0)]
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


def state(opts: ManagedOptions, *ends: tuple[str, str, str, int | None]) -> JobState:
    """A job whose attempts ended as ``(target, state, cause, exit_code)``."""
    st = JobState({"options": opts.as_json()})
    for n, (target, final, cause, code) in enumerate(ends):
        st.apply({"ev": "submitting", "n": n, "target": target, "name": f"j-{n}", "t": 1.0})
        st.apply({"ev": "started", "n": n, "handle": f"{target}://s/a{n}"})
        st.apply({"ev": "ended", "n": n, "state": final, "cause": cause, "exit_code": code, "t": 2.0})
    return st


def test_app_errors_use_max_restarts() -> None:
    opts = ManagedOptions(["local_cwd"], max_restarts=2)
    fail = ("local_cwd", "FAILED", "APP_ERROR", 1)
    assert next_step(state(opts, fail)).target == "local_cwd"
    assert next_step(state(opts, fail, fail)).target == "local_cwd"
    step = next_step(state(opts, fail, fail, fail))
    assert step.final == "FAILED" and "max_restarts=2 used up" in step.msg


def test_infrastructure_causes_use_max_recoveries_apart() -> None:
    opts = ManagedOptions(["local_cwd"], max_restarts=0, max_recoveries=2)
    lost = ("local_cwd", "FAILED", "NODE_FAILURE", None)
    pre = ("local_cwd", "FAILED", "PREEMPTED", None)
    killed = ("local_cwd", "FAILED", "KILLED", -9)
    assert next_step(state(opts, lost, pre)).final is None
    assert next_step(state(opts, lost, pre, killed)).final == "FAILED"
    assert next_step(state(opts, ("local_cwd", "FAILED", "UNKNOWN", None))).final == "FAILED"


def test_recover_exit_codes_are_free() -> None:
    opts = ManagedOptions(["local_cwd"], recover_on_exit_codes=[33])
    free = ("local_cwd", "FAILED", "APP_ERROR", 33)
    assert next_step(state(opts, free, free, free, free)).target == "local_cwd"
    assert next_step(state(opts, free, ("local_cwd", "SUCCEEDED", "APP_ERROR", 0))).final == "SUCCEEDED"


def test_no_capacity_fails_over_and_the_last_target_counts() -> None:
    opts = ManagedOptions(["slurm", "local_cwd"])
    assert next_step(state(opts, ("slurm", "CANCELLED", "NO_CAPACITY", None))).target == "local_cwd"
    step = next_step(
        state(opts, ("slurm", "CANCELLED", "NO_CAPACITY", None), ("local_cwd", "FAILED", "NO_CAPACITY", None))
    )
    assert step.final == "FAILED"


def test_cancel_ends_the_job() -> None:
    opts = ManagedOptions(["local_cwd"], max_restarts=5)
    st = state(opts, ("local_cwd", "CANCELLED", "CANCELLED", None))
    assert next_step(st).final == "CANCELLED"
    st = state(opts, ("local_cwd", "FAILED", "APP_ERROR", 1))
    st.apply({"ev": "cancel"})
    assert next_step(st).final == "CANCELLED"


def test_journal_survives_a_torn_line_and_notifications_follow_it(tmp_path: Path) -> None:
    store = ManagedStore(str(tmp_path))
    opts = ManagedOptions(["local_cwd"])
    store.create("j", {"id": "j", "options": opts.as_json()})
    store.append("j", {"ev": "submitting", "n": 0, "target": "local_cwd", "name": "j-0", "t": 1.0}, sync=True)
    with open(tmp_path / "j" / "events.jsonl", "a") as f:
        f.write('{"ev": "started", "n": 0, "hand')  # a writer killed mid-line
    store.append("j", {"ev": "started", "n": 0, "handle": "local_cwd://s/x", "t": 1.0}, sync=True)
    store.append("j", {"ev": "ended", "n": 0, "state": "SUCCEEDED", "cause": "APP_ERROR", "exit_code": 0, "t": 2.0})
    store.append(
        "j", {"ev": "final", "state": "SUCCEEDED", "msg": "", "t": 2.0}, {"ev": "notified", "key": "job:RUNNING"}
    )
    st = store.load("j")
    assert [(a.n, a.handle, a.state) for a in st.attempts] == [(0, "local_cwd://s/x", "SUCCEEDED")]
    assert st.attempts[0].cause is None  # older drivers journaled APP_ERROR for a success
    assert st.final == "SUCCEEDED"
    keys = [key for key, _ in pending(st, "managed://s/j")]
    assert keys == ["attempt_started:0", "attempt_ended:0", "job:SUCCEEDED"]


def test_a_first_submission_that_failed_over_notifies_running_with_the_attempt_that_started() -> None:
    st = JobState({"options": ManagedOptions(["local_docker", "local_cwd"]).as_json()})
    for ev in (
        {"ev": "submitting", "n": 0, "target": "local_docker", "name": "j-0", "t": 1.0},
        {"ev": "ended", "n": 0, "state": "FAILED", "cause": "NO_CAPACITY", "reason": "submission failed: x", "t": 1.0},
        {"ev": "submitting", "n": 1, "target": "local_cwd", "name": "j-1", "t": 1.5},
        {"ev": "started", "n": 1, "handle": "local_cwd://s/j-1", "t": 1.5},
    ):
        st.apply(ev)
    out = pending(st, "managed://s/j")
    assert [key for key, _ in out] == ["job:RUNNING", "attempt_ended:0", "attempt_started:1"]
    assert out[0][1]["time"] == 1.5 and out[1][1]["reason"] == "submission failed: x"


def test_job_files_are_private_and_a_writable_spec_is_not_resumed(tmp_path: Path) -> None:
    import os

    from torchx.util.durable import UnsafeJobError

    store = ManagedStore(str(tmp_path / "root"))
    old = os.umask(0o002)  # a permissive umask: the files are private anyway
    try:
        store.create("j", {"id": "j", "options": ManagedOptions(["local_cwd"]).as_json()})
    finally:
        os.umask(old)
    assert os.stat(tmp_path / "root" / "j").st_mode & 0o777 == 0o700
    assert os.stat(tmp_path / "root" / "j" / "spec.json").st_mode & 0o777 == 0o600  # the app, with its env
    os.chmod(tmp_path / "root" / "j" / "spec.json", 0o666)
    with pytest.raises(UnsafeJobError, match="can be written by other users"):
        store.resume("j", ["-c", "raise SystemExit(1)"], finished=False)
    assert store.driver_pid("j") is None


def test_restart_backoff_doubles_per_app_error_in_a_row_and_is_capped() -> None:
    from torchx_managed.journal import restart_at

    opts = checked(targets=["slurm"], max_restarts=20, restart_backoff="10s")[0]
    ends = [("slurm", "FAILED", "APP_ERROR", 1)] * 3
    assert restart_at(state(opts, *ends)) == pytest.approx(2.0 + 40.0)  # ended at t=2: 10, 20, 40
    assert restart_at(state(opts, *([("slurm", "FAILED", "APP_ERROR", 1)] * 9))) == pytest.approx(2.0 + 300.0)
    # an infrastructure failure in between starts the count again; a success or recovery waits not
    mixed = [("slurm", "FAILED", "APP_ERROR", 1), ("slurm", "FAILED", "NODE_FAILURE", None), ends[0]]
    assert restart_at(state(opts, *mixed)) == pytest.approx(2.0 + 10.0)
    assert restart_at(state(opts, ("slurm", "FAILED", "NODE_FAILURE", None))) is None
    assert restart_at(state(checked(targets=["slurm"], restart_backoff=0)[0], *ends)) is None


def test_a_journal_written_by_the_previous_version_is_read_and_continued(tmp_path: Path) -> None:
    """A job started before the shared run vocabulary (``n``, ``started``, ``reason``), its driver
    then replaced by this version, which appends in the new one: both read as one history."""
    from torchx.util.journal import RunEnded, RunSubmitted, RunSubmitting, record

    store = ManagedStore(str(tmp_path))
    store.create("j", {"id": "j", "options": ManagedOptions(["local_cwd"]).as_json()})
    old = [
        '{"ev": "submitting", "n": 0, "target": "local_cwd", "name": "j-0", "t": 1.0}',
        '{"ev": "started", "n": 0, "handle": "local_cwd://s/j-0", "t": 1.5}',
        '{"ev": "ended", "n": 0, "state": "FAILED", "cause": "NODE_FAILURE", "exit_code": null, "reason": "lost", "t": 2}',
        '{"ev": "submitting", "n": 1, "target": "local_cwd", "name": "j-1", "t": 3.0}',
        '{"ev": "started", "n": 1, "handle": "local_cwd://s/j-1", "t": 3.5}',
    ]
    (tmp_path / "j" / "events.jsonl").write_text("".join(line + "\n" for line in old))
    st = store.load("j")
    assert [(a.n, a.handle, a.state, a.cause, a.reason) for a in st.attempts] == [
        (0, "local_cwd://s/j-0", "FAILED", "NODE_FAILURE", "lost"),
        (1, "local_cwd://s/j-1", None, None, ""),
    ]
    store.append("j", record(RunEnded(1, "FAILED", "exited with code 1", "APP_ERROR", 1, 4.0)), sync=True)
    store.append("j", record(RunSubmitting(2, "j-2", "local_cwd", 5.0)), record(RunSubmitted(2, "local_cwd://s/j-2")))
    st = store.load("j")
    assert [(a.n, a.state, a.exit_code, a.reason) for a in st.attempts] == [
        (0, "FAILED", None, "lost"),
        (1, "FAILED", 1, "exited with code 1"),
        (2, None, None, ""),
    ]
    assert st.last is not None and st.last.handle == "local_cwd://s/j-2" and st.last.started == 5.0
