"""Builds the Ray job of an app (pure: no Ray import, no cluster call).

A job is the driver (``python -m torchx_ray_driver``, shipped in ``runtime_env.py_modules``
with the app's description ``app.json``) plus the runtime env (the working dir and pip
requirements). The app's words reach each replica's process as data:

* the core macros are filled with :meth:`torchx.specs.macros.macros.Values.apply`, as on
  Slurm: ``app_id`` is known here (we choose the submission id); ``replica_id``, ``img_root``
  and the rank-0 host are only known on the cluster, so they become NUL-delimited
  placeholders the driver replaces verbatim (NUL cannot occur in argv or env);
* the command runs without a shell, so no word is ever re-interpreted.

App ids are ``<host>:<port>-<submission id>`` (``https:<host>:<port>-...`` for https), so
``describe``/``log``/``cancel`` find the cluster from the handle alone.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from torchx.schedulers.ids import make_unique, sanitize_name
from torchx.specs.env_names import check_env
from torchx.specs.macros import RANK0_ENV, macros
from torchx.specs.roles import AppDef, Role

from torchx_sched_ray.opts import RayOpts, default_address
from torchx_sched_ray.torchx_ray_driver.placeholders import IMG_ROOT, RANK0_HOST, REPLICA_ID

#: the job's entrypoint: the driver, from the job's py_modules
ENTRYPOINT = "python -m torchx_ray_driver"
#: metadata keys of a torchx job (Ray keeps them with the job)
META_APP, META_ROLES = "torchx.app", "torchx.roles"
#: environment every replica gets (besides the rank-0 host, ``RANK0_ENV``)
ENV_ROLE, ENV_REPLICA, ENV_NUM_REPLICAS = "TORCHX_ROLE_NAME", "TORCHX_REPLICA_IDX", "TORCHX_NUM_REPLICAS"
_APP_ID = re.compile(r"(?P<https>https:)?(?P<netloc>[^/\s]*:\d+)-(?P<sub>[A-Za-z0-9_-]+)")


def make_app_id(address: str, submission_id: str) -> str:
    """The torchx app id of job ``submission_id`` on the Jobs API at ``address``."""
    scheme, _, netloc = address.partition("://")
    return f"{'https:' if scheme == 'https' else ''}{netloc}-{submission_id}"


def split_app_id(app_id: str) -> tuple[str, str]:
    """(Jobs API address, submission id) of an app id; a bare submission id means the default address."""
    match = _APP_ID.fullmatch(app_id)
    if match is None:
        return default_address(), app_id
    scheme = "https" if match["https"] else "http"
    return f"{scheme}://{match['netloc']}", match["sub"]


@dataclass
class RayJob:
    """What is submitted to the Jobs API (``py_modules`` is added at submission: the driver and ``spec``)."""

    address: str
    submission_id: str
    app_id: str
    entrypoint: str
    runtime_env: dict[str, Any]
    metadata: dict[str, str]
    spec: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return json.dumps(
            {
                "address": self.address,
                "submission_id": self.submission_id,
                "entrypoint": self.entrypoint,
                "runtime_env": {**self.runtime_env, "py_modules": ["<torchx_ray_driver with app.json below>"]},
                "metadata": self.metadata,
                "app.json": self.spec,
            },
            indent=2,
            ensure_ascii=False,
        )


def validate_app(app: AppDef) -> None:
    """Checks what the job cannot carry.

    Raises:
        ValueError: a role name, env name or value that cannot be passed, and how to fix it
    """
    for role in app.roles:
        if not role.name or any(ord(c) < 32 or c == "\x7f" for c in role.name):
            raise ValueError(f"role name {role.name!r} is empty or has control characters; use printable names")
        if role.num_replicas < 1:
            raise ValueError(f"role {role.name!r} has {role.num_replicas} replicas; it needs at least 1")
        check_env(role)
        for arg in [role.entrypoint, *role.args]:
            if "\0" in arg:
                raise ValueError(f"role {role.name!r}: argument {arg!r} contains a NUL byte, which exec cannot pass")


def resources(role: Role) -> dict[str, float]:
    """The Ray resources of one replica: CPU, GPU, memory (bytes) and custom ones (``resource.devices``)."""
    res = role.resource
    out: dict[str, float] = {"CPU": res.cpu, "GPU": res.gpu, "memory": res.memMB * 1024 * 1024}
    out.update({name: count for name, count in res.devices.items()})
    return out


def role_spec(role: Role, app_id: str) -> dict[str, Any]:
    """A role in ``app.json``: argv and env with the macros filled, placeholders for what the cluster knows."""
    values = macros.Values(img_root=IMG_ROOT, app_id=app_id, replica_id=REPLICA_ID, rank0_env=RANK0_ENV)
    resolved = values.apply(role)
    env = {
        ENV_ROLE: role.name,
        ENV_REPLICA: REPLICA_ID,
        ENV_NUM_REPLICAS: str(role.num_replicas),
        RANK0_ENV: RANK0_HOST,
        "PYTHONUNBUFFERED": "1",
    }
    env.update(resolved.env)
    return {
        "name": role.name,
        "num_replicas": role.num_replicas,
        "argv": [resolved.entrypoint, *resolved.args],
        "env": env,
        "resources": resources(role),
    }


def read_requirements(path: str) -> list[str]:
    """The requirement lines of a requirements.txt (comments and blank lines dropped)."""
    with open(path, encoding="utf-8") as f:
        lines = (line.split("#", 1)[0].strip() for line in f)
        return [line for line in lines if line]


def build_job(app: AppDef, opts: RayOpts, working_dir: str | None) -> RayJob:
    """The job of ``app`` under ``opts``; ``working_dir`` is the shipped directory (None: none)."""
    address = opts.jobs_address()
    submission_id = make_unique(sanitize_name(app.name, 40), 10)
    app_id = make_app_id(address, submission_id)
    runtime_env: dict[str, Any] = {}
    if working_dir:
        runtime_env["working_dir"] = working_dir
    if opts.requirements:
        runtime_env["pip"] = read_requirements(opts.requirements)
    spec = {
        "app_id": app_id,
        "max_retries": min(role.max_retries for role in app.roles),
        "placement_strategy": opts.placement_strategy.upper(),
        "placement_timeout": opts.placement_timeout,
        "roles": [role_spec(role, app_id) for role in app.roles],
    }
    metadata = {META_APP: app.name, META_ROLES: json.dumps([[r.name, r.num_replicas] for r in app.roles])}
    return RayJob(address, submission_id, app_id, ENTRYPOINT, runtime_env, metadata, spec)
