"""``AppWatcher``, the one watch loop of the detached drivers (torchx-managed, torchx-sweep): real
apps on the ``procs`` test scheduler (ends through its end descriptor, or by polling), and a
scheduler whose status call raises or no longer knows the app (the unknown-vs-terminal rule)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from torchx.runner import Runner
from torchx.runner.watch import Answered, AppWatcher, Ended, Event, Overdue, Unknown
from torchx.schedulers.api import DescribeAppResponse
from torchx.specs.status import AppState
from torchx.testing.apps import command_app
from torchx.testing.procs import create_scheduler


def _procs_runner(tmp_path: Path, end_fd: bool = True) -> Runner:
    def factory(session: str, **_: Any) -> Any:
        sched = create_scheduler(session, root=str(tmp_path / "jobs"))
        if not end_fd:  # the same scheduler, as one that cannot tell of ends: polled
            sched.capabilities = type(sched.capabilities)(log_since_until=True, log_streams=frozenset({"combined"}))
        return sched

    return Runner("t", scheduler_factories={"procs": factory})


def _run(runner: Runner, code: str) -> str:
    return runner.run(command_app(sys.executable, "-c", code), "procs")


def _until_ended(watcher: AppWatcher[Any], timeout: float = 30.0) -> list[Event[Any]]:
    seen: list[Event[Any]] = []
    deadline = time.monotonic() + timeout
    while len(watcher) and time.monotonic() < deadline:
        seen += watcher.wait()[0]
    return seen


@pytest.mark.parametrize("end_fd", [True, False], ids=["end-fd", "polled"])
def test_real_apps_are_reported_ended_with_their_final_state(tmp_path: Path, end_fd: bool) -> None:
    with _procs_runner(tmp_path, end_fd) as runner:
        ok, bad = _run(runner, "import time; time.sleep(0.3)"), _run(runner, "raise SystemExit(3)")
        watcher: AppWatcher[str] = AppWatcher(runner, first_poll=0.05, max_poll=0.2)
        assert watcher.add("ok", ok) is None and watcher.add("bad", bad) is None
        assert sorted(watcher.handles()) == sorted([ok, bad])
        seen = _until_ended(watcher)
    ended = {e.key: e.desc.state for e in seen if isinstance(e, Ended) and e.desc is not None}
    assert ended == {"ok": AppState.SUCCEEDED, "bad": AppState.FAILED}
    assert len(watcher) == 0


def test_an_end_descriptor_wakes_the_wait_without_polling(tmp_path: Path) -> None:
    with _procs_runner(tmp_path) as runner:
        handle = _run(runner, "import time; time.sleep(0.5)")
        watcher: AppWatcher[int] = AppWatcher(runner, first_poll=60.0, max_poll=60.0)  # a poll would come too late
        watcher.add(0, handle)
        start = time.monotonic()
        seen = _until_ended(watcher)
        assert time.monotonic() - start < 20
    assert [type(e) for e in seen] == [Ended]


def test_the_wake_descriptor_returns_at_once_and_is_drained(tmp_path: Path) -> None:
    with _procs_runner(tmp_path) as runner:
        handle = _run(runner, "import time; time.sleep(30)")
        read_end, write_end = os.pipe2(os.O_NONBLOCK)
        watcher: AppWatcher[int] = AppWatcher(runner, first_poll=0.05, max_poll=0.05)
        try:
            watcher.add(0, handle)
            os.write(write_end, b"w")
            events, woken = watcher.wait(read_end)
            assert woken and events == []
            with pytest.raises(BlockingIOError):
                os.read(read_end, 1)
        finally:
            watcher.close()
            runner.cancel(handle)
            os.close(read_end)
            os.close(write_end)


class _Flaky:
    """A scheduler whose status call raises (a timeout) ``fail`` times, then answers ``then``."""

    class capabilities:  # what the watcher reads of a scheduler
        end_fd = False

    def __init__(self, fail: int, then: list[AppState | None]) -> None:
        self.fail, self.then = fail, then
        self.calls: list[float] = []

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        self.calls.append(time.monotonic())
        if len(self.calls) <= self.fail:
            raise TimeoutError("the status call timed out")
        state = self.then[min(len(self.calls) - self.fail, len(self.then)) - 1]
        return None if state is None else DescribeAppResponse(app_id=app_id, state=state)

    def close(self) -> None:
        pass


def _flaky_runner(sched: _Flaky) -> Runner:
    return Runner("t", scheduler_factories={"flaky": lambda session, **_: sched})


def test_a_status_call_that_raises_is_unknown_with_back_off_never_an_end() -> None:
    sched = _Flaky(fail=8, then=[AppState.RUNNING, AppState.SUCCEEDED])
    watcher: AppWatcher[int] = AppWatcher(
        _flaky_runner(sched), first_poll=0.05, max_poll=0.05, unknown_grace=0.0, max_unknown_poll=0.4
    )
    watcher.add(7, "flaky://t/app")
    seen = _until_ended(watcher)
    assert [type(e) for e in seen] == [Unknown, Answered, Ended]
    assert "timed out" in seen[0].why and seen[1].state == AppState.RUNNING  # type: ignore[union-attr]
    assert seen[2].desc is not None and seen[2].desc.state == AppState.SUCCEEDED  # type: ignore[union-attr]
    gaps = [b - a for a, b in zip(sched.calls, sched.calls[1:8], strict=False)]
    assert gaps[-1] > 3 * gaps[0]  # asked less and less often while it raises


def test_an_app_the_scheduler_no_longer_knows_ends_only_after_the_grace() -> None:
    sched = _Flaky(fail=0, then=[None, None, AppState.RUNNING, None])
    watcher: AppWatcher[int] = AppWatcher(
        _flaky_runner(sched), first_poll=0.05, max_poll=0.05, unknown_grace=0.3, max_unknown_poll=0.1
    )
    watcher.add(1, "flaky://t/app")
    seen = _until_ended(watcher)
    kinds = [type(e) for e in seen]
    assert kinds == [Unknown, Answered, Unknown, Ended]  # the first unknown spell was shorter than the grace
    assert seen[-1].desc is None  # type: ignore[union-attr]
    assert sched.calls[-1] - sched.calls[3] >= 0.3


def test_a_deadline_passed_before_running_is_overdue() -> None:
    sched = _Flaky(fail=0, then=[AppState.PENDING])
    watcher: AppWatcher[int] = AppWatcher(_flaky_runner(sched), first_poll=5.0, max_poll=5.0)
    watcher.add(1, "flaky://t/app", deadline=time.monotonic() + 0.2)
    start = time.monotonic()
    seen: list[Event[int]] = []
    while not seen:
        seen = watcher.wait()[0]
    # at the deadline, not at the next poll (5 s); the bound leaves room for a loaded machine
    assert [type(e) for e in seen] == [Overdue] and 0.15 < time.monotonic() - start < 3.0
    assert len(watcher) == 1  # still watched: the caller decides
