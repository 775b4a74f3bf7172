"""Stop signals (Ctrl-C, and SIGTERM/SIGHUP for an attached run) while the CLI submits and waits.

Python's own SIGINT handler raises KeyboardInterrupt wherever the main thread happens to be,
which loses it for a command that must act on it, in two ways (both seen under load):

* raised inside a finalizer or a weakref callback, such as the one importlib runs as each
  import ends, it is dropped (``Exception ignored in: <function _get_module_lock.<locals>.cb>``)
  and the command goes on: to submit a job it will never cancel, or to wait for ever;
* raised between two statements (``torchx run``: the job just submitted, its ``try`` that
  cancels it on Ctrl-C not entered yet), it escapes the code that handles it: the job runs on
  and its handle is never printed.

So the CLI remembers every Ctrl-C from its start (:func:`remember_interrupts`, called as soon as
:mod:`torchx.cli` is imported: it still raises KeyboardInterrupt, and a dropped one is seen
later; one dropped while the CLI's own modules were being imported stops the command before it
does anything, :func:`interrupted_before_start`), and where it submits or waits,
:class:`StopSignals` only records stop signals; the command checks for them at points of its
choosing (:meth:`StopSignals.check`), and :meth:`StopSignals.wait` runs a blocking call in a
helper thread so that the main thread notices the signal at once.

Uses ``_signal``, not ``signal`` (which builds enums at import: a few ms of every command).
"""

from __future__ import annotations

import _signal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import FrameType
    from typing import Any, TypeVar

    T = TypeVar("T")

#: longest time (s) between a stop signal and the main thread raising KeyboardInterrupt in :meth:`StopSignals.wait`
CHECK_INTERVAL = 0.05

#: the stop signals this command received, first first (see :func:`remember_interrupts`)
_received: list[int] = []


def remember_interrupts() -> None:
    """From now on Ctrl-C raises KeyboardInterrupt as Python's own handler does, and is
    remembered too, so that one Python dropped still stops a later :meth:`StopSignals.check`.
    Leaves a SIGINT handler other than Python's alone, and does nothing outside the main thread
    (where handlers cannot be set: :mod:`torchx.cli` imported by a server's worker thread)."""
    if _signal.getsignal(_signal.SIGINT) in (_signal.default_int_handler, _remember_and_raise):
        try:
            _signal.signal(_signal.SIGINT, _remember_and_raise)
        except ValueError:  # not the main thread
            pass


def interrupted_before_start() -> bool:
    """Called first by the CLI, for each command: True if a Ctrl-C arrived since the last command
    (or since :mod:`torchx.cli` was imported) and Python dropped it, so the command must not
    run; starts the command's record afresh."""
    remember_interrupts()
    dropped = bool(_received)
    _received.clear()
    return dropped


def _remember_and_raise(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    raise KeyboardInterrupt


class StopSignals:
    """While entered, the signals passed to :meth:`catch` are recorded instead of raising
    KeyboardInterrupt; on exit their previous handlers are back (unless replaced meanwhile). A
    signal whose handler is neither the default nor Python's (``nohup``'s ignored SIGHUP, an
    embedding program's own) is left alone."""

    def __init__(self) -> None:
        self._previous: dict[int, Any] = {}

    @property
    def received(self) -> int | None:
        """The first stop signal received (since :func:`remember_interrupts`), None until one is."""
        return _received[0] if _received else None

    def __enter__(self) -> StopSignals:
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            if _signal.getsignal(sig) == self._record:  # not one set meanwhile (a second Ctrl-C's "exit at once")
                _signal.signal(sig, handler)
        self._previous.clear()

    def catch(self, *signals: int) -> None:
        """Records ``signals`` from now on (until the block ends)."""
        for sig in signals:
            if sig not in self._previous and _signal.getsignal(sig) in _OURS_TO_REPLACE:
                self._previous[sig] = _signal.signal(sig, self._record)

    def _record(self, signum: int, frame: FrameType | None) -> None:
        _received.append(signum)

    def check(self) -> None:
        """Raises KeyboardInterrupt if a stop signal was received."""
        if _received:
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


#: handlers :meth:`StopSignals.catch` replaces: the default, Python's and :func:`remember_interrupts`'
_OURS_TO_REPLACE = (_signal.SIG_DFL, _signal.default_int_handler, _remember_and_raise)
