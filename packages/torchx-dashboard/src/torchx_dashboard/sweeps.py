"""Sweeps, through torchx-sweep's public API, when it is installed.

A trial's numbers are the numeric metadata its tracker run holds (``AppRun.add_metadata(loss=...)``;
the run id is the trial's app handle) in the trackers the sweep recorded when it was submitted
(not the dashboard's own ``.torchxconfig``), so the page can plot any of them against each parameter.
"""

from __future__ import annotations

import builtins
import importlib.util
import math
from collections.abc import Mapping
from typing import Any

from torchx.runner import Runner

from torchx_dashboard.jobs import BadRequest, Group, NotFound


def available() -> bool:
    """True when ``torchx-sweep`` is installed."""
    return importlib.util.find_spec("torchx_sweep") is not None


class SweepService:
    """Lists sweeps and reads one with its trials and their tracked numbers.

    Args:
        runner: asks the schedulers about trials that have not ended
    """

    def __init__(self, runner: Runner) -> None:
        from torchx_sweep.store import SweepStore

        self.runner = runner
        self.store = SweepStore()

    def list(self) -> list[dict[str, Any]]:
        """Every stored sweep, newest first: handle, state, component, scheduler, mode, trial counts."""
        from torchx_sweep.api import Sweep

        out: list[dict[str, Any]] = []
        for sweep_id in reversed(self.store.sweep_ids()):
            try:
                status = Sweep(sweep_id, self.runner, self.store).status()
            except Exception as e:
                out.append({"id": sweep_id, "handle": None, "state": "UNKNOWN", "error": str(e)})
                continue
            counts: dict[str, int] = {}
            for trial in status["trials"]:
                counts[trial["state"]] = counts.get(trial["state"], 0) + 1
            out.append(
                {
                    "id": sweep_id,
                    "handle": status["handle"],
                    "state": status["state"],
                    "component": status["component"],
                    "scheduler": status["scheduler"],
                    "mode": status["mode"],
                    "trials": len(status["trials"]),
                    "states": counts,
                }
            )
        return out

    def groups(self) -> builtins.list[Group]:
        """Each stored sweep as a row of the job list with its submitted trials nested under it
        (from the sweep's record: no scheduler is asked)."""
        from torchx_sweep.api import rollup

        out = []
        for sweep_id in self.store.sweep_ids():
            try:
                state = self.store.load(sweep_id)
            except Exception:  # a sweep that cannot be read is shown (with why) on the sweeps page
                continue
            spec = state.spec
            recorded = {t.handle: t.state for t in state.trials if t.handle}
            unsubmitted: list[str] = [t.state for t in state.trials if not t.handle]

            def sweep_state(
                listed: Mapping[str, str],
                recorded: dict[str, str] = recorded,
                rest: list[str] = unsubmitted,
                cancelled: bool = state.cancelled,
            ) -> str:
                return rollup([*{**recorded, **listed}.values(), *rest], cancelled)

            row = {
                "handle": spec["handle"],
                "scheduler": spec["scheduler"],
                "app_id": sweep_id,
                "name": f"sweep {spec['component']}",
                "kind": "sweep",
                "submitted": spec.get("created"),
            }
            out.append(Group(row, list(recorded), sweep_state))
        return out

    def get(self, sweep: str) -> dict[str, Any]:
        """One sweep (by handle ``sweep://SESSION/ID`` or id) with its trials, the swept parameters,
        each trial's tracked numbers (``metrics``) and the names of those numbers.

        Raises:
            BadRequest: not a sweep handle
            NotFound: no such sweep
        """
        from torchx_sweep.api import Sweep
        from torchx_sweep.metrics import recorded_trackers
        from torchx_sweep.params import SweepSpecError
        from torchx_sweep.store import UnknownSweepError

        try:
            one = Sweep(sweep, self.runner, self.store)
            status = one.status()
            spec = self.store.load(one.sweep_id).spec
        except SweepSpecError as e:
            raise BadRequest(str(e)) from None
        except UnknownSweepError as e:
            raise NotFound(str(e)) from None
        params: list[str] = []
        names: set[str] = set()
        trackers = recorded_trackers(spec)
        for trial in status["trials"]:
            for key in trial["args"]:
                if key not in params:
                    params.append(key)
            metrics = _numbers(trackers, trial["handle"]) if trial["handle"] else {}
            trial["metrics"] = metrics
            names.update(metrics)
        status["id"] = sweep.rsplit("/", 1)[-1]
        status["params"] = params
        status["metric_names"] = sorted(names)
        return status


def _numbers(trackers: list[Any], handle: str) -> dict[str, float]:
    """The numeric metadata of run ``handle`` in the trackers (numbers written as text count too)."""
    found: dict[str, float] = {}
    for tracker in trackers:
        try:
            metadata = tracker.metadata(handle)
        except Exception:  # a run that recorded nothing (or a tracker that is down) has no numbers
            continue
        for key, value in metadata.items():
            if isinstance(value, bool):
                continue
            try:
                number = float(value)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                continue
            if math.isfinite(number):
                found[key] = number
    return found
