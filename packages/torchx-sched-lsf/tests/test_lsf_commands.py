"""Which bjobs form the scheduler uses, checked with stand-in ``bjobs``/``lsid`` executables that
print the fixtures (IBM's JSON shape for real LSF; recorded OpenLava output) and log their argv."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from torchx.specs.status import AppState
from torchx_sched_lsf.scheduler import LsfScheduler

FIXTURES = Path(__file__).parent / "fixtures"
OPENLAVA_USAGE = "bjobs: invalid option -- 'o'\\nUsage: bjobs [-h] [-V] [-w |-l] ..."


def tool(bindir: Path, name: str, body: str) -> None:
    path = bindir / name
    path.write_text(f'#!/bin/bash\necho "$0 $*" >> {bindir}/calls\n{body}\n')
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


@pytest.fixture
def bindir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    return tmp_path


def calls(bindir: Path) -> list[str]:
    return [line.split(" ", 1)[1] for line in (bindir / "calls").read_text().splitlines()]


def test_real_lsf_uses_bjobs_json(bindir: Path) -> None:
    tool(bindir, "bjobs", f'[[ " $* " == *" -json "* ]] && cat {FIXTURES / "ibm_bjobs_json.txt"}')
    tool(bindir, "lsid", 'echo "IBM Spectrum LSF Standard 10.1.0.13, Jan 01 2023"')
    sched = LsfScheduler("s")
    desc = sched.describe("5100")
    assert desc is not None and desc.state == AppState.RUNNING
    assert [(r.role, len(r.replicas)) for r in desc.roles_statuses] == [("trainer", 2), ("ps", 1)]
    assert sched.describe("5102").state == AppState.CANCELLED  # type: ignore[union-attr]
    assert [a.name for a in sched.list()] == ["train", "bad", "sleepy", "waiting"]
    assert all(" -json" in c and c.startswith("-o ") for c in calls(bindir))
    assert sched.has_gpu_flag()


def test_openlava_falls_back_to_unformatted_once(bindir: Path) -> None:
    tool(
        bindir,
        "bjobs",
        f'if [[ " $* " == *" -json "* ]]; then printf "{OPENLAVA_USAGE}\\n" >&2; exit 255; fi\n'
        f"cat {FIXTURES / 'openlava_exit.uf.txt'}",
    )
    tool(bindir, "lsid", 'echo "OpenLava 4.0dev4, Nov 24 2026"')
    sched = LsfScheduler("s")
    job_id = (FIXTURES / "openlava_exit.uf.txt").read_text().split("<", 1)[1].split(">", 1)[0]
    for _ in range(2):
        desc = sched.describe(job_id)
        assert desc is not None and desc.state == AppState.FAILED and "exit code 3" in desc.msg
    made = calls(bindir)
    assert len(made) == 3 and "-json" in made[0] and all("-UF" in c for c in made[1:])  # JSON tried once
    assert not sched.has_gpu_flag()


def test_unknown_job(bindir: Path) -> None:
    tool(bindir, "bjobs", 'echo "Job <$3> is not found" >&2; exit 255')
    sched = LsfScheduler("s")
    assert sched.describe("4242") is None
    assert sched.describe("not-a-number") is None
