"""The component finder's lint cache: a file is parsed again only when it changed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

COMPONENT = '''
from torchx import specs


def hello(msg: str = "hi") -> specs.AppDef:
    """Says hello.

    Args:
        msg: what to say
    """
    return specs.AppDef(name="hello")


def broken(x) -> specs.AppDef:
    """Lacks an annotation."""
    return specs.AppDef(name="broken")
'''

SCAN = (
    "import sys; from torchx.specs.finder import _scan_files; print(_scan_files(sys.argv[1:])[sys.argv[1]]);"
    " print('ast' in sys.modules)"
)


def _scan_in_fresh_process(path: Path, cache: Path) -> tuple[str, bool]:
    env = {**os.environ, "TORCHX_CACHE_DIR": str(cache)}
    env.pop("TORCHX_NO_PLUGIN_CACHE", None)
    out = subprocess.run([sys.executable, "-c", SCAN, str(path)], env=env, capture_output=True, text=True, check=True)
    result, parsed = out.stdout.splitlines()
    return result, parsed == "True"


def test_lint_results_are_cached_until_the_file_changes(tmp_path: Path) -> None:
    component = tmp_path / "comp.py"
    component.write_text(COMPONENT)
    first, parsed = _scan_in_fresh_process(component, tmp_path / "cache")
    assert parsed
    assert "('hello', 'Says hello.', [])" in first
    assert "'broken'" in first
    assert "missing type annotation" in first

    again, parsed = _scan_in_fresh_process(component, tmp_path / "cache")
    assert (again, parsed) == (first, False)  # from the cache: nothing parsed

    component.write_text(COMPONENT.replace("Says hello.", "Greets you."))
    changed, parsed = _scan_in_fresh_process(component, tmp_path / "cache")
    assert parsed
    assert "'Greets you.'" in changed


def test_cache_off_parses_every_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    component = tmp_path / "comp.py"
    component.write_text(COMPONENT)
    monkeypatch.setenv("TORCHX_NO_PLUGIN_CACHE", "1")
    env = {**os.environ, "TORCHX_CACHE_DIR": str(tmp_path / "cache")}
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", SCAN, str(component)], env=env, capture_output=True, text=True)
        assert out.stdout.splitlines()[-1] == "True"
    assert not (tmp_path / "cache").exists()
