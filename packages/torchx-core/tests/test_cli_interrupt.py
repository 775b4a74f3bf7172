"""``torchx run`` owns an attached app: a real SIGINT cancels it, a second one exits at once, a
closed stdout ends the run quietly; ``--detach`` apps are never touched. The scheduler is a
plugin written here whose apps are files (so separate CLI processes see them)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCHEDULER = '''
import os, time
from torchx.schedulers.api import DescribeAppResponse, ListAppResponse, Scheduler, SchedulerCapabilities
from torchx.specs import AppDryRunInfo, AppState, runopts

ROOT = os.environ["FILEAPPS_DIR"]


class FileApps(Scheduler):
    """Apps are files holding their state; a cancel takes FILEAPPS_CANCEL_DELAY seconds."""

    capabilities = SchedulerCapabilities(attach=True)

    def __init__(self, session_name, **kwargs):
        super().__init__("fileapps", session_name)

    def _run_opts(self):
        return runopts()

    def _validate(self, app, scheduler, cfg):
        pass

    def _submit_dryrun(self, app, cfg):
        return AppDryRunInfo({"name": app.name}, str)

    def schedule(self, dryrun_info):
        app_id = f"{dryrun_info.request['name']}-{time.monotonic_ns()}"
        self._set(app_id, "RUNNING")
        return app_id

    def _set(self, app_id, state):
        with open(os.path.join(ROOT, app_id + ".tmp"), "w") as f:
            f.write(state)
        os.replace(os.path.join(ROOT, app_id + ".tmp"), os.path.join(ROOT, app_id))

    def describe(self, app_id):
        try:
            with open(os.path.join(ROOT, app_id)) as f:
                state = AppState[f.read()]
        except FileNotFoundError:
            return None
        return DescribeAppResponse(app_id=app_id, state=state, msg=state.name.lower())

    def list(self, cfg=None):
        return [ListAppResponse(a, self.describe(a).state) for a in os.listdir(ROOT) if not a.endswith(".tmp")]

    def _cancel_existing(self, app_id):
        time.sleep(float(os.environ.get("FILEAPPS_CANCEL_DELAY", "0")))
        self._set(app_id, "CANCELLED")

    def log_iter(self, app_id, role_name, k=0, regex=None, since=None, until=None, should_tail=False, streams=None):
        i = 0
        while self.describe(app_id).state == AppState.RUNNING:
            yield f"line {i}\\n"
            i += 1
            time.sleep(0.02)


def create_scheduler(session_name, **kwargs):
    return FileApps(session_name, **kwargs)
'''

PLUGIN = """
from torchx.plugins import hookimpl, SchedulerPlugin

@hookimpl
def torchx_schedulers():
    yield SchedulerPlugin("fileapps", "fileapps.scheduler:create_scheduler", "apps as files")
"""

COMPONENT = '''
import torchx.specs as specs


def job() -> specs.AppDef:
    """A job."""
    return specs.AppDef("job", [specs.Role("r", image="img", entrypoint="x")])
'''


@pytest.fixture
def env(make_dist, isolated: Path, tmp_path: Path) -> dict[str, str]:  # type: ignore[no-untyped-def]
    site = make_dist(
        "torchx-fileapps",
        {"torchx": {"fileapps": "fileapps.plugin"}},
        {"fileapps/__init__.py": "", "fileapps/plugin.py": PLUGIN, "fileapps/scheduler.py": SCHEDULER},
    )
    (isolated / "comp.py").write_text(COMPONENT)
    apps = tmp_path / "apps"
    apps.mkdir()
    return {**os.environ, "PYTHONPATH": str(site), "FILEAPPS_DIR": str(apps)}


def _run(env: dict[str, str], *args: str, quiet: bool = True) -> subprocess.Popen[str]:
    """``torchx run`` (``--quiet``: no status lines, so stderr holds only what is checked)."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "torchx",
            "run",
            "-s",
            "fileapps",
            *(["--quiet"] if quiet else []),
            *args,
            "comp.py:job",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _state(env: dict[str, str], handle: str) -> str:
    return (Path(env["FILEAPPS_DIR"]) / handle.rsplit("/", 1)[1]).read_text()


def _attached(proc: subprocess.Popen[str]) -> str:
    """The handle, once the app's output flows (the run is following it)."""
    assert proc.stdout is not None
    handle = proc.stdout.readline().strip()
    assert handle.startswith("fileapps://torchx/job-"), handle
    assert proc.stdout.readline().endswith("line 0\n")
    return handle


def test_ctrl_c_cancels_an_attached_app(env: dict[str, str]) -> None:
    proc = _run(env)
    handle = _attached(proc)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert err.splitlines()[1:] == [
        f"torchx: cancelling {handle} (Ctrl-C again to exit at once)",
        f"torchx: {handle} CANCELLED: cancelled",
    ]
    assert _state(env, handle) == "CANCELLED"


def test_a_second_ctrl_c_exits_at_once(env: dict[str, str]) -> None:
    proc = _run({**env, "FILEAPPS_CANCEL_DELAY": "30"})
    handle = _attached(proc)
    proc.send_signal(signal.SIGINT)
    assert proc.stderr is not None
    proc.stderr.readline()
    assert proc.stderr.readline().startswith(f"torchx: cancelling {handle}")
    t = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert time.monotonic() - t < 5.0  # at once, not after the 30 s cancel (bound: a loaded machine)
    assert proc.returncode == 130
    assert f"exiting without waiting; see `torchx status {handle}`" in err


def test_a_closed_output_cancels_quietly(env: dict[str, str]) -> None:
    proc = _run(env, quiet=False)
    handle = _attached(proc)
    assert proc.stdout is not None
    assert proc.stderr is not None
    proc.stdout.close()
    assert proc.wait(timeout=60) == 141
    # nothing but the status lines (state changes, as stderr is no terminal): no error, no traceback
    status_line = re.compile(rf"torchx: {re.escape(handle)} [A-Z]+  .*")  # `STATE  0:00  msg`
    assert all(status_line.fullmatch(line) for line in proc.stderr.read().splitlines())
    assert _state(env, handle) == "CANCELLED"


def test_ctrl_c_only_stops_waiting_for_a_detached_app(env: dict[str, str]) -> None:
    proc = _run(env, "--detach", "--wait")
    assert proc.stdout is not None
    handle = proc.stdout.readline().strip()  # printed once the run handles Ctrl-C
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert err.strip() == f"torchx: stopped waiting; {handle} goes on (`torchx cancel {handle}` stops it)"
    assert _state(env, handle) == "RUNNING"
