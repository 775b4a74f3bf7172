"""The detached sweep driver: submits a sweep's trials as slots free up, for schedulers without arrays.

Run as ``python -m torchx_sweep.driver ROOT SWEEP_ID`` (``torchx sweep`` starts it in its own
session; it outlives the CLI). It holds the sweep's driver lock for its whole life, so at
most one driver runs per sweep, and records every step in the sweep's journal before and
after it happens (see :mod:`torchx_sweep.store`):

* ``submitting`` (with the trial's unique app name) before a submission, ``submitted`` (with
  the handle) after it, ``ended`` when the trial reached a final state.
* On start (also after being killed) it folds the journal: trials that ended stay ended,
  submitted ones are waited for again, and a trial whose submission was in flight is looked
  up by its app name in the scheduler's ``list`` (adopted if found, else submitted), so no
  trial is lost or run twice.
* ``max_parallel`` trials are in flight at once (one worker thread each, blocked in the
  scheduler's ``wait``). A trial that fails does not stop the others, unless the sweep is
  ``fail_fast``: then the rest are cancelled and nothing more is submitted.
* ``SIGTERM`` (sent by ``torchx sweep cancel``, after it journals ``cancel``) stops
  submitting and cancels the trials in flight.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from collections import deque
from typing import Any

from torchx.runner import Runner, get_runner
from torchx.specs.status import AppState

from torchx_sweep.params import trial_argv
from torchx_sweep.store import SweepState, SweepStore
from torchx_sweep.submit import Materializer

logger: logging.Logger = logging.getLogger("torchx_sweep.driver")

#: seconds between status polls for schedulers that cannot tell when an app ends
WAIT_INTERVAL = 2.0
_FINAL = {"SUCCEEDED", "FAILED", "CANCELLED", "UNSUBMITTED"}


class Driver:
    """Runs one sweep's remaining trials to the end (see the module docstring)."""

    def __init__(self, store: SweepStore, sweep_id: str, runner: Runner) -> None:
        self.store = store
        self.sweep_id = sweep_id
        self.runner = runner
        self.state: SweepState = store.load(sweep_id)
        spec = self.state.spec
        self.scheduler = str(spec["scheduler"])
        self.cfg: dict[str, Any] = dict(spec.get("cfg") or {})
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.in_flight: dict[int, str] = {}
        self.todo: deque[int] = deque()
        self.to_wait: deque[tuple[int, str]] = deque()
        self.make: Materializer | None = None

    def _journal(self, **event: Any) -> None:
        self.store.append(self.sweep_id, event)

    def _plan(self) -> None:
        """Sorts the trials into to-wait (submitted), to-submit and done, adopting in-flight submissions."""
        listed: dict[str, str] | None = None
        for trial in self.state.trials:
            if trial.state in _FINAL:
                continue
            if trial.handle is not None:
                self.to_wait.append((trial.index, trial.handle))
                continue
            if trial.submitting:
                if listed is None:
                    listed = self._listed_names()
                found = listed.get(trial.submitting)
                if found is not None:
                    logger.info("trial %d: adopting %s (submitted before the driver stopped)", trial.index, found)
                    self._journal(i=trial.index, ev="submitted", handle=found)
                    self.to_wait.append((trial.index, found))
                    continue
            self.todo.append(trial.index)

    def _listed_names(self) -> dict[str, str]:
        try:
            return {a.name: a.app_handle for a in self.runner.list(self.scheduler, self.cfg or None) if a.name}
        except Exception as e:  # a scheduler that cannot list: in-flight trials are submitted again
            logger.warning("cannot list %s apps to find in-flight trials: %s", self.scheduler, e)
            return {}

    def run(self) -> None:
        """Drives the sweep until every trial ended (or it was cancelled / failed fast)."""
        if self.state.cancelled or self.state.fail_fast_hit:
            self.stop.set()
        self._plan()
        if self.stop.is_set():
            self.todo.clear()
        width = int(self.state.spec.get("max_parallel") or 0) or len(self.state.trials)
        workers = [threading.Thread(target=self._work, daemon=True) for _ in range(max(1, width))]
        for w in workers:
            w.start()
        while any(w.is_alive() for w in workers):
            if self.stop.wait(0.2):
                self._cancel_in_flight()
                for w in workers:
                    w.join()
                break
        why = "the sweep was cancelled" if self.store.load(self.sweep_id).cancelled else "a trial failed (--fail-fast)"
        for index in self.todo:
            self._journal(i=index, ev="ended", state="CANCELLED", msg=f"not submitted: {why}")
        self._journal(ev="finished")

    def _next(self) -> tuple[int, str | None] | None:
        with self.lock:
            if self.to_wait:
                return self.to_wait.popleft()
            if self.todo and not self.stop.is_set():
                return self.todo.popleft(), None
            return None

    def _work(self) -> None:
        while True:
            item = self._next()
            if item is None:
                return
            index, handle = item
            if handle is None:
                handle = self._submit(index)
                if handle is None:
                    continue
            with self.lock:
                self.in_flight[index] = handle
            if self.stop.is_set():
                self._cancel(handle)
            status = self.runner.wait(handle, wait_interval=WAIT_INTERVAL)
            with self.lock:
                self.in_flight.pop(index, None)
            state = status.state.name if status is not None else "UNKNOWN"
            msg = status.msg if status is not None else "the scheduler no longer knows the app"
            self._journal(i=index, ev="ended", state=state, msg=msg)
            if state != AppState.SUCCEEDED.name:
                self._failed()

    def _submit(self, index: int) -> str | None:
        spec = self.state.spec
        trial = spec["trials"][index]
        self._journal(i=index, ev="submitting", name=trial["name"])
        try:
            with self.lock:
                if self.make is None:
                    self.make = Materializer(str(spec["component"]))
            app = self.make.app(trial_argv(trial["args"], spec["args"]))
            app.name = trial["name"]
            info = self.runner.dryrun(
                app, self.scheduler, self.cfg, spec.get("workspace"), parent_run_id=str(spec["handle"])
            )
            handle = self.runner.schedule(info)
        except (Exception, SystemExit) as e:
            logger.exception("trial %d: submission failed", index)
            self._journal(i=index, ev="ended", state="FAILED", msg=f"submission failed: {e}")
            self._failed()
            return None
        self._journal(i=index, ev="submitted", handle=handle)
        return handle

    def _failed(self) -> None:
        if self.state.spec.get("fail_fast") and not self.stop.is_set():
            self._journal(ev="fail_fast")
            self.stop.set()

    def _cancel(self, handle: str) -> None:
        try:
            self.runner.cancel(handle)
        except Exception as e:
            logger.warning("cannot cancel %s: %s", handle, e)

    def _cancel_in_flight(self) -> None:
        with self.lock:
            handles = list(self.in_flight.values())
        for handle in handles:
            self._cancel(handle)


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``python -m torchx_sweep.driver ROOT SWEEP_ID``."""
    root, sweep_id = (argv if argv is not None else sys.argv[1:])[:2]
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    store = SweepStore(root)
    with store.driver_lock(sweep_id) as held:
        if not held:
            logger.info("sweep %s already has a driver", sweep_id)
            return 0
        state = store.load(sweep_id)
        with get_runner(name=str(state.spec["session"])) as runner:
            driver = Driver(store, sweep_id, runner)
            signal.signal(signal.SIGTERM, lambda *_: driver.stop.set())
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
            driver.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
