"""The ``lsf`` scheduler: submits with ``bsub``, tracks with ``bjobs``, stops with ``bkill``.

* **submit**: one job per app (see :mod:`torchx_sched_lsf.script`); the app id is the LSF
  job id, and the job name carries the app's name and layout (roles and replica counts).
* **describe**: one ``bjobs`` call: ``bjobs -o ... -json`` where LSF has it (IBM LSF 10.1),
  else ``bjobs -UF`` (OpenLava, older LSF); the form is found on the first call.
* **logs**: the per-replica files ``lsf-<job>-<role>-<k>.out|.err|.log`` in the job's
  working directory, which LSF itself reports.
* **retries**: the script starts the replicas again, in the same allocation.
* **recovery** (``capabilities.recovery``, used by ``torchx-managed``): ``bsub -r`` (LSF reruns
  the job when its host fails) and a restart loop in the job script for application errors;
  the attempts are read back from the job's attempt log and ``bhist -l``.
* **job arrays** (``capabilities.job_arrays``): apps of one shape go out as one
  ``bsub -J "name[1-N]%K"`` (see :func:`torchx_sched_lsf.script.build_array_request`);
  element ``i`` of array ``J`` has the app id ``J[i+1]`` (LSF indices start at 1), which
  ``bjobs``/``bkill`` accept. The array's own id describes the array as one app (one
  replica per element) and cancels every element.
"""

from __future__ import annotations

import getpass
import glob
import json
import logging
import os
import re
import shutil
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

from torchx_sched_lsf import commands, script
from torchx_sched_lsf.opts import LsfOpts
from torchx_sched_lsf.parse import JSON_FIELDS, LsfJob, parse_json, parse_unformatted
from torchx_sched_lsf.states import to_app_state

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.schedulers.causes import AttemptEnd
    from torchx.schedulers.recovery import AttemptLog, RecoveryPolicy

logger: logging.Logger = logging.getLogger(__name__)

#: a job id, or an array element's ``<job>[<index>]``
_JOB_ID = re.compile(r"\d+(?:\[\d+\])?")
_SUBMITTED = re.compile(r"Job <(\d+)> is submitted")
#: what an LSF client prints when it lacks an option (OpenLava: no -o / -json)
_NO_OPTION = ("invalid option", "illegal option", "Usage:")


def cancelled_file(app_id: str) -> str:
    """The marker (in the job's directory) that torchx cancelled the job."""
    return f"lsf-{script.file_key(app_id)}.cancelled"


def cancelled_by_torchx(job: LsfJob) -> bool:
    """torchx cancelled the ended ``job`` (its marker), and the job did not finish by itself
    first: OpenLava records a job killed in its first second of running as DONE, so DONE with
    the marker is a cancel unless every replica recorded exit code 0."""
    if not job.cwd or not os.path.exists(os.path.join(job.cwd, cancelled_file(job.job_id))):
        return False
    if job.stat != "DONE":
        return True
    parsed = script.parse_job_name(job.name)
    layout = parsed[1] if parsed else []
    codes = _exit_codes(job, layout)
    return not layout or len(codes) < sum(n for _, n in layout) or any(codes.values())


def app_state(job: LsfJob) -> AppState:
    """The app's state: LSF's, where an end that was a kill (LSF says so, the job never
    started, or torchx cancelled it: :func:`cancelled_by_torchx`) is CANCELLED."""
    state = to_app_state(job.stat)
    if job.stat == "EXIT" and (job.killed or not job.hosts):
        return AppState.CANCELLED
    if job.stat in ("EXIT", "DONE") and cancelled_by_torchx(job):
        return AppState.CANCELLED
    return state


def _element_key(job: LsfJob) -> tuple[int, int]:
    """Sort key of a job id: ``"12"`` -> (12, 0), an array element ``"12[3]"`` -> (12, 3)."""
    head, _, index = job.job_id.rstrip("]").partition("[")
    return (int(head) if head.isdigit() else 0, int(index) if index.isdigit() else 0)


def describe_array(array_id: str, elements: list[LsfJob]) -> DescribeAppResponse:
    """A job array as one app: one role (the elements' first), one replica per element
    (replica id = element index - 1) in the element's state; the array's state aggregates them."""
    elements = sorted(elements, key=_element_key)
    parsed = script.parse_job_name(elements[0].name)
    app_name, layout = parsed if parsed else (elements[0].name, [(elements[0].name or "job", 1)])
    role = layout[0][0]
    states = [app_state(job) for job in elements]
    replicas = [
        ReplicaStatus(id=_element_key(job)[1] - 1, state=st, role=role, hostname=job.hosts[0] if job.hosts else "")
        for job, st in zip(elements, states, strict=True)
    ]
    state = aggregate_states(states)
    counts: dict[str, int] = {}
    for job in elements:
        counts[job.stat] = counts.get(job.stat, 0) + 1
    cwd = next((job.cwd for job in elements if job.cwd), "")
    return DescribeAppResponse(
        app_id=array_id,
        state=state,
        msg=f"job array of {len(elements)}: " + ", ".join(f"{n} {stat}" for stat, n in sorted(counts.items())),
        metadata={"workdir": cwd, "lsf_state": "ARRAY", "app_name": app_name, "elements": len(elements)},
        roles_statuses=[RoleStatus(role, replicas)],
        roles=[Role(name=role, image=cwd, num_replicas=len(elements))],
    )


def _restarts(job: LsfJob) -> int:
    try:
        with open(os.path.join(job.cwd, script.restarts_file(job.job_id))) as f:
            return int(f.read().strip() or 0)
    except (OSError, ValueError):
        return 0


def _exit_codes(job: LsfJob, layout: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """The exit codes the replicas of an ended job recorded (``.exit`` files in its directory)."""
    codes: dict[tuple[str, int], int] = {}
    for role, count in layout:
        for k in range(count):
            try:
                with open(os.path.join(job.cwd, script.log_file(job.job_id, role, k, "exit"))) as f:
                    codes[(role, k)] = int(f.read().strip())
            except (OSError, ValueError):
                continue
    return codes


def _codes_in_order(job: LsfJob) -> dict[str, int]:
    """``role/k`` -> exit code of the replicas of an ended job that ended by themselves,
    first to end first (their ``.exit`` files' times)."""
    parsed = script.parse_job_name(job.name)
    if parsed is None or not job.cwd:
        return {}
    found: list[tuple[float, str, int]] = []
    for role, count in parsed[1]:
        for k in range(count):
            path = os.path.join(job.cwd, script.log_file(job.job_id, role, k, "exit"))
            try:
                with open(path) as f:
                    found.append((os.fstat(f.fileno()).st_mtime, f"{role}/{k}", int(f.read().strip())))
            except (OSError, ValueError):
                continue
    return {name: code for _, name, code in sorted(found)}


def replica_state(app: AppState, code: int | None) -> AppState:
    """A replica's state: the job's while it runs; once it ended, the replica's own exit code
    (0: SUCCEEDED, else FAILED), and a replica without one was stopped by the script or by a
    cancel (CANCELLED)."""
    if not is_terminal(app):
        return app
    if code is None:
        return AppState.CANCELLED if app in (AppState.FAILED, AppState.CANCELLED) else app
    return AppState.SUCCEEDED if code == 0 else AppState.FAILED


def describe_job(job: LsfJob) -> DescribeAppResponse:
    """The :class:`DescribeAppResponse` of an LSF job. Replicas take the job's state, or their
    own once it ended, where their exit codes are readable (see :func:`replica_state`)."""
    parsed = script.parse_job_name(job.name)
    app_name, layout = parsed if parsed else (job.name, [(job.name or "job", 1)])
    state = app_state(job)
    codes = _exit_codes(job, layout) if parsed and job.cwd and is_terminal(state) else {}
    replicas = sum(n for _, n in layout)
    per = max(1, len(job.hosts) // replicas) if job.hosts else 1
    roles_statuses: list[RoleStatus] = []
    roles: list[Role] = []
    failed: list[str] = []
    i = 0
    for role, count in layout:
        statuses = []
        for k in range(count):
            host = job.hosts[i * per] if i * per < len(job.hosts) else ""
            code = codes.get((role, k))
            replica = ReplicaStatus(
                id=k, state=replica_state(state, code) if codes else state, role=role, hostname=host
            )
            if replica.state == AppState.FAILED and code is not None:
                replica.structured_error_msg = json.dumps({"exit_code": code})
                failed.append(f"{role}/{k} exit code {code}")
            statuses.append(replica)
            i += 1
        roles_statuses.append(RoleStatus(role, statuses))
        roles.append(Role(name=role, image=job.cwd, num_replicas=count))
    if state == AppState.FAILED:
        what = "; ".join(failed[:5]) + (" ..." if len(failed) > 5 else "") if failed else f"exit code {job.exit_code}"
        msg = f"{job.stat}: {what}" + (f" ({job.reason})" if job.reason else "")
    elif state == AppState.PENDING and job.reason:
        msg = f"{job.stat}: {job.reason}"
    else:
        msg = job.stat
    error = json.dumps({"lsf_state": job.stat, "exit_code": job.exit_code}) if state == AppState.FAILED else NONE
    return DescribeAppResponse(
        app_id=job.job_id,
        state=state,
        num_restarts=_restarts(job) if job.cwd else 0,
        msg=msg,
        structured_error_msg=error,
        metadata={"workdir": job.cwd, "lsf_state": job.stat, "app_name": app_name},
        roles_statuses=roles_statuses,
        roles=roles,
    )


class LsfScheduler(JobDirWorkspaceMixin, FileLogsScheduler[Mapping[str, CfgVal], AppDef, script.BsubRequest]):
    """Runs apps on IBM Spectrum LSF or OpenLava, one ``bsub`` job per app.

    Needs the LSF client commands on PATH and a filesystem shared between this host and the
    execution hosts for the logs (the job's working directory).
    """

    capabilities = SchedulerCapabilities(
        log_streams=frozenset({"stdout", "stderr", "combined"}), workspace=True, job_arrays=True, recovery=True
    )  # the rest: the defaults

    #: a job killed before it started has no output files
    no_output_states = frozenset({AppState.PENDING, AppState.SUBMITTED, AppState.CANCELLED})

    def __init__(self, session_name: str) -> None:
        super().__init__("lsf", session_name)
        self._json: bool | None = None  # bjobs -o -json works here (found on first use)
        self._gpu_flag: bool | None = None  # bsub -gpu exists here

    # ------------------------------------------------------------------ submitting
    def _run_opts(self) -> runopts:
        return LsfOpts.as_runopts()

    def workspace_opts(self) -> runopts:
        """None of its own: ``job_dir`` is one of :class:`LsfOpts` (with TorchX's name ``jobdir``)."""
        return runopts()

    def has_gpu_flag(self) -> bool:
        """Whether ``bsub -gpu`` exists: not on OpenLava (``lsid`` says which); assumed when
        ``lsid`` cannot tell (a dry run away from the cluster)."""
        if self._gpu_flag is None:
            try:
                out = commands.run(["lsid"], check=False).stdout
            except (FileNotFoundError, CommandError):
                out = ""
            self._gpu_flag = "openlava" not in out.lower()
        return self._gpu_flag

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[script.BsubRequest]:
        opts: LsfOpts = LsfOpts.from_cfg(cfg)
        opts.validate(sum(role.num_replicas for role in app.roles))
        validate_shell_app(app)
        gpus = any(role.resource.gpu > 0 for role in app.roles)
        return AppDryRunInfo(script.build_request(app, opts, gpu_flag=gpus and self.has_gpu_flag()), str)

    def submit_recovery_dryrun(
        self, app: AppDef, cfg: Mapping[str, CfgVal], policy: RecoveryPolicy
    ) -> AppDryRunInfo[script.BsubRequest]:
        """A job that recovers in LSF: ``bsub -r`` (a failed host) and an in-job restart loop
        for application errors (see :func:`script.build_request`)."""
        opts: LsfOpts = LsfOpts.from_cfg(cfg)
        opts.validate(sum(role.num_replicas for role in app.roles))
        validate_shell_app(app)
        gpus = any(role.resource.gpu > 0 for role in app.roles)
        request = script.build_request(app, opts, gpu_flag=gpus and self.has_gpu_flag(), policy=policy)
        return AppDryRunInfo(request, str)

    def recovery_attempts(self, app_id: str) -> AttemptLog | None:
        """The attempts the job's script logged next to its output (the job's working
        directory, which this host shares with the execution hosts), each lost one named by
        ``bhist -l``'s record of the rerun (see :func:`causes.requeue_causes`); None for an
        unknown job or one that does not recover in LSF (no attempt log: :meth:`schedule` makes it)."""
        from torchx.schedulers.recovery import read_attempt_log

        from torchx_sched_lsf import causes

        jobs = self._jobs(app_id) if _JOB_ID.fullmatch(app_id) else []
        if not jobs or jobs[0].job_id != app_id:
            return None
        if not jobs[0].cwd:
            return None
        try:
            with open(os.path.join(jobs[0].cwd, script.attempt_log(app_id)), encoding="utf-8", errors="replace") as f:
                log = read_attempt_log(f.read())
        except FileNotFoundError:
            return None
        if log.lost:
            proc = commands.run(["bhist", "-l", app_id], check=False)
            if proc.returncode == 0:
                log.name_lost(causes.requeue_causes(proc.stdout))
        return log

    def submit_array_dryrun(
        self, apps: Sequence[AppDef], cfg: Mapping[str, CfgVal], max_parallel: int | None = None
    ) -> AppDryRunInfo[script.BsubRequest]:
        """One ``bsub -J "name[1-N]%K"`` job array running ``apps[i]`` as element ``i + 1``, at
        most ``max_parallel`` at once (see :func:`script.build_array_request`).

        Raises:
            UnsupportedFeatureError: the apps differ in more than argv and env
        """
        opts: LsfOpts = LsfOpts.from_cfg(self.run_opts().resolve(cfg))
        for app in apps:
            opts.validate(sum(role.num_replicas for role in app.roles))
            validate_shell_app(app)
        gpus = any(role.resource.gpu > 0 for app in apps for role in app.roles)
        request = script.build_array_request(apps, opts, max_parallel, gpu_flag=gpus and self.has_gpu_flag())
        return AppDryRunInfo(request, str)

    def array_element_id(self, array_id: str, index: int) -> str:
        """``<array job id>[<index + 1>]`` (LSF array indices start at 1)."""
        return f"{array_id}[{index + 1}]"

    def schedule(self, dryrun_info: AppDryRunInfo[script.BsubRequest]) -> str:
        """Submits the script with ``bsub``; returns the job id."""
        req = dryrun_info.request
        if req.workdir:
            os.makedirs(req.workdir, exist_ok=True)
        proc = commands.run(req.command(), input=req.script, cwd=req.workdir)
        m = _SUBMITTED.search(proc.stdout)
        if not m:
            raise CommandError(["bsub", *req.args[:2]], 0, f"unexpected output {proc.stdout.strip()!r}")
        if req.recovering:  # marks it as one (recovery_attempts), also while it is pending
            with open(os.path.join(req.workdir or os.getcwd(), script.attempt_log(m.group(1))), "a"):
                pass
        return m.group(1)

    # ------------------------------------------------------------------ state
    def _bjobs_json(self, args: list[str]) -> tuple[list[LsfJob], list[str]] | None:
        """``bjobs -o ... -json`` results, or None where LSF has no JSON output (remembered)."""
        if self._json is False:
            return None
        proc = commands.run(["bjobs", "-o", " ".join(JSON_FIELDS), "-json", *args], check=False)
        if proc.returncode != 0 and any(s in proc.stderr for s in _NO_OPTION):
            self._json = False
            return None
        self._json = True
        if not proc.stdout.strip():
            return [], [proc.stderr.strip()] if proc.stderr.strip() else []
        return parse_json(proc.stdout)

    def _jobs(self, app_id: str) -> list[LsfJob]:
        """What ``bjobs`` knows of ``app_id``: the job, or an array's elements (one call)."""
        found = self._bjobs_json(["-a", app_id])
        if found is not None:
            jobs = found[0]
        else:
            proc = commands.run(["bjobs", "-a", "-UF", app_id], check=False)
            if proc.returncode != 0 and "not found" not in proc.stderr:
                raise CommandError(["bjobs", "-UF", app_id], proc.returncode, proc.stderr)
            jobs = parse_unformatted(proc.stdout)
        own = [j for j in jobs if j.job_id == app_id]
        return own or [j for j in jobs if j.job_id.startswith(f"{app_id}[")]

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        """The job's state from one ``bjobs`` call (a job array's id: the array as one app, see
        :func:`describe_array`); None if LSF does not know it."""
        if not _JOB_ID.fullmatch(app_id):
            return None
        jobs = self._jobs(app_id)
        if not jobs:
            return None
        if jobs[0].job_id != app_id:
            return describe_array(app_id, jobs)
        desc = describe_job(jobs[0])
        if is_terminal(desc.state) and self._being_rerun(jobs[0]):
            desc.state, desc.msg = AppState.PENDING, f"{jobs[0].stat}: LSF requeued the job; it runs again"
            for role in desc.roles_statuses:
                for replica in role.replicas:
                    replica.state = AppState.PENDING
        return desc

    def _being_rerun(self, job: LsfJob) -> bool:
        """``job`` recovers in LSF (it has an attempt log), ended without its script's last
        word (``final``) and not by torchx's cancel, and LSF is about to dispatch it again: a
        ``bsub -r`` job whose host was lost (ZOMBI) or a ``brequeue`` (``bhist -l``). Between
        the end of a requeued run and its new PEND, ``bjobs`` says EXIT for a few seconds."""
        from torchx_sched_lsf.causes import requeue_requested

        if not job.cwd or job.stat not in ("EXIT", "DONE", "ZOMBI"):
            return False
        try:
            with open(os.path.join(job.cwd, script.attempt_log(job.job_id)), encoding="utf-8", errors="replace") as f:
                if any(line.startswith("final ") for line in f):
                    return False
        except OSError:
            return False
        if cancelled_by_torchx(job):
            return False
        if job.stat == "ZOMBI":
            return True
        proc = commands.run(["bhist", "-l", job.job_id], check=False)
        return proc.returncode == 0 and requeue_requested(proc.stdout)

    def end_cause(self, app_id: str) -> AttemptEnd | None:
        """Why the job ended (an array's id: its first element that did not succeed), from
        ``bjobs``, ``bhist -l``, the replicas' exit codes and torchx's cancel marker (see
        :mod:`torchx_sched_lsf.causes`); None while it runs, or for an unknown job."""
        from torchx_sched_lsf.causes import lsf_end

        jobs = self._jobs(app_id) if _JOB_ID.fullmatch(app_id) else []
        if not jobs or not all(is_terminal(app_state(j)) for j in jobs):
            return None
        job = next((j for j in sorted(jobs, key=_element_key) if j.stat != "DONE"), jobs[0])
        proc = commands.run(["bhist", "-l", job.job_id], check=False)
        return lsf_end(job, proc.stdout if proc.returncode == 0 else "", _codes_in_order(job), cancelled_by_torchx(job))

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        """This user's torchx jobs that LSF still knows (finished ones until its CLEAN_PERIOD)."""
        user = getpass.getuser()
        found = self._bjobs_json(["-a", "-u", user])
        if found is not None:
            jobs = found[0]
        else:
            proc = commands.run(["bjobs", "-a", "-UF", "-u", user], check=False)
            if proc.returncode != 0 and "No " not in proc.stderr:
                raise CommandError(["bjobs", "-a", "-UF"], proc.returncode, proc.stderr)
            jobs = parse_unformatted(proc.stdout)
        out = []
        for job in sorted(jobs, key=_element_key):
            parsed = script.parse_job_name(job.name)
            if parsed is not None:
                out.append(
                    ListAppResponse(
                        job.job_id,
                        app_state(job),
                        name=parsed[0],
                        submitted=job.submitted,
                        started=job.started,
                        ended=job.ended,
                    )
                )
        return out

    # ------------------------------------------------------------------ stopping
    def cancel(self, app_id: str) -> None:
        """Stops the job (an array: every element) if LSF knows it and it has not ended: one
        ``bjobs``, then ``bkill`` only when something still runs or waits (a sweep cancels an
        array, then each of its elements)."""
        if _JOB_ID.fullmatch(app_id):
            self._stop(app_id, self._jobs(app_id))

    def _cancel_existing(self, app_id: str) -> None:
        self._stop(app_id, self._jobs(app_id) if _JOB_ID.fullmatch(app_id) else [])

    def _stop(self, app_id: str, jobs: Sequence[LsfJob]) -> None:
        """Marks each of ``jobs`` still running or pending cancelled, then ``bkill`` s ``app_id``."""
        live = [job for job in jobs if not is_terminal(app_state(job))]
        for job in live:
            if job.cwd:
                try:
                    with open(os.path.join(job.cwd, cancelled_file(job.job_id)), "w"):
                        pass
                except OSError as e:  # the job's directory is not visible here: LSF's own word must do
                    logger.debug("cannot mark %s cancelled: %s", job.job_id, e)
        if live:
            commands.run(["bkill", app_id], check=False)

    def _delete_existing(self, app_id: str) -> None:
        """Stops the job and removes the files torchx made for it (LSF keeps its record)."""
        desc = self.describe(app_id)
        if desc is not None and not is_terminal(desc.state):
            self._cancel_existing(app_id)
        workdir = str(desc.metadata.get("workdir") or "") if desc else ""
        if workdir:
            key = script.file_key(app_id)
            patterns = [f"lsf-{key}[-.]*"] + ([f"lsf-{key}_[0-9]*"] if key.isdigit() else [])  # an array's elements
            for pattern in patterns:
                for path in glob.glob(os.path.join(glob.escape(workdir), pattern)):
                    if os.path.isdir(path):  # the default checkpoint directory of a job that recovers in LSF
                        shutil.rmtree(path)
                    else:
                        os.remove(path)

    # ------------------------------------------------------------------ logs
    def log_file(self, app_id: str, role: str, replica_id: int, suffix: str) -> str:
        """The replica's output file (see :func:`script.log_file`)."""
        return script.log_file(app_id, role, replica_id, suffix)


def create_scheduler(session_name: str, **kwargs: Any) -> LsfScheduler:
    """The ``lsf`` scheduler (no constructor options)."""
    return LsfScheduler(session_name)
