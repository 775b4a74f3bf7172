"""Every distribution in packages/ is discovered as a plugin, with no errors."""

from __future__ import annotations

import json

from torchx.testing import run_torchx


def test_all_installed_plugins_load_cleanly() -> None:
    proc = run_torchx("plugins", "--json")
    data = json.loads(proc.stdout)
    errors = {p["dist"]: p["errors"] for p in data["plugins"] if p["errors"]}
    assert not errors, errors
    assert proc.returncode == 0


def test_every_builtin_distribution_registers_natively_and_discovery_imports_none_of_them() -> None:
    """Each distribution of packages/ registers through ``<kind>.<name>`` entry points of the group
    ``torchx`` (read from its metadata), so discovering all of them imports none of their code."""
    import subprocess
    import sys
    from pathlib import Path

    packages = sorted(p.name for p in (Path(__file__).parents[1] / "packages").iterdir() if p.name != "torchx-core")
    probe = (
        "import json, sys\n"
        "from torchx.plugins import get_registry\n"
        "reg = get_registry(refresh=True)\n"
        "print(json.dumps({'groups': {p.dist: [p.group, p.name] for p in reg.plugins},"
        " 'loaded': sorted(m for m in sys.modules if m.startswith('torchx_') and m != 'torchx_plugins')}))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    data = json.loads(out.stdout)
    installed = [p for p in packages if p in data["groups"]]
    assert installed, data
    assert {p: data["groups"][p] for p in installed} == {p: ["torchx", ""] for p in installed}
    assert data["loaded"] == []
