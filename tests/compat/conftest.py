"""Compatibility suite: code written for TorchX 0.7 (from its documentation) runs unchanged.

The test plugins under ``plugins/`` are real distributions: they are pip-installed once per
session into their own directories (not into the environment, since a legacy
``torchx.components`` entry point changes every component name), and a test puts one on
``sys.path`` and ``PYTHONPATH`` with the :func:`use_dist` fixture.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torchx.plugins
from torchx.testing import install_distribution

PLUGINS = Path(__file__).parent / "plugins"


@pytest.fixture(scope="session")
def installed_dists(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Name -> the directory the test distribution of ``plugins/<name>`` is installed into."""
    out = {}
    for src in sorted(PLUGINS.iterdir()):
        if (src / "pyproject.toml").is_file():
            target = tmp_path_factory.mktemp(f"dist-{src.name}")
            install_distribution(src, target)
            out[src.name] = target
    return out


@pytest.fixture
def use_dist(installed_dists: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], Path]]:
    """``use_dist("legacy_sched")`` makes that distribution installed for this test (in process
    and for the ``torchx`` processes it starts)."""
    added: list[str] = []

    def use(name: str) -> Path:
        target = installed_dists[name]
        monkeypatch.syspath_prepend(str(target))
        monkeypatch.setenv(
            "PYTHONPATH", os.pathsep.join([str(target), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        )
        added.extend(p.name for p in target.iterdir() if p.suffix != ".dist-info")
        torchx.plugins.reset()
        return target

    yield use
    torchx.plugins.reset()
    for top in added:
        for key in [k for k in sys.modules if k == top or k.startswith(top + ".")]:
            del sys.modules[key]


def _write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def write() -> Callable[[Path, str], Path]:
    """``write(path, text)`` writes a (dedented) file the user would have, e.g. a ``.torchxconfig``."""
    return _write


def _script(path: Path, source: str, *args: str) -> subprocess.CompletedProcess[str]:
    path.write_text(textwrap.dedent(source))
    return subprocess.run(
        [sys.executable, str(path), *args], capture_output=True, text=True, cwd=path.parent, timeout=180
    )


@pytest.fixture
def script() -> Callable[..., subprocess.CompletedProcess[str]]:
    """``script(path, source, *args)`` writes a user's python script to ``path`` and runs it
    from its directory."""
    return _script
