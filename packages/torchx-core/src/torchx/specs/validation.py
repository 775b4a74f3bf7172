"""The one check of an :class:`AppDef`'s shape every submission goes through (see
:mod:`torchx.schedulers.submission`); schedulers check what only they know in ``_validate``."""

from __future__ import annotations

from torchx.specs.roles import MISSING, AppDef, Role


class AppDefError(ValueError):
    """An :class:`AppDef` is malformed."""


def validate_app(app: AppDef) -> None:
    """Checks the shape of an app: a name, named roles, entrypoints, replica counts.

    Two roles may share a name here, as in TorchX (a dry run shows the request);
    :func:`check_unique_role_names` refuses such an app when it is submitted.

    Raises:
        AppDefError: what is wrong and where
    """
    if not isinstance(app, AppDef):
        raise AppDefError(f"expected an AppDef, got {type(app).__name__}")
    if not app.name or not isinstance(app.name, str):
        raise AppDefError("the app has no name: set AppDef(name=...)")
    if not app.roles:
        raise AppDefError(f"app {app.name!r} has no roles: add at least one Role")
    for role in app.roles:
        where = f"app {app.name!r}, role {role.name!r}"
        if not role.name or not isinstance(role.name, str):
            raise AppDefError(f"app {app.name!r} has a role without a name")
        if not role.entrypoint or role.entrypoint == MISSING:
            raise AppDefError(f"{where}: no entrypoint; set Role(entrypoint=...)")
        if not isinstance(role.num_replicas, int) or isinstance(role.num_replicas, bool) or role.num_replicas < 1:
            raise AppDefError(f"{where}: num_replicas must be a positive int, got {role.num_replicas!r}")
        if role.min_replicas is not None and not (0 < role.min_replicas <= role.num_replicas):
            raise AppDefError(
                f"{where}: min_replicas={role.min_replicas} must be between 1 and num_replicas={role.num_replicas}"
            )
        if not isinstance(role.max_retries, int) or role.max_retries < 0:
            raise AppDefError(f"{where}: max_retries must be an int >= 0, got {role.max_retries!r}")
        if not isinstance(role.args, list) or not all(isinstance(a, str) for a in role.args):
            raise AppDefError(f"{where}: args must be a list of str, got {role.args!r}")
        if not isinstance(role.env, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in role.env.items()
        ):
            raise AppDefError(f"{where}: env must map str to str, got {role.env!r}")
        try:
            check_passable(role)
        except ValueError as e:
            raise AppDefError(str(e)) from None


def check_unique_role_names(app: AppDef) -> None:
    """Refuses an app with two roles of one name before it is submitted: status, logs and
    ``describe`` address a role by its name, so the second could not be told apart.

    Raises:
        AppDefError: which name is used twice
    """
    seen: set[str] = set()
    for role in app.roles:
        if role.name in seen:
            raise AppDefError(f"app {app.name!r} has two roles named {role.name!r}; role names must be unique")
        seen.add(role.name)


def check_passable(role: Role) -> None:
    """Raises ValueError if ``role``'s entrypoint, arguments or environment cannot reach a process
    at all (whatever the scheduler): a NUL byte anywhere (``exec`` ends each string at the first
    one), or an env name that is empty or holds ``=``. Checked for every app at dry run, so
    nothing is started that could not be started whole.
    """
    where = f"role {role.name!r}"
    for what, text in (("entrypoint", role.entrypoint), *((f"argument {i}", a) for i, a in enumerate(role.args))):
        if "\0" in text:
            raise ValueError(f"{where}: {what} {text!r} contains a NUL byte, which no process can receive; remove it")
    for key, value in role.env.items():
        if not key or "=" in key or "\0" in key:
            raise ValueError(f"{where}: env name {key!r} cannot be passed to a process (empty, or holds '=' or NUL)")
        if "\0" in value:
            raise ValueError(f"{where}: env {key} contains a NUL byte, which no process can receive; remove it")
