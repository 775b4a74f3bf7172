"""Fault injection, issue 20: bad input to ``local_cwd`` is refused at the dry run, in one line.

Float run options that are not finite or are negative (point 7).
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
    log = Path(sched.store.job_dir(app_id), "supervisor.log")
    assert desc is not None and desc.state == AppState.CANCELLED, (desc.msg, log.exists() and log.read_text())
