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
from torchx.specs.dryrun import AppDryRunInfo
from torchx.specs.macros import macros
from torchx.specs.roles import AppDef, Role
from torchx.specs.runopts import CfgVal, runopts
from torchx.specs.status import AppState, ReplicaStatus, RoleStatus, aggregate_states

if TYPE_CHECKING:
    from datetime import datetime

    import pytest

    from torchx.schedulers.streams import Stream

NAME = "procs"
#: the directory holding the jobs (set by :func:`use_procs`)
DIR_ENV = "TORCHX_TEST_PROCS_DIR"
#: runs ``argv[3:]`` with its output appended to ``argv[1]`` and writes its exit status to ``argv[2]``
_WRAPPER = (
    "import os, subprocess, sys\n"
    "with open(sys.argv[1], 'ab') as out:\n"
    "    code = subprocess.call(sys.argv[3:], stdout=out, stderr=subprocess.STDOUT)\n"
    "with open(sys.argv[2] + '.tmp', 'w') as f:\n"
    "    f.write(str(code))\n"
    "os.replace(sys.argv[2] + '.tmp', sys.argv[2])\n"
)
_started: list[subprocess.Popen[bytes]] = []


def use_procs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Registers the scheduler ``procs`` for this test and the processes it starts (a
    distribution in ``tmp_path`` put on ``sys.path`` and ``PYTHONPATH``, under the legacy
    ``torchx.schedulers`` entry-point group) with its jobs under ``tmp_path``; returns its name."""
    import torchx.plugins

    site = tmp_path / "procs-site"
    info = site / "torchx_test_procs-1.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torchx-test-procs\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[torchx.schedulers]\n{NAME} = {__name__}:create_scheduler\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv(DIR_ENV, str(tmp_path / "procs-jobs"))
    torchx.plugins.reset()
    return NAME


def create_scheduler(session_name: str, **kwargs: Any) -> ProcsScheduler:
    """The scheduler factory the entry point names."""
    return ProcsScheduler(session_name)


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

    capabilities = SchedulerCapabilities(log_since_until=False, log_streams=frozenset({"combined"}), end_fd=True)

    def __init__(self, session_name: str) -> None:
        super().__init__(NAME, session_name)
        root = os.environ.get(DIR_ENV)
        if not root:
            raise RuntimeError(f"the {NAME} scheduler is for tests: call torchx.testing.procs.use_procs first")
        self.root = Path(root)

    def _run_opts(self) -> runopts:
        return runopts()

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[dict[str, Any]]:
        app_id = f"{app.name}-{time.time_ns():x}"
        cwd = os.getcwd()
        replicas = []
        for role in app.roles:
            for k in range(role.num_replicas):
                filled = macros.Values(img_root=cwd, app_id=app_id, replica_id=str(k)).apply(role)
                replicas.append(
                    {"role": role.name, "k": k, "argv": [filled.entrypoint, *filled.args], "env": dict(filled.env)}
                )
        request = {"app_id": app_id, "name": app.name, "cwd": cwd, "replicas": replicas}
        return AppDryRunInfo(request, lambda r: json.dumps(r, indent=2))

    def schedule(self, dryrun_info: AppDryRunInfo[dict[str, Any]]) -> str:
        _reap()
        request = dryrun_info.request
        job = self.root / request["app_id"]
        job.mkdir(parents=True)
        pids = []
        for r in request["replicas"]:
            base = job / f"{r['role']}-{r['k']}"
            cmd = [sys.executable, "-c", _WRAPPER, f"{base}.log", f"{base}.exit", *r["argv"]]
            proc = subprocess.Popen(cmd, cwd=request["cwd"], env={**os.environ, **r["env"]}, start_new_session=True)
            _started.append(proc)
            pids.append(proc.pid)
        job_info = {"name": request["name"], "replicas": request["replicas"], "pids": pids, "submitted": time.time()}
        (job / "job.json").write_text(json.dumps(job_info))
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
            try:
                code = int((self.root / app_id / f"{r['role']}-{r['k']}.exit").read_text())
                states.append(AppState.SUCCEEDED if code == 0 else AppState.FAILED)
            except (OSError, ValueError):
                alive = _alive(pid)
                states.append(AppState.RUNNING if alive else AppState.CANCELLED if cancelled else AppState.FAILED)
        if cancelled and any(s != AppState.SUCCEEDED for s in states):
            return [AppState.CANCELLED if s != AppState.SUCCEEDED else s for s in states]
        return states

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        _reap()
        job = self._job(app_id)
        if job is None:
            return None
        states = self._states(app_id, job)
        roles: dict[str, list[ReplicaStatus]] = {}
        for r, state in zip(job["replicas"], states, strict=True):
            roles.setdefault(r["role"], []).append(ReplicaStatus(r["k"], state, r["role"], "localhost"))
        return DescribeAppResponse(
            app_id=app_id,
            state=aggregate_states(states),
            num_restarts=0,
            roles=[Role(name=name, image="") for name in roles],
            roles_statuses=[RoleStatus(name, replicas) for name, replicas in roles.items()],
        )

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        _reap()
        found = []
        for path in sorted(self.root.glob("*/job.json")):
            app_id = path.parent.name
            job = self._job(app_id)
            if job is not None:
                state = aggregate_states(self._states(app_id, job))
                found.append(ListAppResponse(app_id=app_id, state=state, name=job["name"], submitted=job["submitted"]))
        return found

    def _cancel_existing(self, app_id: str) -> None:
        (self.root / app_id / "cancelled").touch()
        job = self._job(app_id) or {"pids": []}
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
        if should_tail:
            while (desc := self.describe(app_id)) is not None and desc.state == AppState.RUNNING:
                time.sleep(0.05)
        try:
            text = (self.root / app_id / f"{role_name}-{k}.log").read_text()
        except FileNotFoundError:
            return []
        return [line for line in text.splitlines(keepends=True) if regex is None or re.search(regex, line)]
