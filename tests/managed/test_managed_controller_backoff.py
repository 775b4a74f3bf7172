"""A controller job that fails at once (here: a local_cwd controller whose journal lock cannot
be opened; on a cluster: a journal its nodes cannot reach) is not replaced by every look at a
job: one more is submitted only once ``FAILED_CONTROLLER_BACKOFF`` is up."""

from __future__ import annotations

from pathlib import Path

import pytest
from torchx.runner import get_runner
from torchx.specs import AppState
from torchx.testing.processes import eventually
from torchx_managed import controller
from torchx_managed.controller_record import controller_handle
from torchx_managed.options import ManagedOptions


def test_a_controller_that_failed_at_once_is_not_replaced_by_every_look(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = tmp_path / "journal"
    (journal / controller.CONTROLLER_LOCK).mkdir(parents=True)  # the lock cannot be opened: it exits 1
    opts = ManagedOptions(targets=["local_cwd"], controller="local_cwd", journal=str(journal))
    with get_runner("backoff") as runner:

        def failed(handle: str) -> bool:
            status = runner.status(handle)
            return status is not None and status.state == AppState.FAILED

        first = controller.ensure(runner, "local_cwd", str(journal), opts)
        assert controller_handle(str(journal)) == first
        eventually(lambda: failed(first), 60, 0.1, "the controller job to fail")
        for _ in range(3):  # three looks: no new controller
            assert controller.ensure(runner, "local_cwd", str(journal), opts) == first
        monkeypatch.setattr(controller, "FAILED_CONTROLLER_BACKOFF", 0.0)  # its time is up
        second = controller.ensure(runner, "local_cwd", str(journal), opts)
        assert second != first and controller_handle(str(journal)) == second
        eventually(lambda: failed(second), 60, 0.1, "the second to fail")
