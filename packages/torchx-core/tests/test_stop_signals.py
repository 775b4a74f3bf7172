"""``torchx.cli.stop_signals``: a stop signal is recorded wherever it lands, a finalizer included
(Python drops the KeyboardInterrupt its own handler raises there: ``Exception ignored in``), and
a wait ends on it at once. Real signals, sent to this process."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from torchx.cli.stop_signals import CHECK_INTERVAL, StopSignals, interrupted_before_start

_PYTHON_DEFAULTS: dict[int, Any] = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL}


@pytest.fixture(autouse=True)
def python_handlers() -> Iterator[None]:
    """Python's own SIGINT handler and the default SIGTERM one around each test; what the CLI
    does first (nothing received yet, Ctrl-C remembered)."""
    saved = {sig: signal.signal(sig, handler) for sig, handler in _PYTHON_DEFAULTS.items()}
    interrupted_before_start()
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


class _SignalsWhenFinalized:
    def __init__(self, sig: int) -> None:
        self.sig = sig

    def __del__(self) -> None:
        signal.raise_signal(self.sig)


def test_a_signal_during_a_finalizer_is_kept() -> None:
    with StopSignals() as stop:
        stop.catch(signal.SIGINT)
        _SignalsWhenFinalized(signal.SIGINT)  # dropped at once: Ctrl-C lands in its __del__
        assert stop.received == signal.SIGINT
        t = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            stop.wait(lambda: time.sleep(30))
        assert time.monotonic() - t < 5.0  # at once, not after the 30 s sleep (bound: a loaded machine)


def test_a_ctrl_c_dropped_before_the_block_is_seen(monkeypatch: pytest.MonkeyPatch) -> None:
    dropped: list[type[BaseException] | None] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: dropped.append(u.exc_type))
    _SignalsWhenFinalized(signal.SIGINT)  # raised in __del__: Python drops it ("Exception ignored in")
    assert dropped == [KeyboardInterrupt]
    with StopSignals() as stop:
        stop.catch(signal.SIGINT)
        with pytest.raises(KeyboardInterrupt):
            stop.check()


def test_a_signal_during_the_wait_ends_it() -> None:
    with StopSignals() as stop:
        stop.catch(signal.SIGINT, signal.SIGTERM)
        timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM))
        timer.start()
        try:
            t = time.monotonic()
            with pytest.raises(KeyboardInterrupt):
                stop.wait(lambda: time.sleep(30))
            assert time.monotonic() - t < 0.2 + CHECK_INTERVAL + 1.0
            assert stop.received == signal.SIGTERM
        finally:
            timer.cancel()
            timer.join()  # never a SIGTERM after the block: it would end this process


def test_the_wait_returns_the_result_or_raises_the_error() -> None:
    with StopSignals() as stop:
        stop.catch(signal.SIGINT)
        assert stop.wait(lambda: 42) == 42
        with pytest.raises(ValueError, match="bad"):
            stop.wait(lambda: int("bad"))
        assert stop.received is None


def test_handlers_are_restored_and_an_ignored_signal_left_alone() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # as under nohup
    with StopSignals() as stop:
        stop.catch(signal.SIGINT, signal.SIGTERM)
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
        assert signal.getsignal(signal.SIGINT) != signal.default_int_handler
    assert signal.getsignal(signal.SIGINT) is not stop._record  # back to what interrupted_before_start set
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN


def test_a_handler_set_inside_the_block_stays() -> None:
    def exit_at_once(signum: int, frame: object) -> None:
        pass

    with StopSignals() as stop:
        stop.catch(signal.SIGINT, signal.SIGTERM)
        signal.signal(signal.SIGINT, exit_at_once)
    assert signal.getsignal(signal.SIGINT) is exit_at_once
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_python_handler_is_kept_but_remembers() -> None:
    with pytest.raises(KeyboardInterrupt):
        signal.raise_signal(signal.SIGINT)
    with StopSignals() as stop:
        assert stop.received == signal.SIGINT


_DROPPED_AT_START = """
import os, signal, sys
import torchx.cli  # what the console script imports first


class SignalsWhenFinalized:
    def __del__(self):
        signal.raise_signal(signal.SIGINT)


SignalsWhenFinalized()  # Ctrl-C lands in a finalizer while the CLI starts: Python drops it
from torchx.cli.main import main

main(["run", "-s", "local_cwd", "utils.sh", "touch", sys.argv[1]])
"""


def test_a_ctrl_c_python_dropped_while_the_cli_started_stops_the_command(tmp_path: Any) -> None:
    """The ``Exception ignored in`` case during the CLI's own imports (2 of 40 Ctrl-Cs at start-up
    under load): the command must not go on to submit the job."""
    import subprocess

    marker, state = tmp_path / "ran", tmp_path / "state"
    env = {**os.environ, "TORCHX_LOCAL_STATE_DIR": str(state)}
    proc = subprocess.run(
        [sys.executable, "-c", _DROPPED_AT_START, str(marker)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert "KeyboardInterrupt" in proc.stderr  # Python's "Exception ignored in ... KeyboardInterrupt"
    assert proc.returncode == 130, proc.stderr
    assert not marker.exists()
    assert not state.exists() or not [p for p in state.iterdir() if not p.name.startswith(".")], list(state.iterdir())


def test_importing_the_cli_in_a_worker_thread_works() -> None:
    """A server (the dashboard) imports torchx.cli modules from a worker thread, where no signal
    handler can be set: the import must not fail."""
    import subprocess

    code = (
        "import threading\nt = threading.Thread(target=lambda: __import__('torchx.cli.output'))\nt.start(); t.join()\n"
    )
    code += "import sys; sys.exit(0 if 'torchx.cli.output' in sys.modules else 1)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
