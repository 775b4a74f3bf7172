"""The detached sweep driver: submits a sweep's trials as slots free up (schedulers without
arrays), or watches a native array for ``--fail-fast``.

Run as ``python -m torchx_sweep.driver ROOT SWEEP_ID`` (``torchx sweep`` starts it in its own
session; it outlives the CLI). It holds the sweep's driver lock for its whole life, so at
most one driver runs per sweep, and records every step in the sweep's journal before and
after it happens (see :mod:`torchx_sweep.store`):

* ``submitting`` (with the trial's unique app name) before a submission, ``submitted`` (with
  the handle) after it, ``ended`` when the trial reached a final state. Events are written
  in batches (one ``write`` for the ``submitting`` of every trial about to be submitted,
  one for what followed), always before the step they announce.
* On start (also after being killed) it folds the journal: trials that ended stay ended,
  submitted ones are waited for again, and a trial whose submission was in flight is looked
  up by its app name in the scheduler's ``list`` (adopted if found, else submitted), so no
  trial is lost or run twice.
* One thread, one event loop: at most ``max_parallel`` trials are in flight, watched to their
  end by core's :class:`~torchx.runner.watch.AppWatcher` (an end descriptor where the scheduler
  offers one, else polls from :data:`FIRST_POLL` to :data:`WAIT_INTERVAL`; a status call that
  fails is asked again). Being single-threaded also lets ``local_cwd`` start each
  supervisor as a cheap ``fork`` rather than a fresh interpreter. Where ends come through
  descriptors, up to :data:`SUBMITTERS` forked copies of the loop share the slots (see
  :meth:`Driver._coordinate`), so one submission's ``fsync`` and ``fork`` overlap another's.
* A trial that fails does not stop the others, unless the sweep is ``fail_fast``: then the
  rest are cancelled (a native array: the whole array) and nothing more is submitted.
* ``SIGTERM`` (sent by ``torchx sweep cancel``, after it journals ``cancel``) stops
  submitting and cancels the trials in flight.
"""

from __future__ import annotations

import gc
import logging
import os
import select
import signal
import socket
import sys
import threading
from collections import deque
from typing import Any

from torchx.runner import Runner
from torchx.runner.watch import AppWatcher, Ended, Unknown, drain, listed_names
from torchx.specs.dryrun import AppDryRunInfo
from torchx.specs.roles import NONE, AppDef
from torchx.util import journal
from torchx.util.record import deep_copy

from torchx_sweep import wire
from torchx_sweep.params import trial_argv
from torchx_sweep.store import SweepState, SweepStore
from torchx_sweep.submit import Materializer

logger: logging.Logger = logging.getLogger("torchx_sweep.driver")

#: longest gap (seconds) between status polls of a trial whose scheduler cannot say when it ends
WAIT_INTERVAL = 2.0
#: first gap between status polls (it grows by half each poll up to WAIT_INTERVAL)
FIRST_POLL = 0.25
#: at most this many processes submit a sweep's trials at once (schedulers that tell of ends
#: through a file descriptor, i.e. ``local_cwd``: their submissions wait on fsync and fork)
SUBMITTERS = 4
#: the coordinator of submitters keeps at most this many trials dry-run ahead of their submission
DRYRUN_AHEAD = 64
#: at most this many materialized apps are kept for trials with the same arguments
APP_CACHE = 4096
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
        self.stop = False
        self.stopped = False  # the trials in flight were cancelled after stop was set
        self.in_flight: AppWatcher[int] = AppWatcher(runner, FIRST_POLL, WAIT_INTERVAL, unknown_grace=0.0)
        self.todo: deque[int] = deque()
        self.to_wait: list[tuple[int, str]] = []
        self.pending: list[dict[str, Any]] = []
        self.make: Materializer | None = None
        self.apps: dict[tuple[str, ...], AppDef] = {}  # materialized, by argument list
        self.ready: dict[int, AppDryRunInfo[Any]] = {}  # trials dry-run ahead of their submission
        self.todo_set: set[int] = set()  # the coordinator's todo, for lookups
        #: a submitter's line to its coordinator (None: this process is the only one submitting)
        self.feed: socket.socket | None = None
        self._replies: socket.SocketIO | None = None
        self.exhausted = False  # nothing is left to submit
        self._ends_by_fd = False  # the scheduler tells of ends through file descriptors
        self._wake = -1

    def _journal(self, rec: journal.RunRecord) -> None:
        self.pending.append(journal.record(rec))

    def _flush(self) -> None:
        if self.pending:
            self.store.append(self.sweep_id, *self.pending)
            self.pending = []

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
                    listed = listed_names(self.runner, self.scheduler, self.cfg or None)
                found = listed.get(trial.submitting)
                if found is not None:
                    logger.info("trial %d: adopting %s (submitted before the driver stopped)", trial.index, found)
                    self._journal(journal.RunSubmitted(trial.index, found))
                    self.to_wait.append((trial.index, found))
                    continue
            self.todo.append(trial.index)
        self._flush()

    def request_stop(self) -> None:
        """Stops submitting and cancels the trials in flight (safe to call from a signal handler)."""
        self.stop = True

    def run(self) -> None:
        """Drives the sweep until every trial ended (or it was cancelled / failed fast)."""
        if self.state.cancelled or self.state.fail_fast_hit:
            self.stop = True
        self._plan()
        if self.stop:
            self.todo.clear()
        try:  # ends told through file descriptors (local_cwd): submitters may be forked
            self._ends_by_fd = self.runner.get_scheduler(self.scheduler).capabilities.end_fd
        except Exception:  # not installed: every submission fails and says so
            pass
        width = max(1, int(self.state.spec.get("max_parallel") or 0) or len(self.state.trials))
        workers = min(SUBMITTERS, width, len(self.todo) + len(self.to_wait))
        read_end, self._wake = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        old_wake = signal.set_wakeup_fd(self._wake, warn_on_full_buffer=False)
        try:
            if workers > 1 and self._ends_by_fd and threading.active_count() == 1:
                if not self._coordinate(read_end, workers, width) and not self.stop:
                    logger.error("a submitter died: finishing the sweep from its journal, in this process")
                    self._replan()
                    self._loop(read_end, width, self.to_wait)
            else:
                self._loop(read_end, width, self.to_wait)
        finally:
            signal.set_wakeup_fd(old_wake)
            os.close(read_end)
            os.close(self._wake)
        self._not_submitted(list(self.todo))
        self.pending.append({"ev": "finished"})
        self._flush()

    def _loop(self, wake: int, width: int, to_wait: list[tuple[int, str]]) -> None:
        """The event loop: keeps ``width`` trials in flight while there are any to submit."""
        try:
            for index, handle in to_wait:
                self._watch(index, handle)
            while True:
                if self.stop and not self.stopped:
                    self._cancel_in_flight()
                if not self.stop and not self.exhausted:
                    self._submit_batch(width - len(self.in_flight))
                self._flush()
                if not self.in_flight:
                    if self.exhausted or self.stop:
                        return
                    continue
                self._wait(wake)
        finally:
            self.in_flight.close()

    # ------------------------------------------------------------------ submitters
    def _replan(self) -> None:
        """Plans again from the journal (as a new driver would), with nothing in flight here."""
        self.state = self.store.load(self.sweep_id)
        self.todo.clear()
        self.to_wait = []
        self.ready.clear()
        self.exhausted = False
        self._plan()

    def _coordinate(self, wake: int, workers: int, width: int) -> bool:
        """Forks ``workers`` submitters sharing the ``width`` slots, and hands them trials to submit;
        returns False if one of them died (its trials' fate is then only in the journal).

        Each submitter is this event loop in its own single-threaded process (so it forks each
        ``local_cwd`` supervisor cheaply), with its share of the slots; it asks for trials
        (``n K``: up to K; the answer is a :func:`_frame` of indices with their dry runs, which
        this process makes while idle, empty when none are left) and says
        ``f`` when a trial failed under ``--fail-fast``. Their journal writes are single
        ``O_APPEND`` writes, so they never interleave. A stop (cancel, fail-fast) reaches them
        as ``SIGTERM``; if this process dies, they see the end of their socket, submit nothing
        more and exit once their trials in flight ended.
        """
        self._flush()  # nothing journaled may be inherited (and written again) by a submitter
        order, done = list(self.todo), 0
        self.todo_set = set(order)
        while done < len(order) and len(self.ready) < width:  # the first batch, before anyone asks
            done = self._dryrun_ahead(order, done)
        conns: dict[int, tuple[socket.socket, socket.SocketIO, int]] = {}
        for k in range(workers):
            mine, theirs = socket.socketpair()
            pid = os.fork()
            if pid == 0:  # the submitter
                code = 1
                try:
                    mine.close()
                    for sock, _, _ in conns.values():
                        sock.close()
                    self.feed, self._replies = theirs, theirs.makefile("rb", buffering=0)
                    os.close(wake)  # a wake-up pipe of its own: signals to it must not wake the coordinator
                    os.close(self._wake)
                    wake, self._wake = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
                    signal.set_wakeup_fd(self._wake, warn_on_full_buffer=False)
                    # what exists now is never traversed by the collector here or in the supervisors
                    # forked from here: those pages stay shared instead of being copied (~20% less CPU)
                    gc.freeze()
                    self._loop(wake, width // workers + (k < width % workers), self.to_wait[k::workers])
                    code = 0
                except BaseException:
                    logger.exception("submitter %d failed", k)
                finally:
                    self._flush()
                    os._exit(code)
            theirs.close()
            conns[mine.fileno()] = (mine, mine.makefile("rb", buffering=0), pid)
        self.to_wait = []
        all_well = True
        while conns:
            if self.stop and not self.stopped:
                self.stopped = True
                for _, _, pid in conns.values():
                    _signal(pid, signal.SIGTERM)
            ahead = done < len(order) and len(self.ready) < DRYRUN_AHEAD and not self.stop
            ready, _, _ = select.select([wake, *conns], [], [], 0 if ahead else None)
            if not ready and ahead:  # idle: dry-run the next trial (no supervisor forks here to slow it)
                done = self._dryrun_ahead(order, done)
                continue
            drain(wake)
            for fd in ready:
                if fd == wake:
                    continue
                sock, lines, pid = conns[fd]
                try:
                    line = lines.readline()
                except ConnectionResetError:  # it died with an answer of ours unread: as its end
                    line = b""
                if not line:
                    del conns[fd]
                    sock.close()
                    all_well = os.waitpid(pid, 0)[1] == 0 and all_well
                elif line.startswith(b"f"):
                    self.stop = True
                elif line.startswith(b"n"):
                    take = 0 if self.stop else int(line.split()[1])
                    batch = [self.todo.popleft() for _ in range(min(take, len(self.todo)))]
                    self.todo_set.difference_update(batch)
                    try:
                        sock.sendall(wire.frame([(i, self.ready.pop(i, None)) for i in batch]))
                    except OSError:  # it died: its end is read next; the batch is replanned from the journal
                        pass
        return all_well

    def _take(self, slots: int) -> list[int]:
        """Up to ``slots`` trials to submit: from the queue, or from the coordinator (a submitter)."""
        if self.feed is None or self._replies is None:
            batch = [self.todo.popleft() for _ in range(min(slots, len(self.todo)))]
        else:
            try:
                self.feed.sendall(f"n {slots}\n".encode())
                items = wire.read_frame(self._replies)
            except (OSError, EOFError):  # the coordinator is gone: submit nothing more
                items = []
            batch = [index for index, _ in items]
            self.ready.update((index, info) for index, info in items if info is not None)
        if len(batch) < slots:
            self.exhausted = True
        return batch

    def _not_submitted(self, indices: list[int]) -> None:
        """Journals trials that will not be submitted (the sweep was cancelled or failed fast)."""
        if not indices:
            return
        why = "the sweep was cancelled" if self.store.load(self.sweep_id).cancelled else "a trial failed (--fail-fast)"
        for index in indices:
            self._journal(journal.RunEnded(index, "CANCELLED", f"not submitted: {why}"))

    # ------------------------------------------------------------------ submitting
    def _submit_batch(self, slots: int) -> None:
        """Submits up to ``slots`` trials: their ``submitting`` first (one write), then each."""
        batch = self._take(slots) if slots > 0 else []
        if not batch:
            return
        trials = self.state.spec["trials"]
        self.store.append(self.sweep_id, *(journal.record(journal.RunSubmitting(i, trials[i]["name"])) for i in batch))
        for n, index in enumerate(batch):
            if self.stop:  # a failed submission with --fail-fast, or SIGTERM: the rest are not submitted
                self._not_submitted(batch[n:])
                return
            handle = self._submit(index)
            if handle is not None:
                self._journal(journal.RunSubmitted(index, handle))
                self._watch(index, handle)

    def _dryrun(self, index: int) -> AppDryRunInfo[Any]:
        """The request of trial ``index``: its app (component materialized, typed checking) dry-run."""
        spec = self.state.spec
        trial = spec["trials"][index]
        if self.make is None:
            self.make = Materializer(str(spec["component"]), spec.get("component_defaults"))
        argv = tuple(trial_argv(trial["args"], spec["args"]))
        app = self.apps.get(argv)
        if app is None:  # once per distinct argument set (a random sweep may draw one twice)
            if len(self.apps) >= APP_CACHE:
                self.apps.clear()
            app = self.apps[argv] = self.make.app(list(argv))
        # a copy: Runner.dryrun writes the job's variables and the built image into the app it is
        # given (as TorchX), and the shared app is the base of every trial with these arguments
        trial_app = deep_copy(app)
        trial_app.name = trial["name"]
        return self.runner.dryrun(
            trial_app, self.scheduler, self.cfg, spec.get("workspace"), parent_run_id=str(spec["handle"])
        )

    def _dryrun_ahead(self, order: list[int], done: int) -> int:
        """Dry-runs the next trial of ``order`` (from position ``done``) that is still to be handed
        out; returns the new position. A trial whose dry run fails is left to its submitter, which
        tries again and journals why it failed."""
        while done < len(order):
            index = order[done]
            done += 1
            if index in self.todo_set:
                try:
                    self.ready[index] = self._dryrun(index)
                except (Exception, SystemExit):
                    pass
                break
        return done

    def _submit(self, index: int) -> str | None:
        try:
            info = self.ready.pop(index, None)
            if info is None:
                info = self._dryrun(index)
            return self.runner.schedule(info)
        except (Exception, SystemExit) as e:
            logger.exception("trial %d: submission failed", index)
            self._journal(journal.RunEnded(index, "FAILED", f"submission failed: {e}"))
            self._failed()
            return None

    # ------------------------------------------------------------------ waiting
    def _watch(self, index: int, handle: str) -> None:
        problem = self.in_flight.add(index, handle)
        if problem is not None:
            logger.warning("trial %d: cannot watch %s for its end (polling it): %s", index, handle, problem)
        if self.stop:
            self._cancel(handle)

    def _wait(self, wake: int) -> None:
        """Blocks until a trial may have ended, a poll is due or a signal came; journals the ends."""
        for event in self.in_flight.wait(wake)[0]:
            if isinstance(event, Unknown):
                logger.warning("trial %d: %s (%s): asking again", event.key, event.why, event.handle)
            elif isinstance(event, Ended):
                desc = event.desc
                state = "UNKNOWN" if desc is None else desc.state.name
                msg = "the scheduler no longer knows the app" if desc is None else desc.msg
                self._journal(journal.RunEnded(event.key, state, "" if msg == NONE else msg))
                if state != "SUCCEEDED":
                    self._failed()

    # ------------------------------------------------------------------ stopping
    def _failed(self) -> None:
        if self.state.spec.get("fail_fast") and not self.stop:
            self.pending.append({"ev": "fail_fast"})
            self.stop = True
            if self.feed is not None:  # a submitter: the coordinator stops the others
                try:
                    self.feed.sendall(b"f\n")
                except OSError:
                    pass

    def _cancel(self, handle: str) -> None:
        try:
            self.runner.cancel(handle)
        except Exception as e:
            logger.warning("cannot cancel %s: %s", handle, e)

    def _cancel_in_flight(self) -> None:
        self.stopped = True
        array = self.state.spec.get("array_handle")
        if array:
            self._cancel(str(array))  # its elements that have not started yet go with it
        for handle in self.in_flight.handles():
            self._cancel(handle)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``python -m torchx_sweep.driver ROOT SWEEP_ID``."""
    from torchx.runner.drivers import drive

    root, *rest = argv if argv is not None else sys.argv[1:]
    store = SweepStore(root)
    return drive(store, rest, lambda sweep_id, runner: Driver(store, sweep_id, runner), logger)


if __name__ == "__main__":
    sys.exit(main())
