"""The detached driver of one managed job: runs its attempts one after another until the job
succeeds, is cancelled or uses up its budgets.

Run as ``python -m torchx_managed.driver ROOT JOB_ID [--lock-fd N]`` (the ``managed``
scheduler starts it in its own session; it outlives the CLI). It holds the job's driver lock
for its whole life (core's :class:`~torchx.util.durable.DurableStore`), so at most one driver,
and so at most one attempt, runs per job. Every step is journaled (fsync'ed) before and after
it happens (see :mod:`torchx_managed.journal`):

* ``submitting`` (attempt ``n``, its target and unique app name) before a submission,
  ``started`` (its handle) after; ``ended`` (state, cause, exit code) once the target says
  it ended and anything it left running was stopped; ``final`` when the job is done.
* On start (also after being SIGKILLed, or after a machine restart) it folds the journal: an
  attempt that was started is watched again; one whose submission was in flight is looked up
  by its app name in the target's ``list`` (adopted if found, else submitted again), so no
  attempt is lost or run twice.
* Core's :class:`~torchx.runner.watch.AppWatcher` watches the attempt: an end descriptor where
  the target offers one, else polls from :data:`FIRST_POLL` to :data:`WAIT_INTERVAL`.
* ``SIGTERM`` wakes it: after a ``cancel`` event (``torchx cancel``) it cancels the running
  attempt and ends the job CANCELLED; without one it just exits (the next look resumes it).
* An event it cannot write (a full disk) is written again, at growing intervals up to
  :data:`RECORD_RETRY`, until it can; meanwhile the job's ``driver.problem`` says what it cannot
  record, where and why (``torchx status`` shows it), and nothing is done that the journal does
  not show yet. Once it can write again, it blanks the problem and goes on.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import sys
import threading
import time
from typing import Any

from torchx.runner import Runner
from torchx.runner.watch import Answered, AppWatcher, Ended, Unknown, drain, listed_names
from torchx.specs.handles import UnknownSchedulerException
from torchx.specs.status import AppState
from torchx.util import journal
from torchx.util.durable import record_error

from torchx_managed.attempts import attempt_name, dryrun_attempt, end_of, load_app
from torchx_managed.journal import CHECKPOINTS, Attempt, JobState, ManagedStore, next_step, restart_at
from torchx_managed.notify import Notifier, pending

logger: logging.Logger = logging.getLogger("torchx_managed.driver")

#: longest gap (seconds) between status polls of an attempt whose target cannot say when it ends
WAIT_INTERVAL = 1.0
#: first gap between status polls (it grows by half each poll up to WAIT_INTERVAL)
FIRST_POLL = 0.05
#: seconds the target may not know a started attempt (a scheduler briefly unreachable or
#: restarting answers so) before the attempt counts as lost; a target that errors is asked
#: again for as long as it errors, never taken for an ended attempt (core's AppWatcher)
UNKNOWN_GRACE = 30.0
#: longest gap between status polls while the target does not answer
MAX_UNKNOWN_POLL = 15.0
#: how long the driver waits, at its end, for the last notifications to be delivered
NOTIFY_DRAIN = 60.0
#: first wait before writing again an event the disk refused; it doubles up to RECORD_RETRY
FIRST_RECORD_RETRY = 0.2
#: longest wait between tries to write an event the disk refuses (a full disk)
RECORD_RETRY = 5.0


class _Stopped(Exception):
    """Stopped without a cancel (a SIGTERM while an event could not be written; an attempt whose
    scheduler cannot be loaded here): the next look resumes."""


def checkpoint_dir(store: ManagedStore, spec: dict[str, Any]) -> str:
    """The job's TORCHX_CHECKPOINT_DIR: the ``checkpoint_dir`` option, else one in the job's state."""
    given = spec["options"].get("checkpoint_dir")
    return str(given) if given else os.path.join(store.job_dir(spec["id"]), CHECKPOINTS)


class Driver:
    """Runs one managed job's attempts (see the module docstring)."""

    def __init__(self, store: ManagedStore, job_id: str, runner: Runner) -> None:
        self.store = store
        self.job_id = job_id
        self.runner = runner
        self.stop = False
        self.notifier: Notifier | None = None
        self._wake = -1
        self._woken = -1  # the read end of the wake pipe while run() runs
        self._wake_lock = threading.Lock()
        self._problem = False  # a problem is recorded in driver.problem

    def request_stop(self) -> None:
        """Wakes the driver to look at the journal (a cancel) or to exit (safe in a signal handler)."""
        self.stop = True

    def _journal(self, what: str, event: journal.RunRecord | dict[str, Any]) -> None:
        """Appends ``event`` (``what`` names it in messages), fsync'ed; one the disk refuses is
        written again until it is (see the module docstring).

        Raises:
            _Stopped: a stop without a cancel came while it could not be written
        """
        event = journal.record(event) if not isinstance(event, dict) else event
        event = {**event, "t": time.time()} if "t" not in event else event
        delay = FIRST_RECORD_RETRY
        told = ""
        while True:
            try:
                self.store.append(self.job_id, event, sync=True)
            except OSError as e:
                problem = (
                    f"{record_error(what, e)}; its driver tries again every {RECORD_RETRY:g}s and goes on once it can"
                )
                if problem != told:
                    logger.error("%s", problem)
                    self._problem = self.store.report_problem(self.job_id, problem) or self._problem
                    told = problem
                if self.stop:
                    raise _Stopped(problem) from None
                ready, _, _ = select.select([self._woken], [], [], delay)
                if ready:
                    drain(self._woken)
                delay = min(delay * 2, RECORD_RETRY)
                continue
            if self._problem:
                logger.info("recorded %s: the driver goes on", what)
                self.store.clear_problem(self.job_id)
                self._problem = False
            return

    def wake(self) -> None:
        """Wakes the driver's wait to look at the journal (from another thread: a controller)."""
        with self._wake_lock:  # never a write to the number of a closed (reused) descriptor
            if self._wake >= 0:
                try:
                    os.write(self._wake, b"w")
                except BlockingIOError:  # full: a wake is pending anyway
                    pass

    def run(self) -> None:
        """Drives the job until it is final, or until stopped without a cancel. In the main
        thread signals wake it; in another (a controller's), :meth:`wake` does."""
        state = self.store.load(self.job_id)
        url = state.options.notify
        if url:
            self.notifier = Notifier(url, lambda key: self.store.append(self.job_id, {"ev": "notified", "key": key}))
        read_end, self._wake = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._woken = read_end
        self.store.clear_problem(self.job_id)  # a new driver: what stopped the last one is tried again
        main = threading.current_thread() is threading.main_thread()
        old_wake = signal.set_wakeup_fd(self._wake, warn_on_full_buffer=False) if main else -1
        try:
            self._loop(read_end)
        except _Stopped as e:
            logger.info("stopped without a cancel (%s): the job resumes at the next look", e)
        finally:
            if main:
                signal.set_wakeup_fd(old_wake)
            os.close(read_end)
            with self._wake_lock:
                os.close(self._wake)
                self._wake = -1
            if self.notifier is not None:
                self.notifier.offer(pending(self.store.load(self.job_id), str(state.spec["handle"])))
                self.notifier.close(NOTIFY_DRAIN)

    def _loop(self, wake: int) -> None:
        app = None
        while True:
            state = self.store.load(self.job_id)
            if self.notifier is not None:
                self.notifier.offer(pending(state, str(state.spec["handle"])))
            if state.final is not None:
                return
            if self.stop and not state.cancelled:
                logger.info("stopped without a cancel: the job resumes at the next look")
                return
            last = state.last
            if last is not None and last.state is None:
                if last.handle is None:
                    found = self._adopt(last)
                    if found is not None:
                        self._journal(
                            f"the start of attempt {last.n} ({found})",
                            journal.RunSubmitted(last.n, found, last.started),
                        )
                        continue
                    if state.cancelled:  # never submitted, and not to be
                        self._journal(
                            f"the end of attempt {last.n} (CANCELLED)",
                            journal.RunEnded(last.n, "CANCELLED", cause="CANCELLED"),
                        )
                        continue
                else:
                    self._watch(state, last, wake)
                    continue
            else:
                step = next_step(state)
                if step.final is not None:
                    logger.info("job %s: %s (%s)", self.job_id, step.final, step.msg)
                    self._journal(
                        f"the end of the job ({step.final})", {"ev": "final", "state": step.final, "msg": step.msg}
                    )
                    continue
                until = restart_at(state)
                if until is not None and until > time.time():  # a crash loop slows down; a cancel wakes us
                    assert last is not None
                    logger.info("restarting in %.1fs after %s (restart_backoff)", until - time.time(), last.cause)
                    ready, _, _ = select.select([wake], [], [], until - time.time())
                    if wake in ready:
                        drain(wake)
                    continue
                last = Attempt(0 if last is None else last.n + 1, step.target, "", 0.0)
            if app is None:
                app = load_app(state.spec["app"])
            self._submit(state, app, last.n, last.target)

    # ------------------------------------------------------------------ submitting
    def _adopt(self, attempt: Attempt) -> str | None:
        """The handle of the attempt whose submission was in flight when a driver stopped, if the target has it."""
        found = listed_names(self.runner, attempt.target).get(attempt.name)
        if found is not None:
            logger.info("attempt %d: adopting %s (submitted before the driver stopped)", attempt.n, found)
        return found

    def _submit(self, state: JobState, app: Any, n: int, target: str) -> None:
        spec = state.spec
        self._journal(
            f"the submission of attempt {n} to {target}",
            journal.RunSubmitting(n, attempt_name(str(spec["id"]), n), target),
        )
        try:
            info = dryrun_attempt(self.runner, app, spec, n, target, checkpoint_dir(self.store, spec))
            handle = self.runner.schedule(info)
        except (Exception, SystemExit) as e:
            logger.exception("attempt %d: submission to %s failed", n, target)
            self._journal(
                f"the end of attempt {n} (its submission failed)",
                journal.RunEnded(n, "FAILED", f"submission failed: {e}", "NO_CAPACITY"),
            )
            return
        logger.info("attempt %d: %s on %s", n, handle, target)
        self._journal(f"the start of attempt {n} ({handle})", journal.RunSubmitted(n, handle))

    # ------------------------------------------------------------------ waiting
    def _watch(self, state: JobState, attempt: Attempt, wake: int) -> None:
        """Waits until the attempt ended (journals it), the pending timeout passed (cancels it and
        journals NO_CAPACITY) or a signal came (returns to look at the journal)."""
        assert attempt.handle is not None
        opts = state.options
        timeout = opts.pending_timeout
        deadline = None  # a pending timeout fails over to the next target: none on the last one
        if timeout is not None and state.target_index(attempt) < len(opts.targets) - 1:
            deadline = time.monotonic() + attempt.started + timeout - time.time()
        if state.cancelled:
            self._cancel(attempt.handle)
        watcher: AppWatcher[int] = AppWatcher(self.runner, FIRST_POLL, WAIT_INTERVAL, UNKNOWN_GRACE, MAX_UNKNOWN_POLL)
        problem = watcher.add(attempt.n, attempt.handle, deadline)
        if problem is not None:
            logger.warning("cannot watch %s for its end (polling it): %s", attempt.handle, problem)
        try:
            while True:
                events, woken = watcher.wait(wake)
                for event in events:
                    if isinstance(event, Unknown):
                        logger.warning(
                            "attempt %d (%s): %s; asking again, no new attempt", attempt.n, event.handle, event.why
                        )
                        if isinstance(event.error, UnknownSchedulerException):
                            self._unwatchable(attempt, event.error)
                    elif isinstance(event, Answered):
                        logger.info("attempt %d (%s): answered again: %s", attempt.n, event.handle, event.state.name)
                    elif isinstance(event, Ended):
                        return self._ended(attempt, event.desc)
                    else:
                        return self._pending_too_long(attempt, timeout or 0.0)
                if woken:
                    return
        finally:
            watcher.close()

    def _unwatchable(self, attempt: Attempt, error: UnknownSchedulerException) -> None:
        """Records that the attempt's scheduler cannot be loaded where this driver runs (a plugin
        uninstalled under a running job; the attempt may still run) and stops the driver: this
        process never finds the plugin again. ``status`` says why; the next look starts a driver.

        Raises:
            _Stopped: always
        """
        problem = (
            f"attempt {attempt.n} ({attempt.handle}) cannot be watched: {error}; install it where the driver"
            " runs, then any `torchx status` of the job starts its driver again"
        )
        logger.error("%s", problem)
        self._problem = self.store.report_problem(self.job_id, problem) or self._problem
        raise _Stopped(problem)

    def _ended(self, attempt: Attempt, desc: Any) -> None:
        assert attempt.handle is not None
        end = end_of(self.runner, attempt.handle, desc)
        state = "UNKNOWN" if desc is None else desc.state.name
        if state != "SUCCEEDED":
            self._cancel(
                attempt.handle
            )  # what it left running (a lost supervisor's replicas) must not overlap the next
        cause = None if state == "SUCCEEDED" else end.cause.value  # a success has no failure cause
        logger.info("attempt %d: %s, %s (exit code %s) %s", attempt.n, state, cause, end.exit_code, end.reason)
        self._journal(
            f"the end of attempt {attempt.n} ({state})",
            journal.RunEnded(attempt.n, state, end.reason, cause, end.exit_code),
        )

    def _pending_too_long(self, attempt: Attempt, timeout: float) -> None:
        assert attempt.handle is not None
        self._cancel(attempt.handle)
        desc = None
        try:
            desc = self.runner.describe_app(attempt.handle)
        except Exception as e:
            logger.warning("cannot get the status of %s: %s", attempt.handle, e)
        if desc is not None and desc.state == AppState.SUCCEEDED:  # it ran after all
            self._ended(attempt, desc)
            return
        logger.info("attempt %d: still pending after %.0fs: failing over", attempt.n, timeout)
        self._journal(
            f"the end of attempt {attempt.n} (pending too long)",
            journal.RunEnded(
                attempt.n,
                "CANCELLED",
                f"still pending after {timeout:g}s (pending_timeout): cancelled, next target",
                "NO_CAPACITY",
            ),
        )

    def _cancel(self, handle: str) -> None:
        try:
            self.runner.cancel(handle)
        except Exception as e:
            logger.warning("cannot cancel %s: %s", handle, e)


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``python -m torchx_managed.driver ROOT JOB_ID [--lock-fd N]``."""
    from torchx.runner.drivers import drive

    root, *rest = argv if argv is not None else sys.argv[1:]
    store = ManagedStore(root)
    return drive(store, rest, lambda job_id, runner: Driver(store, job_id, runner), logger)


if __name__ == "__main__":
    sys.exit(main())
