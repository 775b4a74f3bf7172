"""Placeholders in a role's entrypoint, args, env and metadata, filled in per replica."""

from __future__ import annotations

from torchx.specs.roles import Role
from torchx.util.record import record, replace

#: The environment variable every scheduler sets, in every replica, to the host of replica 0 of
#: the first role; ``macros.rank0_env`` expands to this name (components read ``$TORCHX_RANK0_HOST``).
RANK0_ENV = "TORCHX_RANK0_HOST"

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Collection, Iterable
    from typing import Any


def _reference(text: str, i: int) -> tuple[str, int]:
    """What the ``$`` at ``text[i]`` starts, as :class:`string.Template` reads it, and where it ends.

    ``("$", i + 2)`` for ``$$``; ``(identifier, end)`` for ``$identifier`` and ``${identifier}``;
    ``("", i + 1)`` for a ``$`` that starts no placeholder (left as it is by ``safe_substitute``).
    """
    j = i + 1
    braced = text.startswith("{", j)
    if text.startswith("$", j):
        return "$", j + 1
    k = j + braced
    if k < len(text) and (text[k] == "_" or ("a" <= text[k].lower() <= "z" and text[k].isascii())):
        end = k + 1
        while end < len(text) and (text[end] == "_" or (text[end].isascii() and text[end].isalnum())):
            end += 1
        if not braced:
            return text[k:end], end
        if text.startswith("}", end):
            return text[k:end], end + 1
    return "", j


class macros:
    """Macros usable in :class:`Role` ``entrypoint``, ``args``, ``env`` and ``metadata``.

    * ``img_root``: root directory of the image
    * ``app_id``: the id the scheduler gave the app
    * ``replica_id``: the replica's index within its role (stable across restarts)
    * ``rank0_env``: NAME of the environment variable that holds the rank-0 host
      (expand it yourself, e.g. ``$${rank0_env}`` in a shell)

    Substitution follows :class:`string.Template`: ``$$`` stands for a literal ``$`` (so a
    shell's ``$$`` must be written ``$$$$``), and unknown ``${...}`` are left alone.

    Every scheduler fills the macros into each argument and environment value on its own
    (:meth:`Values.apply`) and hands it to the process as one argv item or env value, never
    through a shell. A macro written inside a shell script (``sh -c "ls ${img_root}"``) is
    NOT safe: the value becomes shell code. Pass values to a shell as arguments instead,
    with :meth:`shell_args`.

    Example::

        Role(name="trainer", entrypoint="train.py", args=["--app_id", macros.app_id])
        Role(name="ls", entrypoint="sh", args=macros.shell_args('cd "$1" && ls', [macros.img_root]))
    """

    img_root = "${img_root}"
    base_img_root = "${base_img_root}"
    app_id = "${app_id}"
    replica_id = "${replica_id}"
    rank0_env = "${rank0_env}"

    #: the macro names (what ``${name}`` and ``$name`` are filled for)
    NAMES = ("img_root", "base_img_root", "app_id", "replica_id", "rank0_env")

    @staticmethod
    def escape(text: str, keep: Collection[str] = ()) -> str:
        """The template that fills to ``text`` itself, but for the macros named in ``keep``.

        Doubles each ``$`` that filling would change: a ``$$`` and a reference to a macro not
        in ``keep``. Every other ``$`` (``$HOME``, ``$(...)``, ``$@``, ``${x:-y}``) is left as it
        is, since filling leaves it alone. Components pass user text through it, so that text
        without macros reaches the process byte for byte::

            macros.escape("cost $$5 ${app_id}") == "cost $$$$5 $${app_id}"
            macros.escape("--id=${app_id} $$", keep=macros.NAMES) == "--id=${app_id} $$$$"
        """
        if "$" not in text:
            return text
        out: list[str] = []
        start = 0
        i = text.find("$")
        while i >= 0:
            name, end = _reference(text, i)
            if name == "$":
                out.append(text[start:i] + "$$")  # "$$" -> "$$$$"
                start = i
            elif name in macros.NAMES and name not in keep:
                out.append(text[start:i] + "$")  # "${app_id}" -> "$${app_id}"
                start = i
            i = text.find("$", end)
        out.append(text[start:])
        return "".join(out)

    @staticmethod
    def shell_args(script: str, words: Iterable[str], name: str = "sh") -> list[str]:
        """Role ``args`` that run ``script`` with a POSIX shell, ``words`` being its arguments.

        Gives ``["-c", script, name, *words]``: the role's entrypoint (``sh``, ``bash``) runs
        ``script`` with ``$0`` = ``name`` and ``$1``, ``$2``, ... (``"$@"``) = ``words``. Each
        word is one argument: its macros are filled by the scheduler as data (a quote, ``$(...)``
        or newline in a value is never shell code) and the rest of it arrives byte for byte.
        In ``script`` only ``${rank0_env}`` is filled (with a variable NAME, so that
        ``"${${rank0_env}:-localhost}"`` reads the rank-0 host); everything else reaches the
        shell as written. Never put a macro or user text in ``script``: pass it as a word.

        Example (runs ``ls -l <image root>/data``)::

            Role("ls", image, entrypoint="sh", args=macros.shell_args('exec ls -l "$@"', [f"{macros.img_root}/data"]))
        """
        every = macros.NAMES
        return [
            "-c",
            macros.escape(script, keep=("rank0_env",)),
            macros.escape(name),
            *(macros.escape(w, keep=every) for w in words),
        ]

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

        def _substitute_any(self, value: Any, mapping: dict[str, str]) -> Any:
            if isinstance(value, str):
                if "$" not in value:
                    return value
                from string import Template  # on first use: a job without macros never imports it

                return Template(value).safe_substitute(mapping)
            if isinstance(value, dict):
                return {k: self._substitute_any(v, mapping) for k, v in value.items()}
            if isinstance(value, list):
                return [self._substitute_any(v, mapping) for v in value]
            return value

        def apply(self, role: Role) -> Role:
            """Returns a copy of ``role`` with the macros filled in; ``role`` is left as it is."""
            mapping = self._mapping()
            sub = self._substitute_any
            return replace(
                role,
                entrypoint=sub(role.entrypoint, mapping),
                args=[sub(a, mapping) for a in role.args],
                env={k: sub(v, mapping) for k, v in role.env.items()},
                metadata=sub(role.metadata, mapping),
                port_map=dict(role.port_map),
                mounts=list(role.mounts),
            )
