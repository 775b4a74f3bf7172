"""Placeholders in a role's entrypoint, args, env and metadata, filled in per replica."""

from __future__ import annotations

from torchx.specs.roles import Role
from torchx.util.record import record, replace

#: The environment variable every scheduler sets, in every replica, to the host of replica 0 of
#: the first role; ``macros.rank0_env`` expands to this name (components read ``$TORCHX_RANK0_HOST``).
RANK0_ENV = "TORCHX_RANK0_HOST"

TYPE_CHECKING = False
if TYPE_CHECKING:
    from string import Template
    from typing import Any


class macros:
    """Macros usable in :class:`Role` ``entrypoint``, ``args``, ``env`` and ``metadata``.

    * ``img_root``: root directory of the image
    * ``app_id``: the id the scheduler gave the app
    * ``replica_id``: the replica's index within its role (stable across restarts)
    * ``rank0_env``: NAME of the environment variable that holds the rank-0 host
      (expand it yourself, e.g. ``$${rank0_env}`` in a shell)

    Substitution follows :class:`string.Template`: ``$$`` stands for a literal ``$`` (so a
    shell's ``$$`` must be written ``$$$$``), and unknown ``${...}`` are left alone.

    Example::

        Role(name="trainer", entrypoint="train.py", args=["--app_id", macros.app_id])
    """

    img_root = "${img_root}"
    base_img_root = "${base_img_root}"
    app_id = "${app_id}"
    replica_id = "${replica_id}"
    rank0_env = "${rank0_env}"

    @record
    class Values:
        """The values macros take for one replica."""

        img_root: str
        app_id: str
        replica_id: str
        rank0_env: str = ""
        base_img_root: str = "DEPRECATED"

        def _mapping(self) -> dict[str, str]:
            return {
                "img_root": self.img_root,
                "app_id": self.app_id,
                "replica_id": str(self.replica_id),
                "rank0_env": self.rank0_env,
                "base_img_root": self.base_img_root,
            }

        def substitute(self, arg: str) -> str:
            """Fills the macros in one string (unknown ``${...}`` are left as they are)."""
            if "$" not in arg:
                return arg
            from string import Template

            return Template(arg).safe_substitute(self._mapping())

        def _substitute_any(self, value: Any, mapping: dict[str, str], template: type[Template]) -> Any:
            if isinstance(value, str):
                return template(value).safe_substitute(mapping) if "$" in value else value
            if isinstance(value, dict):
                return {k: self._substitute_any(v, mapping, template) for k, v in value.items()}
            if isinstance(value, list):
                return [self._substitute_any(v, mapping, template) for v in value]
            return value

        def apply(self, role: Role) -> Role:
            """Returns a copy of ``role`` with the macros filled in; ``role`` is left as it is."""
            from string import Template  # imported on first use: keeps `import torchx.specs` cheap

            mapping = self._mapping()
            sub = self._substitute_any
            return replace(
                role,
                entrypoint=sub(role.entrypoint, mapping, Template),
                args=[sub(a, mapping, Template) for a in role.args],
                env={k: sub(v, mapping, Template) for k, v in role.env.items()},
                metadata=sub(role.metadata, mapping, Template),
                port_map=dict(role.port_map),
                mounts=list(role.mounts),
            )
