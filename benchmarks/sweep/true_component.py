"""The component the sweep benchmark runs: ``/bin/true`` (the trial's index as its argument)."""

from __future__ import annotations

import torchx.specs as specs


def true(i: int = 0) -> specs.AppDef:
    """Runs ``/bin/true INDEX``.

    Args:
        i: the trial's index
    """
    role = specs.Role("t", image="/tmp", entrypoint="/bin/true", args=[str(i)], resource=specs.Resource(1, 0, 64))
    return specs.AppDef("true", [role])
