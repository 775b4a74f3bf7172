"""``python -m torchx.apps.serve.serve`` / ``torchx.apps.utils.process_monitor`` (the programs
upstream's ``serve.torchserve`` and ``metrics.tensorboard`` run) without torchx-components."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

PROGRAMS = ["torchx.apps.serve.serve", "torchx.apps.utils.process_monitor"]


@pytest.mark.parametrize("program", PROGRAMS)
def test_program_without_components_says_what_to_install(program: str) -> None:
    # the job's image has torchx-core only: the import of torchx_components fails as it would
    code = (
        "import runpy, sys; sys.modules['torchx_components'] = None; "
        f"sys.argv[0] = {program!r}; runpy.run_module({program!r}, run_name='__main__')"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, "--timeout", "1", "--", "true"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 1
    assert out.stdout == ""
    lines = out.stderr.splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith(f"{program}: error: this program is provided by torchx-components")
    assert "pip install" in lines[0] and "torchx-components" in lines[0].rpartition("pip install")[2]


def test_a_missing_dependency_of_the_program_is_not_blamed_on_components(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torchx.apps import run_components_app

    # the program exists but one of its own imports fails: that error is the program's
    (tmp_path / "prog_with_missing_dep_xyz.py").write_text("import no_such_dependency_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="no_such_dependency_xyz"):
        run_components_app("p", "prog_with_missing_dep_xyz", [])


def test_program_runs_the_implementation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from torchx.apps import run_components_app

    (tmp_path / "prog_exit_xyz.py").write_text("def main(argv):\n    return 40 + len(argv)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert run_components_app("p", "prog_exit_xyz", ["a", "b"]) == 42
