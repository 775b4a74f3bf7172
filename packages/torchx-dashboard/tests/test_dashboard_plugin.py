"""The plugin: ``torchx dashboard`` is registered, and nothing of the web stack loads unless it runs."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROBE = """
import sys
from torchx.cli.main import run_cli
try:
    run_cli({args!r})
except SystemExit:
    pass
print("LOADED", sorted(m for m in sys.modules if m.split(".")[0] in ("starlette", "uvicorn", "anyio", "h11")
      or m.startswith("torchx_dashboard.")), file=sys.stderr)
"""


@pytest.mark.parametrize("args", [["--help"], ["dashboard", "--help"], ["plugins"]])
def test_the_web_stack_is_not_imported_by_other_commands(args: list[str]) -> None:
    for _ in range(2):  # the first run may discover plugins
        proc = subprocess.run(
            [sys.executable, "-c", PROBE.format(args=args)], capture_output=True, text=True, timeout=60
        )
    loaded = [line for line in proc.stderr.splitlines() if line.startswith("LOADED")]
    expected = "LOADED ['torchx_dashboard.cli']" if args[0] == "dashboard" else "LOADED []"
    assert loaded == [expected], proc.stderr[-2000:]


def test_torchx_help_lists_the_command() -> None:
    proc = subprocess.run([sys.executable, "-m", "torchx", "--help"], capture_output=True, text=True, timeout=60)
    assert "dashboard" in proc.stdout
    assert "serve a web page of every job" in proc.stdout
