"""The versioned plugin API (torchx.plugins.api_level): plugins built for a newer and an older
API level, and one whose torchx-core dependency excludes the installed core, are real
distributions (plugins/api_*), pip-installed; core loads nothing from them and ``torchx
plugins`` names each in one line with the package to upgrade."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from torchx.plugins import get_registry
from torchx.plugins.api_level import OLDEST_PLUGIN_API_LEVEL, PLUGIN_API_LEVEL
from torchx.testing import run_torchx

DISTS = ("api_current", "api_needs_core", "api_newer", "api_older")


@pytest.fixture(autouse=True)
def api_plugins(use_dist: Callable[[str], Path]) -> None:
    for name in DISTS:
        use_dist(name)


def test_levels_are_declared() -> None:
    assert 1 <= OLDEST_PLUGIN_API_LEVEL <= PLUGIN_API_LEVEL


def test_incompatible_plugins_load_nothing() -> None:
    registry = get_registry()
    by_dist = {p.dist: p for p in registry.plugins if p.dist.startswith("api-")}
    assert set(by_dist) == {"api-current", "api-needs-core", "api-newer", "api-older"}
    current = by_dist.pop("api-current")
    assert not current.incompatible and not current.errors
    assert "api_current" in registry.schedulers
    assert current.event_hooks == ["torchx_pre_submit"]
    for dist, info in by_dist.items():
        assert info.incompatible, dist
        assert info.registers == {} and info.event_hooks == [], dist
        assert info.name not in registry.schedulers
    assert "api_needs_core.plugin" not in sys.modules  # its dependency was checked before importing it
    assert [p.dist for p in registry.event_hook_plugins() if p.dist.startswith("api-")] == ["api-current"]


def test_torchx_plugins_names_what_to_upgrade_in_one_line() -> None:
    proc = run_torchx("plugins")
    assert proc.returncode == 1  # a plugin that cannot load is an error
    lines = {line.split()[0]: line for line in proc.stdout.splitlines() if line.startswith("api-")}
    assert set(lines) == {"api-current", "api-needs-core", "api-newer", "api-older"}
    assert lines["api-current"].endswith("(ok)")
    assert "incompatible: written for plugin API level 2-3" in lines["api-newer"]
    assert "upgrade torchx-core (`pip install -U" in lines["api-newer"]
    assert "incompatible: written for plugin API level 0;" in lines["api-older"]
    assert "upgrade api-older (`pip install -U api-older`)" in lines["api-older"]
    assert "incompatible: requires torchx-core>=99" in lines["api-needs-core"]
    assert "upgrade torchx-core" in lines["api-needs-core"]
    # one line each: nothing below an incompatible plugin's line
    out = proc.stdout.splitlines()
    for dist in ("api-needs-core", "api-newer", "api-older"):
        after = out[out.index(lines[dist]) + 1 : out.index(lines[dist]) + 2]
        assert not after or not after[0].startswith("    "), dist


def test_using_an_incompatible_scheduler_says_why() -> None:
    proc = run_torchx("run", "--dryrun", "-s", "api_newer", "utils.echo")
    assert proc.returncode != 0
    assert "api-newer 1.0 failed to load: incompatible: written for plugin API level 2-3" in proc.stderr
    assert "Traceback" not in proc.stderr
