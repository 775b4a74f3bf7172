"""Stop signals (Ctrl-C, and SIGTERM/SIGHUP for an attached run) while the CLI submits and waits.

Python's own SIGINT handler raises KeyboardInterrupt wherever the main thread happens to be,
which loses it for a command that must act on it, in two ways (both seen under load):

* raised inside a finalizer or a weakref callback, such as the one importlib runs as each
  import ends, it is dropped (``Exception ignored in: <function _get_module_lock.<locals>.cb>``)
  and the command goes back to waiting, for ever;
* raised between two statements (``torchx run``: the job just submitted, its ``try`` that
  cancels it on Ctrl-C not entered yet), it escapes the code that handles it: the job runs on
  and its handle is never printed.

:class:`StopSignals` therefore only records a stop signal; the command checks for it at
points of its choosing (:meth:`StopSignals.check`), and :meth:`StopSignals.wait` runs a
blocking call in a helper thread so that the main thread notices the signal at once.
"""

from __future__ import annotations

import signal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import FrameType
    from typing import Any, TypeVar

    T = TypeVar("T")

#: longest time (s) between a stop signal and the main thread raising KeyboardInterrupt in :meth:`StopSignals.wait`
CHECK_INTERVAL = 0.05


class StopSignals:
    """While entered, the signals passed to :meth:`catch` are recorded instead of raising
    KeyboardInterrupt; on exit their previous handlers are back (unless replaced meanwhile). A
    signal whose handler is neither the default nor Python's (``nohup``'s ignored SIGHUP, an
    embedding program's own) is left alone."""

    def __init__(self) -> None:
        #: the first stop signal received, None until one is
        self.received: int | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            if signal.getsignal(sig) == self._record:  # not one set meanwhile (a second Ctrl-C's "exit at once")
                signal.signal(sig, handler)
        self._previous.clear()

    def catch(self, *signals: int) -> None:
        """Records ``signals`` from now on (until the block ends)."""
        for sig in signals:
            if sig not in self._previous and signal.getsignal(sig) in (signal.SIG_DFL, signal.default_int_handler):
                self._previous[sig] = signal.signal(sig, self._record)

    def _record(self, signum: int, frame: FrameType | None) -> None:
        if self.received is None:
            self.received = signum

    def check(self) -> None:
        """Raises KeyboardInterrupt if a stop signal was received."""
        if self.received is not None:
            raise KeyboardInterrupt

    def wait(self, call: Callable[[], T]) -> T:
        """Returns ``call()``, run in a helper thread; raises KeyboardInterrupt within
        :data:`CHECK_INTERVAL` of a stop signal (the call then goes on in the background, in a
        daemon thread)."""
        import threading

        self.check()
        result: list[T] = []
        error: list[BaseException] = []

        def run() -> None:
            try:
                result.append(call())
            except BaseException as e:  # handed to the main thread
                error.append(e)

        helper = threading.Thread(target=run, daemon=True, name="torchx-wait")
        helper.start()
        while helper.is_alive():
            helper.join(CHECK_INTERVAL)
            self.check()
        if error:
            raise error[0]
        return result[0]
