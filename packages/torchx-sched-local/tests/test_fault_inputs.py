"""Fault injection, issue 20: bad input to ``local_cwd`` is refused at the dry run, in one line.

Float run options that are not finite or are negative (point 7); small ones (point 10); what
``exec`` cannot pass (NUL bytes, point 2).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from torchx.specs import AppState
from torchx.specs.runopts import InvalidRunConfigException
from torchx.testing import command_app, eventually, run_cli
from torchx_sched_local.local_scheduler import LocalScheduler


@pytest.mark.parametrize("value", [float("inf"), float("nan"), float("-inf"), -1.0, "inf", "nan", "-0.5"])
def test_float_run_options_must_be_finite_and_not_negative(sched: LocalScheduler, value: object) -> None:
    with pytest.raises(InvalidRunConfigException, match="stop_grace_period.*(finite number|not be negative)"):
        sched.submit_dryrun(command_app("true"), {"stop_grace_period": value})  # type: ignore[dict-item]


def _component(cwd: Path) -> None:
    """``comp.py:one``: one replica running ``echo`` with the component's arguments."""
    (cwd / "comp.py").write_text(
        "import torchx.specs as specs\n\n\ndef one(*args: str) -> specs.AppDef:\n"
        '    """One echo."""\n'
        '    return specs.AppDef("one", [specs.Role("r", image=".", entrypoint="echo", args=list(args))])\n'
    )


@pytest.mark.parametrize("value", ["inf", "nan", "-1"])
def test_float_run_options_on_the_cli_are_one_line(isolated: Path, value: str) -> None:
    _component(isolated)
    proc = run_cli("run", "-s", "local_cwd", "-cfg", f"stop_grace_period={value}", "comp.py:one")
    assert proc.returncode == 1
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("torchx: error: run option 'stop_grace_period'"), line


def test_a_zero_grace_period_cancels_at_once(sched: LocalScheduler) -> None:
    app_id = sched.submit(command_app("sh", "-c", "trap '' TERM; sleep 300"), {"stop_grace_period": 0.0})
    eventually(lambda: (sched.describe(app_id) or sched).state == AppState.RUNNING)  # type: ignore[union-attr]
    sched.cancel(app_id)
    desc = sched.describe(app_id)
    assert desc is not None and desc.state == AppState.CANCELLED, desc.msg


# ---------------------------------------------------------------- point 10: small ones


def test_env_values_may_hold_equals_signs(isolated: Path) -> None:
    (isolated / "envy.py").write_text(
        "import torchx.specs as specs\n\n\n"
        "def envy(env: dict[str, str] | None = None) -> specs.AppDef:\n"
        '    """Prints $A and $B."""\n'
        '    role = specs.Role("r", image=".", entrypoint="sh", args=["-c", \'echo "[$A][$B]"\'], env=env or {})\n'
        '    return specs.AppDef("envy", [role])\n'
    )
    proc = run_cli("run", "-s", "local_cwd", "envy.py:envy", "--env", "A=x=y,B==z=")
    assert proc.returncode == 0, proc.stderr
    assert "[x=y][=z=]" in proc.stdout, proc.stdout


def test_app_ids_never_match_with_a_trailing_newline(sched: LocalScheduler) -> None:
    app_id = sched.submit(command_app("true"), {})
    assert sched.wait(app_id, timeout=30) is not None
    assert sched.describe(app_id + "\n") is None
    assert not sched.exists(app_id + "\n")
    proc = run_cli("status", f"local_cwd://test/{app_id}\n", env={"TORCHX_LOCAL_STATE_DIR": sched.store.root})
    assert proc.returncode != 0
    assert "SUCCEEDED" not in proc.stdout


@pytest.mark.parametrize("since", ["99999999999999999999", "-99999999999", "1e300", "9999999d", "nan"])
def test_since_out_of_range_is_said_in_user_terms(sched: LocalScheduler, since: str) -> None:
    app_id = sched.submit(command_app("echo", "hi"), {})
    assert sched.wait(app_id, timeout=30) is not None
    handle = f"local_cwd://test/{app_id}"
    proc = run_cli("log", "--since", since, handle, env={"TORCHX_LOCAL_STATE_DIR": sched.store.root})
    assert proc.returncode == 1
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(f"torchx: error: time {since!r} is out of range"), line
    for word in ("Python int", "year 0", "OverflowError", "Traceback"):
        assert word not in proc.stderr


def test_cancel_reports_the_state_the_job_really_ended_in(sched: LocalScheduler) -> None:
    env = {"TORCHX_LOCAL_STATE_DIR": sched.store.root}
    done = sched.submit(command_app("true"), {})
    assert sched.wait(done, timeout=30) is not None
    proc = run_cli("cancel", f"local_cwd://test/{done}", env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == f"local_cwd://test/{done} had already ended: SUCCEEDED"
    running = sched.submit(command_app("sleep", "300"), {})
    eventually(lambda: (sched.describe(running) or sched).state == AppState.RUNNING)  # type: ignore[union-attr]
    proc = run_cli("cancel", f"local_cwd://test/{running}", env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == f"cancelled local_cwd://test/{running}"


# ---------------------------------------------------------------- point 2: what exec cannot carry


@pytest.mark.parametrize(
    "where",
    [
        {"entrypoint": "ec\0ho"},
        {"args": ["ok", "b\0d"]},
        {"env": {"X": "a\0b"}},
        {"env": {"A=B": "v"}},
        {"env": {"": "v"}},
    ],
    ids=["entrypoint", "argument", "env-value", "env-name-equals", "env-name-empty"],
)
def test_what_exec_cannot_pass_is_refused_at_dry_run(sched: LocalScheduler, where: dict[str, object]) -> None:
    from torchx.specs import AppDef, Role

    role = Role("r", image=".", **{"entrypoint": "echo", **where})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="(NUL byte|cannot be passed to a process)"):
        sched.submit_dryrun(AppDef("nul", [role]), {})
    assert sched.list() == []


def test_nul_on_the_cli_is_one_line(isolated: Path) -> None:
    (isolated / "nul.py").write_text(
        "import torchx.specs as specs\n\n\ndef nul() -> specs.AppDef:\n"
        '    """An argument exec cannot pass."""\n'
        '    return specs.AppDef("nul", [specs.Role("r", image=".", entrypoint="echo", args=["a\\0b"])])\n'
    )
    proc = run_cli("run", "-s", "local_cwd", "nul.py:nul")
    assert proc.returncode == 1
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("torchx: error: role 'r': argument 0 'a\\x00b' contains a NUL byte"), line
