"""Isolation (own HOME, cwd, local and sweep state), real jobs (processes of core's test
scheduler ``procs``, so no scheduler distribution is needed), and dashboard servers run as
``torchx dashboard``."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from torchx.testing import isolate, python_app
from torchx.testing.procs import use_procs

#: prints one numbered line every 0.2 s for a minute (tests cancel it)
TICKER = "import itertools, time\nfor i in itertools.count():\n    print(f'tick {i}', flush=True)\n    time.sleep(0.2)"
SCRIPT = "<script>window.__pwned = 1</script>"


def pytest_configure(config: pytest.Config) -> None:
    """Declares the markers these tests use (also when run outside the monorepo's pytest config)."""
    for marker in ("slurm: live Slurm", "browser: drives a real Chromium through Playwright"):
        config.addinivalue_line("markers", marker)


#: where the browser tests write screenshots, once one asked for the directory
_SCREENSHOTS: list[Path] = []


@pytest.fixture(scope="session")
def shots() -> Path:
    """Where screenshots go: ``$TORCHX_SCREENSHOT_DIR``, default ``test-output/screenshots`` in the
    repository root (created; printed in the run's summary)."""
    root = Path(__file__).resolve().parents[3]
    path = Path(os.environ.get("TORCHX_SCREENSHOT_DIR") or root / "test-output" / "screenshots")
    path.mkdir(parents=True, exist_ok=True)
    _SCREENSHOTS.append(path)
    return path


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Prints the screenshot directory (and what is in it) so a reviewer can find the pictures."""
    for path in _SCREENSHOTS:
        names = ", ".join(sorted(p.name for p in path.glob("*.png")))
        terminalreporter.write_line(f"dashboard screenshots in {path}: {names}")


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Runs each test in ``tmp_path/work`` with its own HOME, local-job and sweep state."""
    work = isolate(tmp_path, monkeypatch)
    monkeypatch.setenv("TORCHX_SWEEP_STATE_DIR", str(tmp_path / "sweeps"))
    for name in list(os.environ):
        if name.startswith(("TORCHX_TRACKER", "TORCHX_PARENT_RUN_ID", "TORCHX_JOB_ID")):
            monkeypatch.delenv(name)
    return work


@pytest.fixture
def sched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The scheduler the test jobs run on (registered for this test and the dashboards it starts)."""
    return use_procs(tmp_path, monkeypatch)


@pytest.fixture
def runner(sched: str) -> Iterator[Any]:
    """A Runner of session ``torchx``."""
    from torchx.runner import get_runner

    with get_runner() as r:
        yield r


@pytest.fixture
def booth_sweep(runner: Any, sched: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A finished 3x2 sweep of ``utils.booth`` whose trials record ``booth_eval`` in an
    fsspec tracker (needs torchx-sweep, torchx-components and torchx-tracker)."""
    for module in ("torchx_sweep", "torchx_components", "torchx_tracker"):
        pytest.importorskip(module)
    from torchx_sweep import run_sweep

    # the trials run `python -m torchx_components.apps.booth`: this interpreter's
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    Path(".torchxconfig").write_text(
        f"[torchx:tracker]\nfsspec =\n\n[tracker:fsspec]\nconfig = {tmp_path / 'tracker'}\n"
    )
    sweep = run_sweep(runner, "utils.booth", [], {"x1": ["0", "1", "2"], "x2": ["2", "3"]}, sched, max_parallel=3)
    assert sweep.wait(timeout=180)["state"] == "SUCCEEDED"
    return sweep


#: a managed job's app: attempt 0 SIGKILLs itself (a retried cause), attempt 1 succeeds
TWO_ATTEMPTS = "import os, signal\nif os.environ['TORCHX_ATTEMPT'] == '0':\n    os.kill(os.getpid(), signal.SIGKILL)\nprint('done')"


@pytest.fixture
def managed_job(runner: Any) -> str:
    """A finished ``managed`` job on local_cwd that took two attempts (needs torchx-managed), kept
    by managed's local driver (``controller=local``: its attempts are jobs of their own, nested
    under it; one local_cwd target otherwise recovers in its supervisor as one local_cwd job)."""
    for module in ("torchx_managed", "torchx_sched_local"):
        pytest.importorskip(module)
    cfg = {"targets": ["local_cwd"], "controller": "local"}
    handle = str(runner.run(python_app(TWO_ATTEMPTS, name="twice"), "managed", cfg))
    status = runner.wait(handle, wait_interval=0.2, timeout=120)
    assert status is not None and status.state.name == "SUCCEEDED", status
    assert len(runner.describe_app(handle).metadata["attempts"]) == 2
    return handle


@pytest.fixture
def script() -> str:
    """A ``<script>`` element: the name of a test job and a line another prints."""
    return SCRIPT


@pytest.fixture
def jobs(runner: Any, sched: str) -> Iterator[dict[str, str]]:
    """Jobs (name -> handle) that succeeded printing a ``<script>`` line (``ok``), failed
    (``bad``), still run printing ``tick N`` lines (``live``), and one named ``<script>`` (``script``).
    Running ones are cancelled afterwards."""
    made: dict[str, str] = {}
    made["ok"] = runner.run(python_app(f"print('hello'); print({SCRIPT!r})", name="ok"), sched)
    made["bad"] = runner.run(python_app("import sys; print('oops'); sys.exit(3)", name="bad"), sched)
    made["script"] = runner.run(python_app("print('x')", name=SCRIPT), sched)
    made["live"] = runner.run(python_app(TICKER, name="live"), sched)
    for name in ("ok", "bad", "script"):
        runner.wait(made[name], wait_interval=0.1, timeout=60)
    wait_for_line(runner, made["live"], "tick 1")
    yield made
    for handle in made.values():
        runner.cancel(handle)


def wait_for_line(runner: Any, handle: str, text: str, timeout: float = 30) -> None:
    """Blocks until ``text`` is in the log of ``handle``'s first replica."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        role = runner.describe_app(handle).roles[0].name
        if any(text in line for line in runner.log_lines(handle, role, 0)):
            return
        time.sleep(0.1)
    raise AssertionError(f"{text!r} never appeared in the log of {handle}")


class Server:
    """A ``torchx dashboard`` process: its URL (with the token, if any) and output."""

    def __init__(self, proc: subprocess.Popen[str], url: str, first: str) -> None:
        self.proc = proc
        self.url = url
        self.first_line = first

    @property
    def base(self) -> str:
        """The URL without the token query."""
        return self.url.split("?", 1)[0]

    def stop(self) -> int:
        """Interrupts it (as Ctrl-C does); returns its exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return int(self.proc.returncode)


def start_dashboard(*args: str, timeout: float = 30) -> Server:
    """Runs ``torchx dashboard --port 0 ARGS`` and waits for the URL it prints."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "torchx", "dashboard", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.5)
        if ready:
            line = proc.stdout.readline()
            if line.startswith("torchx dashboard: http"):
                return Server(proc, line.split()[2], line)
        if proc.poll() is not None:
            break
    proc.kill()
    _, err = proc.communicate()
    raise AssertionError(f"torchx dashboard did not print its URL: {err}")


@pytest.fixture
def dashboard() -> Iterator[Callable[..., Server]]:
    """Starts dashboards (``dashboard("--read-only")``) and stops them after the test."""
    started: list[Server] = []

    def start(*args: str) -> Server:
        server = start_dashboard(*args)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
