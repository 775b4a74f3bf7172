"""A scheduler as a platform team writes one for TorchX 0.7: each replica is a local process.

Written from the quick-reference skeleton, with the signatures TorchX 0.7 schedulers use:
``list(self)`` without ``cfg``, ``_validate(self, app, scheduler)`` without ``cfg``, the
full ``log_iter`` signature. State lives in files under ``state_dir`` so that any later
process (``torchx status`` ...) sees the job.
"""

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Dict, Iterable, List, Mapping, Optional

from torchx.schedulers.api import (
    DescribeAppResponse,
    ListAppResponse,
    Scheduler,
    Stream,
    StructuredOpts,
    filter_regex,
)
from torchx.schedulers.ids import make_unique
from torchx.specs import AppDef, AppDryRunInfo, AppState, CfgVal, ReplicaStatus, RoleStatus, macros, runopts

MAX_REPLICAS = 4


@dataclass
class ProcReplica:
    role: str
    replica_id: int
    cmd: List[str]
    env: Dict[str, str]


@dataclass
class ProcRequest:
    """Native request type, passed from _submit_dryrun to schedule."""

    app_id: str
    shell: str
    replicas: List[ProcReplica] = field(default_factory=list)


@dataclass
class ProcOpts(StructuredOpts):
    shell: str = "sh"
    """The POSIX shell that starts each replica and records its exit code."""


def _state_dir() -> str:
    """Where jobs keep their logs and exit codes: $LEGACY_PROC_STATE or ~/.legacy_proc."""
    return os.environ.get("LEGACY_PROC_STATE") or os.path.join(os.path.expanduser("~"), ".legacy_proc")


class LegacyProcScheduler(Scheduler[Mapping[str, CfgVal]]):
    def __init__(self, session_name: str, **kwargs: object) -> None:
        super().__init__("legacy_proc", session_name)

    def _run_opts(self) -> runopts:
        return ProcOpts.as_runopts()

    def _validate(self, app: AppDef, scheduler: str) -> None:
        for role in app.roles:
            if role.num_replicas > MAX_REPLICAS:
                raise ValueError(
                    f"{scheduler} runs at most {MAX_REPLICAS} replicas per role, {role.name} asks for {role.num_replicas}"
                )

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[ProcRequest]:
        opts = ProcOpts.from_cfg(cfg)
        app_id = make_unique(app.name)
        request = ProcRequest(app_id=app_id, shell=opts.shell)
        for role in app.roles:
            for i in range(role.num_replicas):
                values = macros.Values(img_root=os.getcwd(), app_id=app_id, replica_id=str(i), rank0_env="LEGACY_RANK0")
                replica = values.apply(role)
                env = {**replica.env, "LEGACY_RANK0": "localhost"}
                request.replicas.append(ProcReplica(role.name, i, [replica.entrypoint, *replica.args], env))
        return AppDryRunInfo(request, repr)

    def schedule(self, dryrun_info: AppDryRunInfo[ProcRequest]) -> str:
        request: ProcRequest = dryrun_info.request
        app_dir = os.path.join(_state_dir(), request.app_id)
        for r in request.replicas:
            base = os.path.join(app_dir, r.role, str(r.replica_id))
            os.makedirs(os.path.dirname(base), exist_ok=True)
            with open(base + ".log", "wb") as log:
                proc = subprocess.Popen(
                    [request.shell, "-c", '"$@"; echo $? > "$0.tmp" && mv "$0.tmp" "$0"', base + ".rc", *r.cmd],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env={**os.environ, **r.env},
                    start_new_session=True,
                )
            with open(base + ".pid", "w") as f:
                f.write(str(proc.pid))
        return request.app_id

    def _app_dir(self, app_id: str) -> str:
        return os.path.join(_state_dir(), app_id)

    def _replica_state(self, base: str) -> AppState:
        if os.path.exists(base + ".cancelled"):
            return AppState.CANCELLED
        if os.path.exists(base + ".rc"):
            with open(base + ".rc") as f:
                return AppState.SUCCEEDED if f.read().strip() == "0" else AppState.FAILED
        with open(base + ".pid") as f:
            pid = int(f.read())
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return AppState.FAILED
        return AppState.RUNNING

    def describe(self, app_id: str) -> Optional[DescribeAppResponse]:
        app_dir = self._app_dir(app_id)
        if not os.path.isdir(app_dir):
            return None
        roles = []
        states = []
        for role in sorted(os.listdir(app_dir)):
            replicas = []
            for name in sorted(os.listdir(os.path.join(app_dir, role))):
                if name.endswith(".pid"):
                    idx = int(name[: -len(".pid")])
                    state = self._replica_state(os.path.join(app_dir, role, str(idx)))
                    states.append(state)
                    replicas.append(ReplicaStatus(id=idx, state=state, role=role, hostname="localhost"))
            roles.append(RoleStatus(role=role, replicas=replicas))
        if AppState.CANCELLED in states:
            state = AppState.CANCELLED
        elif AppState.FAILED in states:
            state = AppState.FAILED
        elif AppState.RUNNING in states:
            state = AppState.RUNNING
        else:
            state = AppState.SUCCEEDED
        return DescribeAppResponse(app_id=app_id, state=state, roles_statuses=roles)

    def list(self) -> List[ListAppResponse]:
        root = _state_dir()
        if not os.path.isdir(root):
            return []
        apps = []
        for app_id in sorted(os.listdir(root)):
            desc = self.describe(app_id)
            if desc is not None:
                apps.append(ListAppResponse(app_id=app_id, state=desc.state))
        return apps

    def _cancel_existing(self, app_id: str) -> None:
        app_dir = self._app_dir(app_id)
        for role in os.listdir(app_dir):
            for name in os.listdir(os.path.join(app_dir, role)):
                if not name.endswith(".pid"):
                    continue
                base = os.path.join(app_dir, role, name[: -len(".pid")])
                if os.path.exists(base + ".rc"):
                    continue
                open(base + ".cancelled", "w").close()
                with open(base + ".pid") as f:
                    try:
                        os.killpg(int(f.read()), signal.SIGTERM)
                    except ProcessLookupError:
                        pass

    def log_iter(
        self,
        app_id: str,
        role_name: str,
        k: int = 0,
        regex: Optional[str] = None,
        since: Optional[datetime] = None,
        until: Optional[datetime] = None,
        should_tail: bool = False,
        streams: Optional[Stream] = None,
    ) -> Iterable[str]:
        base = os.path.join(self._app_dir(app_id), role_name, str(k))
        lines = self._read(base, should_tail)
        return filter_regex(regex, lines) if regex else lines

    def _read(self, base: str, should_tail: bool) -> Iterable[str]:
        with open(base + ".log") as f:
            while True:
                line = f.readline()
                if line:
                    yield line
                    continue
                if not should_tail or self._replica_state(base) != AppState.RUNNING:
                    rest = f.read()
                    if rest:
                        yield rest
                    return
                time.sleep(0.05)


def create_scheduler(session_name: str, **kwargs: Any) -> LegacyProcScheduler:
    return LegacyProcScheduler(session_name)
