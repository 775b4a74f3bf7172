"""The mark of a job that recovers inside its scheduler (:data:`RECOVERY_MARK`,
:func:`policy_mark`) and ``Scheduler.recovery_list``'s default (one look per job)."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

import pytest
from torchx.schedulers.api import DescribeAppResponse, ListAppResponse, Scheduler
from torchx.schedulers.capabilities import SchedulerCapabilities, UnsupportedFeatureError
from torchx.schedulers.recovery import RECOVERY_MARK, AttemptLog, RecoveryPolicy, policy_mark
from torchx.specs.dryrun import AppDryRunInfo
from torchx.specs.roles import AppDef
from torchx.specs.status import AppState

#: the characters policy_mark promises (an AWS tag value's, less ``/ + @``)
SAFE = re.compile(r"[A-Za-z0-9_\-=.: ]+")


@pytest.mark.parametrize(
    ("policy", "mark"),
    [
        (RecoveryPolicy(), "max_restarts=0 max_recoveries=10"),
        (
            RecoveryPolicy(max_restarts=3, max_recoveries=0, recover_on_exit_codes=(75, 3, 75), checkpoint_dir="/a b"),
            "max_restarts=3 max_recoveries=0 recover_on_exit_codes=3:75",
        ),
        (
            RecoveryPolicy(restart_backoff=0.5, max_backoff=60, recover_on_exit_codes=(-1,)),
            "max_restarts=0 max_recoveries=10 recover_on_exit_codes=-1 restart_backoff=0.5 max_backoff=60",
        ),
    ],
)
def test_the_mark_says_the_budgets_in_safe_characters(policy: RecoveryPolicy, mark: str) -> None:
    assert policy_mark(policy) == mark
    assert SAFE.fullmatch(mark)
    assert RECOVERY_MARK == "torchx.pytorch.org/recovery"


class Jobs(Scheduler[Mapping[str, Any], AppDef, str]):
    """Jobs by id: True (submitted to recover), False (plain), or an error its records raise."""

    capabilities = SchedulerCapabilities(recovery=True)

    def __init__(self, jobs: dict[str, bool | Exception]) -> None:
        super().__init__("fake", "t")
        self.jobs = jobs

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, Any]) -> AppDryRunInfo[str]:
        raise NotImplementedError

    def schedule(self, dryrun_info: AppDryRunInfo[str]) -> str:
        raise NotImplementedError

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        return None

    def list(self, cfg: Mapping[str, Any] | None = None) -> list[ListAppResponse]:
        return [ListAppResponse(app_id, AppState.RUNNING, name=app_id) for app_id in self.jobs]

    def _cancel_existing(self, app_id: str) -> None:
        raise NotImplementedError

    def recovery_attempts(self, app_id: str) -> AttemptLog | None:
        kind = self.jobs[app_id]
        if isinstance(kind, Exception):
            raise kind
        return AttemptLog() if kind else None


def test_the_default_keeps_the_jobs_with_attempt_records_and_passes_over_errors(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sched = Jobs({"a": True, "b": False, "c": OSError("records gone\nmore"), "d": True})
    with caplog.at_level(logging.WARNING):
        assert [app.app_id for app in sched.recovery_list()] == ["a", "d"]
    assert "skipped fake job c: records gone" in caplog.text and "more" not in caplog.text


def test_a_scheduler_that_cannot_recover_has_no_such_list() -> None:
    sched = Jobs({"a": True})
    sched.capabilities = SchedulerCapabilities()
    with pytest.raises(UnsupportedFeatureError, match="cannot recover jobs by itself"):
        sched.recovery_list()
