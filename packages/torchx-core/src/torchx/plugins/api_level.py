"""The plugin API level: which installed plugins this torchx-core can load.

Core implements :data:`PLUGIN_API_LEVEL` and still loads plugins written for any level down
to :data:`OLDEST_PLUGIN_API_LEVEL` (their hooks and records keep working as they did). A
plugin says what it was written for in two places:

* its distribution's dependency on ``torchx-core`` (``dependencies = ["torchx-core>=0.1,<0.3"]``),
  which pip resolves at install time and core checks again at discovery (a later upgrade or
  downgrade of torchx-core may have broken it);
* the levels it works with: an entry point ``api = "1-2"`` in the group ``torchx``
  (an older hook module of that group: ``TORCHX_PLUGIN_API = (1, 2)``); a plugin that
  declares nothing is taken as written for level 1.

A plugin outside the range is *incompatible*: core imports nothing from it (the dependency
and the declared range are read from its metadata; a hook module's range before any of
its hooks is registered), and ``torchx plugins`` shows it in one line naming the package to upgrade. The
policy (what may change in a minor release, how a hook is deprecated, for how long the old
form works) is in ``docs/writing-a-plugin.md``.
"""

from __future__ import annotations

from torchx.util.distributions import CORE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

#: the plugin API level this torchx-core implements
PLUGIN_API_LEVEL = 1

#: the oldest level whose plugins still load
OLDEST_PLUGIN_API_LEVEL = 1

#: what a plugin that declares nothing is taken to be written for
UNDECLARED = (1, 1)


def _upgrade(dist: str) -> str:
    from torchx.util.distributions import pip_install

    return f"upgrade {dist} (`{pip_install(dist, upgrade=True)}`)"


def parse_levels(value: object) -> tuple[int, int]:
    """``(lowest, highest)`` from a declaration: ``(1, 2)`` or ``1`` (a hook module's
    ``TORCHX_PLUGIN_API``), ``"1-2"`` or ``"1"`` (an ``api`` entry point); None: :data:`UNDECLARED`.

    Raises:
        ValueError: the declaration is not two whole numbers, lowest first
    """
    if value is None:
        return UNDECLARED
    if isinstance(value, str):
        value = value.replace(" ", "")
    if isinstance(value, str) and value.replace("-", "").strip().isdigit() and value.count("-") < 2:
        value = tuple(int(v) for v in value.split("-"))
        value = value * 2 if len(value) == 1 else value
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value, value)
    if (
        not isinstance(value, tuple)
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        or value[0] > value[1]
    ):
        raise ValueError(f'plugin API levels {value!r}: give lowest-highest (api = "1-2"; TORCHX_PLUGIN_API = (1, 2))')
    return value[0], value[1]


def level_problem(dist: str, levels: tuple[int, int]) -> str | None:
    """Why a plugin of ``dist`` written for ``levels`` cannot load here, or None if it can."""
    low, high = levels
    written = f"written for plugin API level {low}" + (f"-{high}" if high != low else "")
    here = f"{CORE} {_core_version()} implements levels {OLDEST_PLUGIN_API_LEVEL}-{PLUGIN_API_LEVEL}"
    if low > PLUGIN_API_LEVEL:
        return f"incompatible: {written}; {here}: {_upgrade(CORE)}"
    if high < OLDEST_PLUGIN_API_LEVEL:
        return f"incompatible: {written}; {here}: {_upgrade(dist)}"
    return None


def requirement_problem(dist: str, requires: Iterable[str]) -> str | None:
    """Why ``dist``, whose metadata lists ``requires``, cannot load with the installed
    torchx-core (its ``torchx-core`` dependency excludes it), or None."""
    lines = [r for r in requires if r.replace("_", "-").lower().startswith(CORE)]
    if not lines:
        return None
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.version import InvalidVersion, Version

    try:
        installed = Version(_core_version())
    except InvalidVersion:
        return None
    for line in lines:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.name.replace("_", "-").lower() != CORE or (req.marker is not None and not req.marker.evaluate()):
            continue
        if req.specifier.contains(installed, prereleases=True):
            continue
        core_too_old = any(
            s.operator in (">=", ">", "==", "~=", "===") and installed < Version(s.version.rstrip(".*"))
            for s in req.specifier
        )
        fix = _upgrade(CORE) if core_too_old else _upgrade(dist)
        return f"incompatible: requires {CORE}{req.specifier}, {_core_version()} is installed: {fix}"
    return None


def _core_version() -> str:
    from torchx.version import distribution_version

    return distribution_version(CORE)
