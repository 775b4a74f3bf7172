"""The Python API: :func:`run_sweep` and the :class:`Sweep` handle object."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from torchx.runner import Runner
from torchx.specs.runopts import CfgVal

from torchx_sweep.store import SweepState, SweepStore
from torchx_sweep.submit import as_trials, driver_argv, has_driver, parse_sweep_handle, prepare, start

_FINAL = ("SUCCEEDED", "FAILED", "CANCELLED", "UNSUBMITTED")


@dataclass
class TrialStatus:
    """One trial as :meth:`Sweep.trials` reports it.

    Attributes:
        index: the trial's position in the sweep
        args: the swept component arguments
        state: an ``AppState`` name
        handle: the trial's app handle (None until submitted)
        msg: the scheduler's message, or why the trial was not submitted
        metric: the tracked metric, when asked for and recorded
    """

    index: int
    args: dict[str, str]
    state: str
    handle: str | None
    msg: str = ""
    metric: object = None

    def as_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "index": self.index,
            "args": self.args,
            "state": self.state,
            "handle": self.handle,
            "msg": self.msg,
            "metric": self.metric,
        }


def rollup(states: Sequence[str], cancelled: bool) -> str:
    """The sweep's state from its trials': RUNNING until every trial ended, then CANCELLED if the
    sweep was cancelled, SUCCEEDED if every trial succeeded, else FAILED."""
    if any(s not in _FINAL for s in states):
        return "RUNNING"
    if cancelled:
        return "CANCELLED"
    return "SUCCEEDED" if all(s == "SUCCEEDED" for s in states) else "FAILED"


class Sweep:
    """A running or finished sweep, by its handle ``sweep://<session>/<id>``.

    Args:
        handle: the sweep handle (or its bare id)
        runner: the runner to query trials with
        store: where sweeps are kept (default: :func:`torchx_sweep.store.default_root`)
    """

    def __init__(self, handle: str, runner: Runner, store: SweepStore | None = None) -> None:
        self.store = store or SweepStore()
        _, self.sweep_id = parse_sweep_handle(handle)
        self.runner = runner

    @property
    def handle(self) -> str:
        """``sweep://<session>/<id>``."""
        return str(self._load().spec["handle"])

    def _load(self) -> SweepState:
        return self.store.load(self.sweep_id)

    @property
    def mode(self) -> str:
        """``array`` (one native job array) or ``driver`` (a detached driver submits the trials)."""
        return str(self._load().spec["mode"])

    def driver_alive(self) -> bool:
        """True while the sweep's driver process runs."""
        return self.store.driver_pid(self.sweep_id) is not None

    def trials(self) -> list[TrialStatus]:
        """Every trial with its current state (asks the scheduler about trials that have not ended)."""
        state = self._load()
        out = []
        for t in state.trials:
            st, msg = t.state, t.msg
            if t.handle is not None and st not in _FINAL:
                status = self.runner.status(t.handle)
                if status is None:
                    st, msg = "UNKNOWN", "the scheduler does not know this trial"
                else:
                    st, msg = status.state.name, status.msg
            elif t.handle is None and st not in _FINAL and (state.cancelled or state.finished):
                st = "CANCELLED"
            out.append(TrialStatus(t.index, t.args, st, t.handle, msg))
        return out

    def status(self) -> dict[str, Any]:
        """``{"handle", "state", "mode", "driver", "trials": [...]}`` (see :meth:`trials`)."""
        state = self._load()
        trials = self.trials()
        driver = None
        if has_driver(state.spec):
            driver = "running" if self.driver_alive() else "finished" if state.finished else "stopped"
        overall = rollup([t.state for t in trials], state.cancelled)
        return {
            "handle": state.spec["handle"],
            "state": overall,
            "mode": state.spec["mode"],
            "scheduler": state.spec["scheduler"],
            "component": state.spec["component"],
            "driver": driver,
            "trials": [t.as_json() for t in trials],
        }

    def resume(self) -> bool:
        """Starts the driver of a sweep that has one (see :func:`~torchx_sweep.submit.has_driver`), work
        left and no driver running; True if started.

        Raises:
            UnsafeSweepError: another user can write the sweep's spec, journal or directory
        """
        state = self._load()
        if not has_driver(state.spec):
            return False
        return self.store.resume(self.sweep_id, driver_argv(self.store, self.sweep_id), state.finished)

    def wait(self, timeout: float | None = None, interval: float = 0.2) -> dict[str, Any]:
        """Blocks until every trial ended (or ``timeout``); restarts a driver that was killed. Returns :meth:`status`."""
        deadline = None if timeout is None else time.monotonic() + timeout
        driven = has_driver(self._load().spec)
        while True:
            if driven and self.driver_alive():  # it journals every end: nothing to read or ask until it is done
                if deadline is not None and time.monotonic() >= deadline:
                    return self.status()
                time.sleep(interval)
                continue
            state = self._load()
            if driven and not state.finished:
                time.sleep(0.05)  # a driver that is starting takes its lock within milliseconds
                if not self.driver_alive() and not self._load().finished:
                    self.resume()
            status = self.status()
            settled = status["driver"] in (None, "finished")  # the driver journals its end last
            if status["state"] not in ("RUNNING", "PENDING") and settled:
                return status
            if deadline is not None and time.monotonic() >= deadline:
                return status
            time.sleep(interval)

    def cancel(self) -> None:
        """Stops every trial: nothing more is submitted, every submitted trial is cancelled."""
        state = self._load()
        self.store.append(self.sweep_id, {"ev": "cancel"})
        pid = self.store.driver_pid(self.sweep_id)
        if pid and pid > 0:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        array = state.spec.get("array_handle")
        if array:
            self.runner.cancel(str(array))
        for t in self._load().trials:
            if t.handle is not None and t.state not in _FINAL:
                self.runner.cancel(t.handle)
        if pid is None and has_driver(state.spec) and not state.finished:
            self.store.append(self.sweep_id, {"ev": "finished"})


def run_sweep(
    runner: Runner,
    component: str,
    args: Sequence[str],
    params: Mapping[str, Sequence[object]] | Sequence[Mapping[str, object]],
    scheduler: str,
    cfg: Mapping[str, CfgVal] | None = None,
    max_parallel: int | None = None,
    fail_fast: bool = False,
    workspace: str | None = None,
    store: SweepStore | None = None,
    use_array: bool = True,
) -> Sweep:
    """Runs ``component`` once per trial on ``scheduler``; returns the :class:`Sweep`.

    Args:
        runner: the runner (its session name is the sweep's)
        component: a component name (``utils.booth``) or ``path/file.py:fn``
        args: component arguments every trial shares (CLI style)
        params: a grid ``{"x1": [0, 1], "x2": [2, 3]}`` (every combination) or a list of
            argument dicts, one per trial
        scheduler: where the trials run; one native array if it has arrays, else a driver
        cfg: run options of ``scheduler``
        max_parallel: at most this many trials at once (None: no limit)
        fail_fast: the first failed trial cancels the rest (on a native array, a driver watches
            its elements and cancels the array)
        workspace: the workspace each trial ships (schedulers with workspaces)
        store: where the sweep is kept (default: ``$TORCHX_SWEEP_STATE_DIR``)
        use_array: False submits each trial through the driver even where the scheduler has arrays

    Component defaults are those ``torchx run`` would apply: ``[component:NAME]`` of
    ``.torchxconfig`` (read here, once, and stored with the sweep, so a driver resumed from
    elsewhere applies the same), then the ``component_defaults`` of ``runner``.

    Raises:
        SweepSpecError: a trial's arguments are invalid; nothing was submitted

    Example::

        from torchx.runner import get_runner
        from torchx_sweep import run_sweep

        with get_runner() as runner:
            sweep = run_sweep(runner, "utils.booth", [], {"x1": [0, 1], "x2": [2, 3]}, "local_cwd")
            print(sweep.wait()["state"])
    """
    trials = as_trials(params)
    prepared = prepare(runner, component, list(args), trials, scheduler, cfg, max_parallel, workspace, use_array)
    handle = start(runner, prepared, component, list(args), scheduler, cfg, max_parallel, fail_fast, workspace, store)
    return Sweep(handle, runner, store)
