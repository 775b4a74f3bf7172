"""``procs``: a scheduler for the tests of a plugin that runs jobs (a sweep, a dashboard, a
tracker, components) with torchx-core alone, no scheduler distribution installed.

Each replica is a real process in a session of its own, started through a small Python
wrapper that records its exit status; a job is a directory of files (``job.json``, one
``<role>-<k>.log`` and ``<role>-<k>.exit`` per replica, ``cancelled``), so every process of
the test (the CLI, a detached driver) sees the same jobs. As on ``local_cwd``, replicas run in
the submitter's working directory, which is also ``${img_root}``. It is for tests only:
replicas get the role's environment and nothing else (no restarts, no resources, no separate
log streams).

    def test_x(tmp_path, monkeypatch):
        name = use_procs(tmp_path, monkeypatch)  # "procs", registered for this test and its subprocesses
        handle = runner.run(app, name)
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torchx.schedulers.api import DescribeAppResponse, ListAppResponse, Scheduler
from torchx.schedulers.capabilities import SchedulerCapabilities
from torchx.schedulers.ids import make_unique, sanitize_name
from torchx.schedulers.streams import follow
from torchx.specs.dryrun import AppDryRunInfo
from torchx.specs.macros import macros
from torchx.specs.roles import NONE, AppDef, Role
from torchx.specs.runopts import CfgVal, runopts
from torchx.specs.status import AppState, ReplicaStatus, RoleStatus, aggregate_states, is_terminal

if TYPE_CHECKING:
    from datetime import datetime

    import pytest

    from torchx.schedulers.streams import Stream

NAME = "procs"
#: the directory holding the jobs (set by :func:`use_procs`)
DIR_ENV = "TORCHX_TEST_PROCS_DIR"
#: runs ``argv[5:]`` with its output appended to ``argv[1]`` (and when each line came, one time a
#: line, to ``argv[1].times``), then writes its exit status to ``argv[2]``; it first waits for
#: the job's record ``argv[3]``, and runs nothing if its launcher (pid ``argv[4]``) died before
#: writing it: a job never runs unrecorded (a submitter killed mid-submission would have its
#: caller submit it again, and it would run twice)
_WRAPPER = """
import os, subprocess, sys, time
log, status, record, launcher, argv = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5:]
while not os.path.exists(record):
    if os.getppid() != launcher and not os.path.exists(record):
        sys.exit(0)
    time.sleep(0.001)
with open(log, "ab") as out, open(log + ".times", "a") as times:
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except OSError as e:
        times.write(f"{time.time()}\\n")
        out.write(f"{e}\\n".encode())
        code = 127
    else:
        for line in proc.stdout:
            times.write(f"{time.time()}\\n")
            times.flush()
            out.write(line)
            out.flush()
        code = proc.wait()
with open(status + ".tmp", "w") as f:
    f.write(str(code))
os.replace(status + ".tmp", status)
"""
_started: list[subprocess.Popen[bytes]] = []


def use_procs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Registers the scheduler ``procs`` for this test and the processes it starts (a
    distribution in ``tmp_path`` put on ``sys.path`` and ``PYTHONPATH``, with an entry point
    of the group ``torchx``) with its jobs under ``tmp_path``; returns its name."""
    import torchx.plugins

    site = tmp_path / "procs-site"
    info = site / "torchx_test_procs-1.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torchx-test-procs\nVersion: 1.0\n")
    ep = f"scheduler.{NAME} = {__name__}:create_scheduler  # real processes, for tests\n"
    (info / "entry_points.txt").write_text(f"[torchx]\n{ep}")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv(DIR_ENV, str(tmp_path / "procs-jobs"))
    torchx.plugins.reset()
    return NAME


def create_scheduler(session_name: str, root: str | None = None, **kwargs: Any) -> ProcsScheduler:
    """The scheduler factory the entry point names (``root``: where its jobs are; default
    ``$TORCHX_TEST_PROCS_DIR``)."""
    return ProcsScheduler(session_name, root)


def _reap() -> None:
    """Reaps the wrappers this process started that have ended (no zombies are left)."""
    _started[:] = [p for p in _started if p.poll() is None]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        return False


class ProcsScheduler(Scheduler[Mapping[str, CfgVal], AppDef, dict[str, Any]]):
    """See the module."""

    capabilities = SchedulerCapabilities(log_since_until=True, log_streams=frozenset({"combined"}), end_fd=True)

    def __init__(self, session_name: str, root: str | None = None) -> None:
        super().__init__(NAME, session_name)
        root = root or os.environ.get(DIR_ENV)
        if not root:
            raise RuntimeError(f"the {NAME} scheduler is for tests: call torchx.testing.procs.use_procs first")
        self.root = Path(root)

    def _run_opts(self) -> runopts:
        return runopts()

    def _validate(self, app: AppDef, scheduler: str, cfg: Mapping[str, CfgVal] | None = None) -> None:
        """Any app: replicas get no resources (as on ``local_cwd``), so none need be set."""

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[dict[str, Any]]:
        app_id = make_unique(sanitize_name(app.name, max_length=60, allowed=r"a-z0-9_\-"))
        cwd = os.getcwd()
        replicas = []
        for role in app.roles:
            for k in range(role.num_replicas):
                filled = macros.Values(img_root=cwd, app_id=app_id, replica_id=str(k)).apply(role)
                replicas.append(
                    {"role": role.name, "k": k, "argv": [filled.entrypoint, *filled.args], "env": dict(filled.env)}
                )
        roles = [
            {k: getattr(r, k) for k in ("name", "image", "entrypoint", "args", "env", "num_replicas")}
            for r in app.roles
        ]
        request = {
            "app_id": app_id,
            "name": app.name,
            "cwd": cwd,
            "replicas": replicas,
            "roles": roles,
            "metadata": dict(app.metadata),
        }
        return AppDryRunInfo(request, lambda r: json.dumps(r, indent=2))

    def schedule(self, dryrun_info: AppDryRunInfo[dict[str, Any]]) -> str:
        _reap()
        request = dryrun_info.request
        job = self.root / request["app_id"]
        job.mkdir(parents=True)
        pids = []
        launcher = str(os.getpid())
        for r in request["replicas"]:
            base = job / f"{r['role']}-{r['k']}"
            cmd = [sys.executable, "-c", _WRAPPER, f"{base}.log", f"{base}.exit", str(job / "job.json"), launcher]
            cmd += r["argv"]
            proc = subprocess.Popen(cmd, cwd=request["cwd"], env={**os.environ, **r["env"]}, start_new_session=True)
            _started.append(proc)
            pids.append(proc.pid)
        keep = ("name", "replicas", "roles", "metadata")
        job_info = {**{k: request[k] for k in keep}, "pids": pids, "submitted": time.time()}
        try:
            (job / "job.json.tmp").write_text(json.dumps(job_info, default=str))
            os.replace(job / "job.json.tmp", job / "job.json")  # readers in other processes see all of it or nothing
        except BaseException:  # unrecorded: its replicas (still waiting for the record) must not run
            for pid in pids:
                os.kill(pid, signal.SIGKILL)
            raise
        return str(request["app_id"])

    def _job(self, app_id: str) -> dict[str, Any] | None:
        try:
            return dict(json.loads((self.root / app_id / "job.json").read_text()))
        except (OSError, ValueError):
            return None

    def _states(self, app_id: str, job: Mapping[str, Any]) -> list[AppState]:
        cancelled = (self.root / app_id / "cancelled").exists()
        states = []
        for r, pid in zip(job["replicas"], job["pids"], strict=True):
            code = self._exit_code(app_id, r)
            if code is not None:
                states.append(AppState.SUCCEEDED if code == 0 else AppState.FAILED)
            else:
                alive = _alive(pid)
                states.append(AppState.RUNNING if alive else AppState.CANCELLED if cancelled else AppState.FAILED)
        if cancelled and any(s != AppState.SUCCEEDED for s in states):
            return [AppState.CANCELLED if s != AppState.SUCCEEDED else s for s in states]
        return states

    def _exit_code(self, app_id: str, replica: Mapping[str, Any]) -> int | None:
        """The replica's exit status as its wrapper recorded it (None: not ended, or killed)."""
        try:
            return int((self.root / app_id / f"{replica['role']}-{replica['k']}.exit").read_text())
        except (OSError, ValueError):
            return None

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        _reap()
        job = self._job(app_id)
        if job is None:
            return None
        states = self._states(app_id, job)
        roles: dict[str, list[ReplicaStatus]] = {}
        for r, state in zip(job["replicas"], states, strict=True):
            code = self._exit_code(app_id, r) if state == AppState.FAILED else None
            error = json.dumps({"exit_code": code}) if code else NONE  # torchx's error-file JSON
            roles.setdefault(r["role"], []).append(ReplicaStatus(r["k"], state, r["role"], "localhost", error))
        return DescribeAppResponse(
            app_id=app_id,
            state=aggregate_states(states),
            num_restarts=0,
            roles=[Role(**role) for role in job["roles"]],
            roles_statuses=[RoleStatus(name, replicas) for name, replicas in roles.items()],
            metadata=dict(job["metadata"]),
        )

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        _reap()
        try:
            app_ids = sorted(os.listdir(self.root))
        except FileNotFoundError:  # nothing submitted yet
            return []
        found = []
        for app_id in app_ids:
            job = self._job(app_id)
            if job is not None:
                state = aggregate_states(self._states(app_id, job))
                ended = self._ended(app_id) if is_terminal(state) else None
                found.append(
                    ListAppResponse(
                        app_id=app_id,
                        state=state,
                        name=job["name"],
                        submitted=job["submitted"],
                        started=job["submitted"],  # replicas start as the job is submitted
                        ended=ended,
                    )
                )
        return found

    def _ended(self, app_id: str) -> float | None:
        """When the last replica's exit (or the cancel) was recorded."""
        marks = [*(self.root / app_id).glob("*.exit"), self.root / app_id / "cancelled"]
        return max((m.stat().st_mtime for m in marks if m.exists()), default=None)

    def _cancel_existing(self, app_id: str) -> None:
        job = self._job(app_id) or {"pids": []}
        if job["pids"] and all(is_terminal(s) for s in self._states(app_id, job)):
            return  # an app that ended keeps its state, as on local_cwd
        (self.root / app_id / "cancelled").touch()
        for pid in job["pids"]:
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        _reap()

    def end_fd(self, app_id: str) -> int | None:
        """A pidfd of the replica's wrapper for a one-replica job this process started and has
        not reaped yet (so its pid is still its own); else None."""
        job = self._job(app_id)
        if job is None or len(job["pids"]) != 1 or not hasattr(os, "pidfd_open"):
            return None
        if not any(p.pid == job["pids"][0] and p.returncode is None for p in _started):
            return None
        return os.pidfd_open(job["pids"][0])

    def _delete_existing(self, app_id: str) -> None:
        import shutil

        self._cancel_existing(app_id)
        shutil.rmtree(self.root / app_id)

    def log_iter(
        self,
        app_id: str,
        role_name: str,
        k: int = 0,
        regex: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        should_tail: bool = False,
        streams: Stream | None = None,
    ) -> Iterable[str]:
        path = self.root / app_id / f"{role_name}-{k}.log"
        offset, partial, done, count = 0, b"", False, 0
        bounds = (since.timestamp() if since else float("-inf"), until.timestamp() if until else float("inf"))

        def read() -> list[str]:
            nonlocal offset, partial, count
            try:
                with open(path, "rb") as f:
                    f.seek(offset)
                    data = f.read()
            except FileNotFoundError:
                data = b""
            offset += len(data)
            *lines, partial = (partial + data).split(b"\n")
            got = [line + b"\n" for line in lines] + ([partial] if done and partial else [])
            partial = b"" if done else partial
            first, count = count, count + len(got)
            if since or until:
                try:
                    with open(f"{path}.times") as f:
                        times = [float(t) for t in f.read().split()]
                except FileNotFoundError:
                    times = []
                now = time.time()  # a line's time is written before the line: a missing one is not older
                got = [
                    g
                    for i, g in enumerate(got, first)
                    if bounds[0] <= (times[i] if i < len(times) else now) < bounds[1]
                ]
            return [line.decode(errors="replace") for line in got]

        def ended() -> bool:
            nonlocal done
            desc = self.describe(app_id)
            done = desc is None or is_terminal(desc.state)
            return done

        def pause() -> None:
            time.sleep(0.05)

        if not should_tail:
            done = True
        lines = follow(read, should_tail, ended, pause)
        return (line for line in lines if regex is None or re.search(regex, line))
