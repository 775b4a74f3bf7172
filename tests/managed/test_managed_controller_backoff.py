"""A controller job that fails at once (here: a local_cwd controller whose journal lock cannot
be opened; on a cluster: a journal its nodes cannot reach, a Python without torchx-managed) is
not replaced by every look at a job: one more is submitted only once
``FAILED_CONTROLLER_BACKOFF`` is up, and until then a look at the job says why it failed."""

from __future__ import annotations

from pathlib import Path

import pytest
from torchx.runner import get_runner
from torchx.specs import AppDef, AppState, Role, parse_app_handle
from torchx.testing.processes import eventually
from torchx_managed import controller
from torchx_managed.controller_record import controller_handle
from torchx_managed.options import ManagedOptions


def _broken_journal(tmp_path: Path) -> Path:
    """A journal directory whose controller lock is a directory: a controller exits 1 at once,
    logging that it cannot open the journal."""
    journal = tmp_path / "journal"
    (journal / controller.CONTROLLER_LOCK).mkdir(parents=True)
    return journal


def test_a_controller_that_failed_at_once_is_not_replaced_by_every_look(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = _broken_journal(tmp_path)
    opts = ManagedOptions(targets=["local_cwd"], controller="local_cwd", journal=str(journal))
    with get_runner("backoff") as runner:

        def failed(handle: str) -> bool:
            status = runner.status(handle)
            return status is not None and status.state == AppState.FAILED

        first = controller.ensure(runner, "local_cwd", str(journal), opts)
        assert not first.problem and controller_handle(str(journal)) == first.handle
        eventually(lambda: failed(first.handle), 60, 0.1, "the controller job to fail")
        for _ in range(3):  # three looks: no new controller, each says why
            look = controller.ensure(runner, "local_cwd", str(journal), opts)
            assert look.handle == first.handle
            assert f"its controller {first.handle} failed" in look.problem
            assert "cannot open the journal" in look.problem and "Is a directory" in look.problem
            assert f"torchx log {first.handle}" in look.problem
        monkeypatch.setattr(controller, "FAILED_CONTROLLER_BACKOFF", 0.0)  # its time is up
        second = controller.ensure(runner, "local_cwd", str(journal), opts)
        assert second.handle != first.handle and controller_handle(str(journal)) == second.handle
        assert not second.problem
        eventually(lambda: failed(second.handle), 60, 0.1, "the second to fail")


def test_a_look_at_a_job_whose_controller_failed_says_why(tmp_path: Path) -> None:
    journal = _broken_journal(tmp_path)
    app = AppDef("sleeper", [Role("sleeper", image=str(tmp_path), entrypoint="sleep", args=["30"])])
    cfg = {"targets": "local_cwd", "controller": "local_cwd", "journal": str(journal)}
    with get_runner("backoff") as runner:
        handle = runner.run(app, "managed", cfg)
        try:
            controller_job = controller_handle(str(journal))
            assert controller_job is not None

            def said() -> bool:
                status = runner.status(handle)
                assert status is not None
                return "cannot open the journal" in status.msg

            eventually(said, 60, 0.2, "status to say why the controller failed")
            status = runner.status(handle)
            assert status is not None and status.state == AppState.RUNNING  # the attempt runs on
            assert status.msg.startswith(f"nothing drives the job: its controller {controller_job} failed")
            # a cancel does not wait for a controller that cannot run: this process ends the job
            runner.cancel(handle)
            status = runner.status(handle)
            assert status is not None and status.state == AppState.CANCELLED
            described = runner.get_scheduler("managed").describe(parse_app_handle(handle).app_id)
            assert described is not None
            attempt = described.metadata["attempts"][0]["handle"]
            attempt_status = runner.status(attempt)
            assert attempt_status is not None and attempt_status.state == AppState.CANCELLED
        finally:
            runner.cancel(handle)
