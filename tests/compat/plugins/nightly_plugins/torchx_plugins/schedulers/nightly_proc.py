"""A platform team's scheduler in upstream TorchX's current style: registered with
``@register.scheduler()`` in the ``torchx_plugins.schedulers`` namespace package (no entry point).

Each replica is a local process; state lives in files under ``$NIGHTLY_PROC_STATE`` so a later
process (``torchx status`` ...) sees the job. Signatures as the nightly ``Scheduler`` has them:
``list(self, cfg=None)``, ``_validate(self, app, scheduler, cfg)``.
"""

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Iterable, List, Mapping, Optional

from torchx.plugins import register
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


@dataclass
class Replica:
    role: str
    replica_id: int
    cmd: List[str]
    env: dict


@dataclass
class NightlyRequest:
    app_id: str
    max_gpus: int
    replicas: List[Replica] = field(default_factory=list)


@dataclass
class NightlyOpts(StructuredOpts):
    max_gpus: int = 8
    """GPUs one replica may ask for on this cluster."""


def _root() -> str:
    return os.environ.get("NIGHTLY_PROC_STATE") or os.path.join(os.path.expanduser("~"), ".nightly_proc")


class NightlyProcScheduler(Scheduler[Mapping[str, CfgVal]]):
    def __init__(self, session_name: str, **kwargs: Any) -> None:
        super().__init__("nightly_proc", session_name)

    def _run_opts(self) -> runopts:
        return NightlyOpts.as_runopts()

    def _validate(self, app: AppDef, scheduler: str, cfg: Mapping[str, CfgVal]) -> None:
        limit = NightlyOpts.from_cfg(cfg).max_gpus
        for role in app.roles:
            if role.resource.gpu > limit:
                raise ValueError(
                    f"{scheduler}: role {role.name} asks for {role.resource.gpu} GPUs, max_gpus is {limit}"
                )

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[NightlyRequest]:
        app_id = make_unique(app.name)
        request = NightlyRequest(app_id, NightlyOpts.from_cfg(cfg).max_gpus)
        for role in app.roles:
            for i in range(role.num_replicas):
                values = macros.Values(
                    img_root=os.getcwd(), app_id=app_id, replica_id=str(i), rank0_env="NIGHTLY_RANK0"
                )
                r = values.apply(role)
                env = {
                    **r.env,
                    "NIGHTLY_RANK0": "localhost",
                    "NIGHTLY_RESOURCE": str(role.resource.get_resource_name()),
                }
                request.replicas.append(Replica(role.name, i, [r.entrypoint, *r.args], env))
        return AppDryRunInfo(request, repr)

    def schedule(self, dryrun_info: AppDryRunInfo[NightlyRequest]) -> str:
        request = dryrun_info.request
        for r in request.replicas:
            base = os.path.join(_root(), request.app_id, r.role, str(r.replica_id))
            os.makedirs(os.path.dirname(base), exist_ok=True)
            with open(base + ".log", "wb") as log:
                proc = subprocess.Popen(
                    ["sh", "-c", '"$@"; echo $? > "$0.tmp" && mv "$0.tmp" "$0"', base + ".rc", *r.cmd],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env={**os.environ, **r.env},
                    start_new_session=True,
                )
            with open(base + ".pid", "w") as f:
                f.write(str(proc.pid))
        return request.app_id

    def _state(self, base: str) -> AppState:
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

    def _replicas(self, app_id: str) -> Iterable[tuple]:
        app_dir = os.path.join(_root(), app_id)
        for role in sorted(os.listdir(app_dir)):
            for name in sorted(os.listdir(os.path.join(app_dir, role))):
                if name.endswith(".pid"):
                    yield role, int(name[:-4]), os.path.join(app_dir, role, name[:-4])

    def describe(self, app_id: str) -> Optional[DescribeAppResponse]:
        if not os.path.isdir(os.path.join(_root(), app_id)):
            return None
        roles: dict = {}
        for role, idx, base in self._replicas(app_id):
            roles.setdefault(role, []).append(
                ReplicaStatus(id=idx, state=self._state(base), role=role, hostname="localhost")
            )
        states = {r.state for reps in roles.values() for r in reps}
        for state in (AppState.CANCELLED, AppState.FAILED, AppState.RUNNING):
            if state in states:
                break
        else:
            state = AppState.SUCCEEDED
        return DescribeAppResponse(
            app_id=app_id, state=state, roles_statuses=[RoleStatus(role, reps) for role, reps in roles.items()]
        )

    def list(self, cfg: Optional[Mapping[str, CfgVal]] = None) -> List[ListAppResponse]:
        if not os.path.isdir(_root()):
            return []
        out = []
        for app_id in sorted(os.listdir(_root())):
            desc = self.describe(app_id)
            if desc is not None:
                out.append(ListAppResponse(app_id=app_id, state=desc.state))
        return out

    def _cancel_existing(self, app_id: str) -> None:
        for _, _, base in self._replicas(app_id):
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
        lines = self._lines(os.path.join(_root(), app_id, role_name, str(k)), should_tail)
        return filter_regex(regex, lines) if regex else lines

    def _lines(self, base: str, should_tail: bool) -> Iterable[str]:
        with open(base + ".log") as f:
            while True:
                line = f.readline()
                if line:
                    yield line
                elif should_tail and self._state(base) == AppState.RUNNING:
                    time.sleep(0.05)
                else:
                    rest = f.read()
                    if rest:
                        yield rest
                    return


@register.scheduler()
def nightly_proc(session_name: str, **kwargs: Any) -> NightlyProcScheduler:
    """Runs each replica as a local process (test plugin in the nightly style)."""
    return NightlyProcScheduler(session_name, **kwargs)
