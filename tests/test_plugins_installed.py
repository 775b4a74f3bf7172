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
