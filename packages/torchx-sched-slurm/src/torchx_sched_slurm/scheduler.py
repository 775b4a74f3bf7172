"""The ``slurm`` scheduler: submits with ``sbatch``, tracks with ``squeue``/``sacct``, stops with ``scancel``.

* **submit**: one script per app (see :mod:`torchx_sched_slurm.script`); the app id is the
  Slurm job id.
* **describe**: one ``squeue`` call while slurmctld still holds the job (also shortly
  after it ended, ``MinJobAge``); once every component ended, ``sacct`` (with the replicas'
  exit codes) when accounting has the rows, else the ``squeue`` view. ``sacct`` alone for
  jobs slurmctld has forgotten.
* **logs**: the per-replica files ``slurm-<job>-<role>-<k>.out|.err`` in the job's working
  directory, which Slurm itself records (``WorkDir``), so nothing is kept on the side.
* **retries**: the whole job is requeued (``scontrol requeue``) while
  ``SLURM_RESTART_COUNT`` is below the smallest ``max_retries`` of the roles.
* **recovery** (``capabilities.recovery``, used by ``torchx-managed``): ``--requeue`` for a lost
  node or a preemption, and a restart loop in the batch script for application errors; the
  attempts are read back from the job's attempt log and ``sacct -D``.
* **job arrays** (``capabilities.job_arrays``): apps of one replica each go out as one
  ``sbatch --array=0-(N-1)%K`` (see :func:`torchx_sched_slurm.script.build_array_script`);
  element ``i`` of array ``J`` has the app id ``J_i``.
"""

from __future__ import annotations

import dataclasses
import getpass
import json
import logging
import os
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

from torchx.schedulers.api import DescribeAppResponse, ListAppResponse
from torchx.schedulers.capabilities import SchedulerCapabilities
from torchx.schedulers.commands import CommandError
from torchx.schedulers.logfiles import FileLogsScheduler
from torchx.schedulers.shell import validate_shell_app
from torchx.specs.dryrun import AppDryRunInfo
from torchx.specs.roles import NONE, AppDef, Role
from torchx.specs.runopts import CfgVal, runopts
from torchx.specs.status import AppState, ReplicaStatus, RoleStatus, aggregate_states, is_terminal
from torchx.workspace.job_dir import JobDirWorkspaceMixin

from torchx_sched_slurm import commands, script
from torchx_sched_slurm.opts import SlurmOpts
from torchx_sched_slurm.parse import (
    SEP,
    Component,
    job_id_key,
    parse_sacct,
    parse_squeue,
    sacct_format,
    squeue_format,
)
from torchx_sched_slurm.states import slurm_state_name, to_app_state

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.schedulers.causes import AttemptEnd
    from torchx.schedulers.recovery import AttemptLog, RecoveryPolicy

logger: logging.Logger = logging.getLogger(__name__)

#: how far back ``list`` looks in the accounting database
LIST_WINDOW = "now-7days"
_JOB_ID = re.compile(r"\d+(_\d+)?")
#: signals the script (or Slurm) stops replicas with after another one failed
_STOP_SIGNALS = frozenset({9, 15})
#: seconds :meth:`SlurmScheduler.end_cause` waits for accounting where slurmctld's view cannot tell
ACCOUNTING_WAIT = 10.0


def _stop_status(comp: Component) -> bool:
    """``squeue``'s exit status of a replica reads as the stop signal (exit code 137/143)."""
    return (comp.exit_code or 0) - 128 in _STOP_SIGNALS


def failed_by_itself(comp: Component) -> bool:
    """The replica ended in a failure of its own, not in a stop: its step FAILED, or (no step
    state yet) an exit code or signal that is not the stop's (SIGTERM/SIGKILL, 128 + either)."""
    if slurm_state_name(comp.state) not in ("COMPLETED", "FAILED"):
        return False
    if comp.step_state:
        return to_app_state(comp.step_state) == AppState.FAILED
    if comp.signal:
        return comp.signal not in _STOP_SIGNALS
    return bool(comp.exit_code) and not _stop_status(comp)


def replica_state(comp: Component, sibling_failed: bool = False) -> AppState:
    """A replica's state: its own outcome once the batch script ended, else the job's state.

    When the script ended (COMPLETED/FAILED) each replica's ``srun`` step tells which one
    failed and which the script stopped because of it (``sacct``: the step's state).
    ``squeue`` has only the exit status: SIGTERM/SIGKILL (``0:15``, ``0:9``) is the stop;
    exit code 143/137 is the stop only when another replica (``sibling_failed``) failed by
    itself, since a replica killed on its node by SIGKILL reads 137 too. Otherwise
    (cancelled, timed out, node failure ...) the job's state is every replica's.
    """
    job_state = to_app_state(comp.state)
    if slurm_state_name(comp.state) not in ("COMPLETED", "FAILED"):
        return job_state
    if comp.step_state:
        step_state = to_app_state(comp.step_state)
        return job_state if step_state == AppState.UNKNOWN else step_state
    if comp.signal in _STOP_SIGNALS or (sibling_failed and _stop_status(comp)):
        return AppState.CANCELLED
    if comp.signal or comp.exit_code:
        return AppState.FAILED
    if comp.exit_code == 0:
        return AppState.SUCCEEDED
    return job_state


def replica_states(comps: Sequence[Component]) -> list[AppState]:
    """:func:`replica_state` of each of one job's components, in order."""
    own = [failed_by_itself(c) for c in comps]
    return [replica_state(c, any(own[:k] + own[k + 1 :])) for k, c in enumerate(comps)]


def _controller_cannot_tell(end: AttemptEnd, failed: list[bool]) -> bool:
    """slurmctld's view cannot say who cancelled a job (the owner, or someone else: KILLED),
    nor which of several replicas that all read SIGKILL/SIGTERM failed first."""
    from torchx.schedulers.causes import EndCause

    if end.cause == EndCause.CANCELLED:
        return True
    return (
        end.cause in (EndCause.KILLED, EndCause.APP_ERROR)
        and end.exit_code != 0
        and len(failed) > 1
        and sum(failed) != 1
    )


def _error_json(comp: Component) -> str:
    info: dict[str, Any] = {"slurm_state": comp.state}
    if comp.step_state:
        info["step_state"] = comp.step_state
    if comp.exit_code is not None:
        info["exit_code"] = comp.exit_code
    if comp.signal:
        info["signal"] = comp.signal
    if comp.reason:
        info["reason"] = comp.reason
    return json.dumps(info)


def _failure_text(comp: Component) -> str:
    what = f"{comp.role}/{comp.replica_id} {slurm_state_name(comp.step_state or comp.state)}"
    if comp.signal:
        return f"{what} (signal {comp.signal})"
    if comp.exit_code is not None:
        return f"{what} (exit code {comp.exit_code})"
    return what


def describe_components(app_id: str, comps: list[Component]) -> DescribeAppResponse:
    """The :class:`DescribeAppResponse` of a job from its components."""
    roles: dict[str, list[ReplicaStatus]] = {}
    workdirs: dict[str, str] = {}
    failed: list[Component] = []
    for comp, state in zip(comps, replica_states(comps), strict=True):
        replica = ReplicaStatus(id=comp.replica_id, state=state, role=comp.role, hostname=comp.node)
        if state == AppState.FAILED:
            replica.structured_error_msg = _error_json(comp)
            failed.append(comp)
        roles.setdefault(comp.role, []).append(replica)
        workdirs.setdefault(comp.role, comp.workdir)
    app_state = aggregate_states(to_app_state(c.state) for c in comps)
    first = comps[0]
    if app_state == AppState.FAILED and failed:
        msg = "; ".join(_failure_text(c) for c in failed[:5]) + (" ..." if len(failed) > 5 else "")
    elif app_state == AppState.PENDING and first.reason:
        msg = f"pending: {first.reason}"
    else:
        msg = slurm_state_name(first.state)
    return DescribeAppResponse(
        app_id=app_id,
        state=app_state,
        num_restarts=first.restarts,
        msg=msg,
        structured_error_msg=_error_json(failed[0]) if failed else NONE,
        metadata={"workdir": first.workdir},
        roles_statuses=[RoleStatus(role, sorted(replicas, key=lambda r: r.id)) for role, replicas in roles.items()],
        roles=[Role(name=role, image=workdirs[role], num_replicas=len(replicas)) for role, replicas in roles.items()],
    )


def list_apps(accounted: list[Component], live: list[Component]) -> list[ListAppResponse]:
    """One entry per torchx job, by job id; slurmctld's view (``live``) wins over accounting's.

    The name is the first role's (Slurm keeps no app name); jobs without a first component
    (``<role>-0`` at offset 0) are not torchx's and are left out.
    """
    jobs: dict[str, list[Component]] = {}
    for comp in accounted:
        jobs.setdefault(comp.app_id, []).append(comp)
    fresh: dict[str, list[Component]] = {}
    for comp in live:
        fresh.setdefault(comp.app_id, []).append(comp)
    jobs.update(fresh)
    return [
        _listed(app_id, comps)
        for app_id, comps in sorted(jobs.items(), key=lambda kv: job_id_key(kv[0]))
        if comps[0].offset == 0 and comps[0].replica_id == 0
    ]


def _listed(app_id: str, comps: list[Component]) -> ListAppResponse:
    """The job's entry: its state, first role's name, and times (the first component submitted and
    started, the last one ended; Slurm's estimates for a job not yet started or ended are left out)."""
    state = aggregate_states(to_app_state(c.state) for c in comps)
    submitted = [c.submitted for c in comps if c.submitted is not None]
    started = [c.started for c in comps if c.started is not None]
    ended = [c.ended for c in comps if c.ended is not None]
    running = state not in (AppState.SUBMITTED, AppState.PENDING, AppState.UNSUBMITTED)
    return ListAppResponse(
        app_id=app_id,
        state=state,
        name=comps[0].role,
        submitted=min(submitted) if submitted else None,
        started=min(started) if running and started else None,
        ended=max(ended) if is_terminal(state) and len(ended) == len(comps) else None,
    )


def own_components(app_id: str, comps: list[Component]) -> list[Component]:
    """The components of job ``app_id``. For a job array's id, its elements, one replica each
    (replica id = task id), so the array reads as one app (accounting's row for the tasks that
    never started is left out once any task has a row of its own)."""
    prefix = f"{app_id}_"
    members = [
        dataclasses.replace(c, app_id=app_id, replica_id=int(c.app_id[len(prefix) :]))
        for c in comps
        if "_" not in app_id and c.app_id.startswith(prefix)
    ]
    return members or [c for c in comps if c.app_id == app_id]


class SlurmScheduler(JobDirWorkspaceMixin, FileLogsScheduler[Mapping[str, CfgVal], AppDef, script.SbatchRequest]):
    """Runs apps on Slurm as heterogeneous jobs, one component per replica.

    Needs the Slurm client commands on PATH and a filesystem shared between this host and
    the nodes for the logs (the job's working directory). ``sacct`` (slurmdbd) is used when
    present; without accounting, jobs are known only while slurmctld holds them.
    """

    capabilities = SchedulerCapabilities(
        log_streams=frozenset({"stdout", "stderr", "combined"}),
        delete=False,
        workspace=True,
        job_arrays=True,
        recovery=True,
    )  # the rest: the defaults

    def __init__(self, session_name: str) -> None:
        super().__init__("slurm", session_name)
        #: job id -> working directory, of the jobs the last :meth:`list` saw (a job's never changes)
        self._workdirs: dict[str, str] = {}

    # ------------------------------------------------------------------ submitting
    def _run_opts(self) -> runopts:
        return SlurmOpts.as_runopts()

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[script.SbatchRequest]:
        opts: SlurmOpts = SlurmOpts.from_cfg(cfg)
        opts.validate()
        validate_shell_app(app)
        return AppDryRunInfo(script.build_script(app, opts), str)

    def submit_array_dryrun(
        self, apps: Sequence[AppDef], cfg: Mapping[str, CfgVal], max_parallel: int | None = None
    ) -> AppDryRunInfo[script.SbatchRequest]:
        """One ``sbatch --array`` script running ``apps[i]`` as task ``i`` (throttled to ``max_parallel``).

        Raises:
            UnsupportedFeatureError: an app has several replicas, or the apps differ in more than argv/env
        """
        opts: SlurmOpts = SlurmOpts.from_cfg(self.run_opts().resolve(cfg))
        opts.validate()
        for app in apps:
            validate_shell_app(app)
        return AppDryRunInfo(script.build_array_script(apps, opts, max_parallel), str)

    def submit_recovery_dryrun(
        self, app: AppDef, cfg: Mapping[str, CfgVal], policy: RecoveryPolicy
    ) -> AppDryRunInfo[script.SbatchRequest]:
        """A job that recovers in Slurm: ``--requeue`` (a lost node, a preemption) and an
        in-job restart loop for application errors (see :func:`script.build_script`)."""
        opts: SlurmOpts = SlurmOpts.from_cfg(cfg)
        opts.validate()
        validate_shell_app(app)
        return AppDryRunInfo(script.build_script(app, opts, policy), str)

    def recovery_attempts(self, app_id: str) -> AttemptLog | None:
        """The attempts the job's batch script logged next to its output (the job's working
        directory, which this host shares with the nodes), each lost one named by ``sacct -D``'s
        record of the requeue (NODE_FAIL, PREEMPTED, ...); None for an unknown job or one that
        does not recover in Slurm (no attempt log: :meth:`schedule` makes it). A job the last
        :meth:`list` saw is not asked about again (its working directory came with it)."""
        from torchx.schedulers.recovery import read_attempt_log

        from torchx_sched_slurm import causes

        workdir = self._workdirs.get(app_id)
        if workdir is None:
            desc = self.describe(app_id)
            if desc is None:
                return None
            workdir = str(desc.metadata.get("workdir") or "")
        try:
            with open(os.path.join(workdir, script.attempt_log(app_id)), encoding="utf-8", errors="replace") as f:
                log = read_attempt_log(f.read())
        except FileNotFoundError:
            return None
        if log.lost:
            proc = commands.run(["sacct", *causes.sacct_args(app_id)], check=False)
            if proc.returncode == 0:
                log.name_lost(causes.requeue_causes(causes.parse_attempts(proc.stdout, app_id)))
        return log

    def array_element_id(self, array_id: str, index: int) -> str:
        """``<array job id>_<index>``."""
        return f"{array_id}_{index}"

    def schedule(self, dryrun_info: AppDryRunInfo[script.SbatchRequest]) -> str:
        """Submits the script with its command line (``sbatch --parsable`` and the job's options);
        returns the job id."""
        req = dryrun_info.request
        if req.workdir:
            os.makedirs(req.workdir, exist_ok=True)
        out = commands.run(req.cmd, input=req.script, cwd=req.workdir).stdout.strip()
        job_id = out.split(";", 1)[0]
        if not _JOB_ID.fullmatch(job_id):
            raise CommandError(req.cmd, 0, f"unexpected output {out!r}")
        if req.recovering:  # marks it as one (recovery_attempts), also while it is pending
            with open(os.path.join(req.workdir or os.getcwd(), script.attempt_log(job_id)), "a"):
                pass
        return job_id

    # ------------------------------------------------------------------ state
    def _squeue(self, app_id: str) -> list[Component]:
        proc = commands.run(["squeue", "-h", "-r", "-t", "all", "-j", app_id, "-O", squeue_format()], check=False)
        if proc.returncode != 0:
            if "Invalid job id" in proc.stderr:
                return []  # slurmctld no longer holds it
            raise CommandError(["squeue", "-j", app_id], proc.returncode, proc.stderr)
        return own_components(app_id, parse_squeue(proc.stdout))

    def _sacct(self, args: list[str]) -> str | None:
        """``sacct`` output, or None when accounting is not available."""
        cmd = ["sacct", "-n", "-P", f"--delimiter={SEP}", "-o", sacct_format(), *args]
        proc = commands.run(cmd, check=False)
        if proc.returncode != 0:
            logger.debug("sacct failed (exit %d): %s", proc.returncode, proc.stderr.strip())
            return None
        return proc.stdout

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        """The job's state from ``squeue`` (one call while it runs), then ``sacct``; None if unknown."""
        if not _JOB_ID.fullmatch(app_id):
            return None
        comps = self._squeue(app_id)
        if comps and not all(is_terminal(to_app_state(c.state)) for c in comps):
            return describe_components(app_id, comps)
        text = self._sacct(["-D", "-j", app_id])
        acct = own_components(app_id, parse_sacct(text)) if text else []
        if not acct and "_" in app_id and text is not None:
            acct = self._unstarted_element(app_id)
        # right after the end sacct may lack the steps or still show the job running:
        # then the controller's view is fresher
        settled = all(is_terminal(to_app_state(c.state)) and c.step_state for c in acct)
        if acct and (not comps or settled):
            return describe_components(app_id, acct)
        return describe_components(app_id, comps) if comps else None

    def end_cause(self, app_id: str) -> AttemptEnd | None:
        """Why the job ended, from its accounting rows (every attempt: see
        :mod:`torchx_sched_slurm.causes`), else from slurmctld's view while accounting has not
        caught up; None while it runs, or for an unknown job. Where that view cannot tell (who
        cancelled; which of several killed replicas failed first) it waits up to
        :data:`ACCOUNTING_WAIT` seconds for accounting."""
        if not _JOB_ID.fullmatch(app_id):
            return None
        from torchx.schedulers.causes import AttemptEnd, EndCause

        from torchx_sched_slurm import causes

        end, accounting = self._accounted_end(app_id)
        if end is None:
            comps = self._squeue(app_id)
            if not comps:
                return None
            failed = [state == AppState.FAILED for state in replica_states(comps)]
            end = causes.end_of(causes.from_controller(comps, failed))
            if end is not None and accounting and _controller_cannot_tell(end, failed):
                end = self._await_accounted_end(app_id) or end
        if end is not None and end.cause in (EndCause.KILLED, EndCause.APP_ERROR) and end.exit_code != 0:
            shown = commands.run(["scontrol", "show", "job", "-o", app_id], check=False)
            when = causes.preempted_at(shown.stdout) if shown.returncode == 0 else None
            if when is not None:
                return AttemptEnd(EndCause.PREEMPTED, end.exit_code, f"preempted at {when} ({end.reason})")
        return end

    def _accounted_end(self, app_id: str) -> tuple[AttemptEnd | None, bool]:
        """Why the job ended by its accounting rows (None while they do not say), and whether
        accounting answered at all."""
        from torchx_sched_slurm import causes

        proc = commands.run(["sacct", *causes.sacct_args(app_id)], check=False)
        if proc.returncode != 0:
            return None, False
        return causes.end_of(causes.parse_attempts(proc.stdout, app_id)), True

    def _await_accounted_end(self, app_id: str) -> AttemptEnd | None:
        """The accounted end, polled for up to :data:`ACCOUNTING_WAIT` seconds (slurmdbd
        records a job's steps a few seconds after slurmctld ends it); None if it never says."""
        deadline = time.monotonic() + ACCOUNTING_WAIT
        while time.monotonic() < deadline:
            time.sleep(0.5)
            end, accounting = self._accounted_end(app_id)
            if end is not None or not accounting:
                return end
        logger.info(
            "accounting has not recorded job %s after %.0f s: reading slurmctld's view", app_id, ACCOUNTING_WAIT
        )
        return None

    def _unstarted_element(self, app_id: str) -> list[Component]:
        """An array element that never started, from its array's accounting row (``12_[3-5]``, or
        ``12`` once the array ended), which stands for every task that did not start."""
        array_id = app_id.split("_", 1)[0]
        text = self._sacct(["-D", "-j", array_id])
        comps = parse_sacct(text) if text else []
        own = [c for c in comps if c.app_id == app_id]
        if own:
            return own
        return [dataclasses.replace(c, app_id=app_id) for c in comps if c.app_id == array_id]

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        """This user's torchx jobs: those slurmctld holds, plus the last week's from ``sacct``."""
        user = getpass.getuser()
        text = self._sacct(["-X", "-u", user, "-S", LIST_WINDOW])
        squeue = commands.run(["squeue", "-h", "-r", "-t", "all", "-u", user, "-O", squeue_format()])
        accounted, live = parse_sacct(text) if text else [], parse_squeue(squeue.stdout)
        self._workdirs = {c.app_id: c.workdir for c in (*accounted, *live) if c.workdir and c.offset == 0}
        return list_apps(accounted, live)

    # ------------------------------------------------------------------ stopping
    def _cancel_existing(self, app_id: str) -> None:
        commands.run(["scancel", app_id])

    # ------------------------------------------------------------------ logs
    def log_file(self, app_id: str, role: str, replica_id: int, suffix: str) -> str:
        """The replica's output file (see :func:`script.log_file`)."""
        return script.log_file(app_id, role, replica_id, suffix)


def create_scheduler(session_name: str, **kwargs: Any) -> SlurmScheduler:
    """The ``slurm`` scheduler (no constructor options)."""
    return SlurmScheduler(session_name)
