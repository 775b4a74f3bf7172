"""What every scheduler checks of a role's environment before it builds a request."""

from __future__ import annotations

import re
from collections.abc import Iterable

from torchx.specs.roles import Role

#: a name a shell, Kubernetes, Batch, SageMaker and Ray all accept as an environment variable
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_env(role: Role, names: Iterable[str] | None = None, backend: str = "") -> None:
    """Raises ValueError for the first environment variable of ``role`` (or of ``names``, for
    variables a scheduler adds) whose name is not ``[A-Za-z_][A-Za-z0-9_]*``, or whose value
    holds a NUL byte (no process can receive one).

    Args:
        role: the role whose ``env`` is checked
        names: names to check instead of ``role.env``'s (their values are not checked)
        backend: the scheduler's name, to start the message with
    """
    prefix = f"{backend}: " if backend else ""
    for key in role.env if names is None else names:
        if not ENV_NAME.fullmatch(key):
            raise ValueError(
                f"{prefix}role {role.name!r}: env name {key!r} is not a valid variable name"
                " (letters, digits and _, not starting with a digit)"
            )
    if names is None:
        for key, value in role.env.items():
            if "\0" in value:
                raise ValueError(
                    f"{prefix}role {role.name!r}: env {key} contains a NUL byte, which no process can receive"
                )
