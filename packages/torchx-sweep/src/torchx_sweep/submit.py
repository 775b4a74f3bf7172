"""Starting a sweep: materialize every trial (all checked before anything runs), then submit
them as one native job array when the scheduler has arrays, else hand them to a detached driver.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from torchx.runner import Runner
from torchx.runner.api import configured_trackers
from torchx.schedulers import submission
from torchx.specs.dryrun import AppDryRunInfo
from torchx.specs.handles import make_app_handle
from torchx.specs.roles import AppDef
from torchx.specs.runopts import CfgVal

from torchx_sweep.params import SweepSpecError, Trial, arg_text, grid, trial_argv
from torchx_sweep.store import SweepStore

SCHEME = "sweep"


def sweep_handle(session: str, sweep_id: str) -> str:
    """``sweep://<session>/<id>``."""
    return make_app_handle(SCHEME, session, sweep_id)


def parse_sweep_handle(text: str) -> tuple[str, str]:
    """``(session, id)`` of a sweep handle; a bare id gives session ``""``.

    Raises:
        SweepSpecError: it is some other scheduler's app handle
    """
    scheme, sep, rest = text.partition("://")
    if not sep:
        return "", text
    session, _, sweep_id = rest.partition("/")
    if scheme != SCHEME or not sweep_id:
        raise SweepSpecError(f"{text!r} is not a sweep handle: expected sweep://SESSION/ID (as `torchx sweep` printed)")
    return session, sweep_id


def trial_app_name(name: str, sweep_id: str, index: int) -> str:
    """A trial's app name: the component's, then the sweep's id and the trial index (unique, findable)."""
    return f"{name}-{sweep_id.rsplit('-', 1)[-1]}-{index}"


def new_sweep_id(component: str) -> str:
    """``<component's last name part>-<8 hex>``, e.g. ``booth-3f9a2c1d``."""
    fn = component.rsplit(":", 1)[-1] if ":" in component else component.rsplit(".", 1)[-1]
    base = "".join(c if c.isalnum() else "-" for c in fn.lower()).strip("-") or "sweep"
    return f"{base[:24]}-{uuid.uuid4().hex[:8]}"


@dataclass
class PreparedSweep:
    """Everything decided before submitting: the trials, their apps and how they run.

    Attributes:
        handle: the sweep's handle
        trials: each trial's swept arguments
        apps: each trial's materialized app (named per :func:`trial_app_name`)
        infos: each trial's dry run (the request it would submit alone)
        array: the one native array request, when the scheduler runs these apps as an array
        defaults: the component's argument defaults every trial got (the driver uses the same)
    """

    handle: str
    sweep_id: str
    trials: list[Trial]
    apps: list[AppDef]
    infos: list[AppDryRunInfo[Any]]
    array: AppDryRunInfo[Any] | None
    defaults: dict[str, str]


def component_defaults(runner: Runner, component: str) -> dict[str, str]:
    """The argument defaults ``torchx run`` would give ``component``: ``[component:NAME]`` of
    ``.torchxconfig`` (as found from here, now), then the runner's own ``component_defaults``."""
    from torchx.runner import config

    own: dict[str, dict[str, str]] = getattr(runner, "_component_defaults", {})  # get_runner(component_defaults=)
    return {**config.get_configs("component", component), **own.get(component, {})}


class Materializer:
    """Makes a component's app from CLI-style arguments, finding the component once.

    Args:
        component: the component's name or ``path:fn``
        defaults: its argument defaults (see :func:`component_defaults`); None reads
            ``[component:NAME]`` from the ``.torchxconfig`` found from the current directory
    """

    def __init__(self, component: str, defaults: dict[str, str] | None = None) -> None:
        from torchx.runner import config
        from torchx.specs.finder import get_component

        self.fn = get_component(component).fn
        self.defaults = dict(defaults) if defaults is not None else config.get_configs("component", component)

    def app(self, argv: list[str]) -> AppDef:
        """The app of ``argv`` (typed checking of every argument).

        Raises:
            ComponentArgError: an argument is missing or has the wrong type
        """
        from torchx.specs.builders import materialize_appdef

        return materialize_appdef(self.fn, argv, self.defaults)


def as_trials(params: Mapping[str, Sequence[object]] | Sequence[Mapping[str, object]]) -> list[Trial]:
    """Trials from a grid (``{"lr": [1e-3, 1e-4]}``: every combination) or a list of argument dicts."""
    if isinstance(params, Mapping):
        from torchx_sweep.params import Param

        return grid([Param(str(k), tuple(arg_text(v) for v in vs)) for k, vs in params.items()])
    return [{str(k): arg_text(v) for k, v in t.items()} for t in params]


def prepare(
    runner: Runner,
    component: str,
    args: Sequence[str],
    trials: list[Trial],
    scheduler: str,
    cfg: Mapping[str, CfgVal] | None,
    max_parallel: int | None,
    workspace: str | None = None,
    use_array: bool = True,
) -> PreparedSweep:
    """Materializes and dry-runs every trial; asks the scheduler for one array request if it has
    arrays (unless ``use_array`` is False: then the driver submits each trial).

    Raises:
        SweepSpecError: a trial's arguments are wrong (which trial, and why); nothing was submitted
    """
    if not trials:
        raise SweepSpecError("the sweep has no trials: give --param, --random N or --trials FILE")
    if max_parallel is not None and max_parallel < 1:
        raise SweepSpecError(f"--max-parallel {max_parallel}: must be at least 1")
    sweep_id = new_sweep_id(component)
    handle = sweep_handle(runner.name(), sweep_id)
    apps: list[AppDef] = []
    infos: list[AppDryRunInfo[Any]] = []
    defaults = component_defaults(runner, component)
    make = Materializer(component, defaults)
    for i, trial in enumerate(trials):
        try:
            app = make.app(trial_argv(trial, args))
            app.name = trial_app_name(app.name, sweep_id, i)
            infos.append(runner.dryrun(app, scheduler, cfg, workspace, parent_run_id=handle))
        except SweepSpecError:
            raise
        except (Exception, SystemExit) as e:  # argparse exits on a bad value
            detail = str(e) if not isinstance(e, SystemExit) else "invalid component arguments (see above)"
            raise SweepSpecError(f"trial {i} {json.dumps(trial)}: {detail}; nothing was submitted") from e
        apps.append(app)
    array = submission.array_dryrun(runner.get_scheduler(scheduler), infos, max_parallel) if use_array else None
    return PreparedSweep(handle, sweep_id, trials, apps, infos, array, defaults)


def start(
    runner: Runner,
    prepared: PreparedSweep,
    component: str,
    args: Sequence[str],
    scheduler: str,
    cfg: Mapping[str, CfgVal] | None,
    max_parallel: int | None,
    fail_fast: bool,
    workspace: str | None = None,
    store: SweepStore | None = None,
) -> str:
    """Records the sweep and submits it (the array now, or the driver); returns the sweep handle."""
    store = store or SweepStore()
    mode = "array" if prepared.array is not None else "driver"
    spec: dict[str, Any] = {
        "id": prepared.sweep_id,
        "handle": prepared.handle,
        "session": runner.name(),
        "component": component,
        "component_defaults": prepared.defaults,
        "args": list(args),
        "scheduler": scheduler,
        "cfg": dict(cfg or {}),
        "workspace": workspace,
        "max_parallel": max_parallel,
        "fail_fast": fail_fast,
        "mode": mode,
        "created": time.time(),
        "cwd": os.getcwd(),
        # the trackers its trials record to (name -> config), read back by whoever shows their metrics
        "trackers": configured_trackers(),
        "trials": [{"args": t, "name": a.name} for t, a in zip(prepared.trials, prepared.apps, strict=True)],
    }
    store.create(spec)
    if prepared.array is not None:
        sched = runner.get_scheduler(scheduler)
        array_id = submission.schedule(sched, prepared.array, runner.name())
        handles = [
            make_app_handle(scheduler, runner.name(), sched.array_element_id(array_id, i))
            for i in range(len(prepared.trials))
        ]
        store.update_spec(
            prepared.sweep_id, array_handle=make_app_handle(scheduler, runner.name(), array_id), handles=handles
        )
    if has_driver(spec):  # a native array with --fail-fast: the driver watches it, cancels it at a failure
        spawn_driver(store, prepared.sweep_id)
    return prepared.handle


def has_driver(spec: Mapping[str, Any]) -> bool:
    """True if the sweep has a driver: it submits the trials (mode ``driver``), or it watches a
    native array to cancel it at the first failure (``fail_fast``)."""
    return spec["mode"] == "driver" or bool(spec.get("fail_fast"))


def driver_argv(store: SweepStore, sweep_id: str) -> list[str]:
    """The sweep driver's command line (after the interpreter)."""
    return ["-m", "torchx_sweep.driver", store.root, sweep_id]


def spawn_driver(store: SweepStore, sweep_id: str) -> int:
    """Starts the sweep's driver as a detached process (its own session); returns its pid."""
    return store.spawn(sweep_id, driver_argv(store, sweep_id))
