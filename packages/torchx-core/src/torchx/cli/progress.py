"""Feedback while the CLI waits for an app: one live status line on a terminal, plain lines
on state changes otherwise.

The line reads ``RUNNING  2 running, 1 pending  0:12  <what the scheduler says>``; it is
redrawn in place on stderr and cleared before anything else is printed (log lines go
through :meth:`StatusLine.print_above`). A background thread polls ``runner.status``:
every second on schedulers that run on this machine, every five seconds elsewhere; the first
poll waits a quarter second on a terminal (one interval otherwise), so short jobs show nothing.
"""

from __future__ import annotations

import sys
import threading
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Any

    from torchx.runner.api import Runner
    from torchx.specs.status import AppStatus

#: replica states shown in the line, in this order (others are summed into "other")
_SHOWN = ("RUNNING", "PENDING", "FAILED", "SUCCEEDED")
_CLEAR = "\r\x1b[K"


def summarize(status: AppStatus, elapsed: float, width: int = 0) -> str:
    """``STATE  n running, n pending, n failed  M:SS  msg`` (cut to ``width`` when > 0)."""
    counts: dict[str, int] = {}
    for role in status.roles:
        for replica in role.replicas:
            name = replica.state.name
            key = "PENDING" if name == "SUBMITTED" else name if name in _SHOWN else "OTHER"
            counts[key] = counts.get(key, 0) + 1
    replicas = ", ".join(f"{counts[k]} {k.lower()}" for k in (*_SHOWN, "OTHER") if counts.get(k))
    minutes, seconds = divmod(int(elapsed), 60)
    parts = [status.state.name, replicas, f"{minutes}:{seconds:02d}"]
    if status.msg:
        parts.append(status.msg.strip().splitlines()[0])
    line = "  ".join(p for p in parts if p)
    return line[: width - 1] if width > 0 and len(line) >= width else line


class StatusLine:
    """Shows how an app is doing while the caller waits for it.

    Args:
        runner: the runner that submitted (or can describe) the app
        app_handle: the app
        local: the scheduler runs on this machine (poll every second, else every 5 s)
        quiet: show nothing
        stream: where the line goes (stderr)
    """

    def __init__(
        self, runner: Runner, app_handle: str, local: bool, quiet: bool = False, stream: IO[str] = sys.stderr
    ) -> None:
        self.runner = runner
        self.app_handle = app_handle
        self.interval = 1.0 if local else 5.0
        self.stream = stream
        self.live = not quiet and stream.isatty()
        self.plain = not quiet and not self.live
        self.lock = threading.Lock()
        self._shown = ""
        self._last_state = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = time.monotonic()

    def __enter__(self) -> StatusLine:
        if self.live or self.plain:
            self._thread = threading.Thread(target=self._poll, daemon=True, name="torchx-status-line")
            self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.interval + 1)
        with self.lock:
            self._erase()

    def print_above(self, text: str, out: IO[str]) -> None:
        """Writes ``text`` to ``out`` without tearing the status line (it is redrawn after)."""
        with self.lock:
            shown = self._shown
            self._erase()
            out.write(text)
            out.flush()
            if shown:
                self._draw(shown)

    def _erase(self) -> None:
        if self._shown:
            self.stream.write(_CLEAR)
            self.stream.flush()
            self._shown = ""

    def _draw(self, line: str) -> None:
        self.stream.write(_CLEAR + line)
        self.stream.flush()
        self._shown = line

    def _poll(self) -> None:
        # a job that ends within the first moment shows no line at all (and costs no status call)
        if self._stop.wait(min(self.interval, 0.25) if self.live else self.interval):
            return
        while not self._stop.is_set():
            try:
                status = self.runner.status(self.app_handle)
            except Exception:  # the wait itself reports real errors
                status = None
            if status is not None and not self._stop.is_set():
                import shutil  # here, not at the start: a short job's run never imports it

                self._show(status, shutil.get_terminal_size().columns)
            self._stop.wait(self.interval)

    def _show(self, status: AppStatus, width: int) -> None:
        line = summarize(status, time.monotonic() - self._started, width if self.live else 0)
        with self.lock:
            if self.live:
                self._draw(line)
            elif status.state.name != self._last_state:
                self.stream.write(f"torchx: {self.app_handle} {line}\n")
                self.stream.flush()
            self._last_state = status.state.name
