"""One ``pytest`` at the repository root collects every test tree (tests/ and each package's
tests) without import errors or module-name clashes: shared helpers are fixtures or
``torchx.testing``, never a module imported by a bare name (``from conftest import ...``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_one_pytest_at_the_root_collects_the_whole_tree() -> None:
    # the pytest script, not `python -m pytest`: that would put the root on sys.path
    pytest_exe = Path(sys.executable).with_name("pytest")
    proc = subprocess.run(
        [str(pytest_exe), "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    summary = proc.stdout.strip().splitlines()[-1]
    assert "error" not in summary, summary
    node_ids = [line for line in proc.stdout.splitlines() if "::" in line]
    collected = {n.split("/tests/", 1)[0] if n.startswith("packages/") else "tests" for n in node_ids}
    expected = {"tests"} | {f"packages/{p.name}" for p in (ROOT / "packages").iterdir() if (p / "tests").is_dir()}
    assert collected == expected, summary
