"""The README's Python snippet prints what its comments say."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("torchx_sched_local")
pytest.importorskip("torchx_components")

README = Path(__file__).parents[2] / "README.md"


def test_readme_python_snippet(isolated: Path, script: Callable[..., subprocess.CompletedProcess[str]]) -> None:
    block = re.search(r"```python\n(from torchx.runner import get_runner\n.*?)```", README.read_text(), re.S)
    assert block is not None, "the README's Runner snippet is gone"
    source = block.group(1)
    promised = [m.group(1) for m in re.finditer(r"^\s*print\(.*\)\s*#\s*(.+)$", source, re.M)]
    assert promised, "the snippet's print lines say what they print"
    proc = script(isolated / "snippet.py", source)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == promised
