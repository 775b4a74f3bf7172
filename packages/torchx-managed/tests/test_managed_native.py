"""Choosing where a managed job recovers (``controller``), and the refusals, one line each,
before anything is submitted."""

from __future__ import annotations

from typing import Any

import pytest
from torchx.schedulers.capabilities import SchedulerCapabilities
from torchx.schedulers.recovery import RecoveredAttempt
from torchx.specs.runopts import InvalidRunConfigException, runopts
from torchx.testing import run_cli
from torchx.testing.procs import use_procs
from torchx_managed import native
from torchx_managed.options import ManagedOptions, check, run_opts

INSTALLED = {"slurm": None, "local_cwd": None, "managed": None}

ECHO = """from torchx.specs import AppDef, Role


def echo() -> AppDef:
    return AppDef("echo", [Role("echo", image=".", entrypoint="echo", args=["hi"])])
"""


class _Target:
    def __init__(self, recovery: bool) -> None:
        self.capabilities = SchedulerCapabilities(recovery=recovery)


def _opts(**cfg: Any) -> ManagedOptions:
    return check(run_opts().resolve(cfg), INSTALLED, lambda _name: runopts())[0]


@pytest.mark.parametrize(
    ("cfg", "match"),
    [
        ({"controller": "bogus"}, "controller=bogus: neither auto, native, local nor an installed scheduler"),
        ({"controller": "managed"}, "controller=managed: neither"),
        ({"controller": "slurm"}, "controller=slurm needs journal=PATH"),
        ({"controller": "slurm", "journal": "rel/dir"}, "journal=rel/dir: give an absolute path"),
        ({"journal": "/proc/torchx-journal"}, "journal=/proc/torchx-journal: cannot make the directory"),
    ],
)
def test_a_bad_controller_or_journal_is_one_line(cfg: dict[str, Any], match: str) -> None:
    with pytest.raises(InvalidRunConfigException, match=match) as e:
        _opts(targets=["slurm"], **cfg)
    assert "\n" not in str(e.value)


def test_a_journal_is_made_and_names_the_job_from_anywhere(tmp_path: Any) -> None:
    from torchx_managed.journal import ManagedStore, located_id

    opts = _opts(targets=["slurm"], controller="slurm", journal=str(tmp_path / "shared" / "journal"))
    assert opts.journal == str(tmp_path / "shared" / "journal") and (tmp_path / "shared" / "journal").is_dir()
    app_id = located_id("train-1a2b3c4d", opts.journal)
    assert "/" not in app_id and app_id.startswith("train-1a2b3c4d@%2F")
    assert ManagedStore(str(tmp_path / "elsewhere")).job_dir(app_id) == str(tmp_path / "shared/journal/train-1a2b3c4d")


def test_auto_recovers_inside_one_target_that_can() -> None:
    assert native.wants_native(_opts(targets=["slurm"]), _Target(True))  # type: ignore[arg-type]
    assert not native.wants_native(_opts(targets=["slurm"]), _Target(False))  # type: ignore[arg-type]
    assert not native.wants_native(_opts(targets=["slurm", "local_cwd"]), _Target(True))  # type: ignore[arg-type]
    assert not native.wants_native(_opts(targets=["slurm"], notify="http://127.0.0.1:9/x"), _Target(True))  # type: ignore[arg-type]
    assert not native.wants_native(_opts(targets=["slurm"], controller="local"), _Target(True))  # type: ignore[arg-type]
    on_cluster = _opts(targets=["slurm"], controller="local_cwd", journal="/tmp/torchx-test-journal")
    assert not native.wants_native(on_cluster, _Target(True))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("cfg", "match"),
    [
        ({"targets": ["slurm", "local_cwd"]}, "failover across several targets needs a controller"),
        ({"targets": ["slurm"], "notify": "http://127.0.0.1:9/x"}, "notify needs a controller"),
    ],
)
def test_native_refuses_what_the_target_cannot_express(cfg: dict[str, Any], match: str) -> None:
    with pytest.raises(InvalidRunConfigException, match=match) as e:
        native.wants_native(_opts(controller="native", **cfg), _Target(True))  # type: ignore[arg-type]
    assert "use controller=local" in str(e.value) and "\n" not in str(e.value)


def test_native_ids_name_the_target_and_its_job() -> None:
    app_id = native.native_id("kubernetes", "default:train-x1")
    assert native.is_native(app_id) and not native.is_native("train-3f9a2c1d")
    assert native.split_id(app_id) == ("kubernetes", "default:train-x1")


def test_the_policy_carries_the_budgets() -> None:
    opts = _opts(targets=["slurm"], max_restarts=2, max_recoveries=4, recover_on_exit_codes=["33"])
    policy = native.policy_of(opts, "/shared/ckpt")
    assert (policy.max_restarts, policy.max_recoveries, policy.recover_on_exit_codes) == (2, 4, (33,))
    assert policy.checkpoint_dir == "/shared/ckpt"


def test_an_attempt_shows_as_managed_attempts_do() -> None:
    shown = RecoveredAttempt(1, "FAILED", "APP_ERROR", 3, "exited with code 3", 10.0, 12.0).as_json(
        "slurm://torchx/42", "slurm"
    )
    assert shown == {
        "attempt": 1,
        "handle": "slurm://torchx/42",
        "scheduler": "slurm",
        "state": "FAILED",
        "cause": "APP_ERROR",
        "exit_code": 3,
        "reason": "exited with code 3",
        "started": 10.0,
        "ended": 12.0,
    }


def test_cli_controller_native_on_a_target_that_cannot_recover_submits_nothing(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = use_procs(tmp_path, monkeypatch)
    (tmp_path / "echo.py").write_text(ECHO)
    code, out, err = run_cli(
        "run", "-s", "managed", "-cfg", f"targets={target},controller=native,notify=http://127.0.0.1:9/hook", "echo.py:echo",
        cwd=tmp_path, env={"TORCHX_MANAGED_STATE_DIR": str(tmp_path / "managed")},
    )  # fmt: skip
    assert code != 0
    assert "controller=native: scheduler 'procs' cannot recover jobs by itself; use controller=local" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and not out.strip(), err
    assert not (tmp_path / "managed").exists() or not any((tmp_path / "managed").iterdir())
    assert not (tmp_path / "procs-jobs").exists() or not any((tmp_path / "procs-jobs").iterdir())
