"""A local job that recovers in its own supervisor: the budgets of a managed job run natively.

A ``local_cwd`` job submitted through :meth:`LocalScheduler.submit_recovery_dryrun` carries its
recovery policy in ``app.json`` as plain data (``"recovery"``: the budgets, the signals that
read as a kill from outside, the back-off in seconds, the checkpoint directory), because the
supervisor is a small interpreter that imports no torchx module. The supervisor then runs the
app as attempts 0, 1, 2 ...: when a replica fails, every replica of the attempt is stopped and,
if a budget is left, all are started again as the next attempt (after the back-off, for an
application error). Each attempt is recorded in the job's ``attempts`` file in the format of
core's ``torchx.schedulers.recovery`` attempt log (``start``/``end``/``backoff``/``final``
lines), which ``LocalScheduler.recovery_attempts`` reads back with core's reader.

This module imports only the standard library, and only the supervisor of such a job imports it.
"""

from __future__ import annotations

import os
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: the job's attempt log, in its directory
ATTEMPT_LOG = "attempts"
#: the highest signal number whose ``128 + N`` exit status reads as "killed by signal N"
_MAX_SIGNAL = 64


class Recovery:
    """The budgets of one job, the attempt it is at, and its attempt log.

    Args:
        job_dir: the job's directory (the attempt log goes there)
        policy: ``app.json``'s ``"recovery"``: ``max_restarts``, ``max_recoveries``,
            ``recover_on_exit_codes``, ``killed_signals`` (signals that read as a kill from
            outside, not a crash), ``restart_backoff`` and ``max_backoff`` (seconds) and
            ``checkpoint_dir``
    """

    def __init__(self, job_dir: str, policy: dict[str, Any]) -> None:
        self.path = os.path.join(job_dir, ATTEMPT_LOG)
        self.max_restarts = int(policy["max_restarts"])
        self.max_recoveries = int(policy["max_recoveries"])
        self.recover_codes = frozenset(int(c) for c in policy["recover_on_exit_codes"])
        self.killed_signals = frozenset(int(s) for s in policy["killed_signals"])
        self.backoff = float(policy["restart_backoff"])
        self.max_backoff = float(policy["max_backoff"])
        self.checkpoint_dir = str(policy["checkpoint_dir"])
        #: the running (or last) attempt's number: its replicas' ``TORCHX_ATTEMPT``
        self.attempt = 0
        self.errors = 0
        self.recoveries = 0
        self.errors_in_a_row = 0
        #: the failed running attempt's replica exit code and cause, until its replicas all stopped
        self.pending: tuple[int, str] | None = None

    def cause(self, code: int) -> str:
        """The attempt log's cause for a replica that ended with ``code`` (non-zero; negative: a
        signal): ``RECOVER``, ``KILLED`` (a signal from outside, also as a shell's 128+N) or
        ``APP_ERROR``."""
        if code in self.recover_codes:
            return "RECOVER"
        signum = -code if code < 0 else code - 128 if 128 < code <= 128 + _MAX_SIGNAL else 0
        return "KILLED" if signum in self.killed_signals else "APP_ERROR"

    def failed(self, code: int) -> tuple[float | None, str]:
        """Counts the running attempt's failure with a replica's ``code`` against its budget;
        returns the seconds to wait before the next attempt once this one's replicas all
        stopped, or None when a budget is used up, and why. The attempt's end is written by
        :meth:`stopped` (or :meth:`end`), when its last replica stopped."""
        cause = self.cause(code)
        self.pending = (code, cause)
        if cause == "APP_ERROR":
            self.errors += 1
            self.errors_in_a_row += 1
            if self.errors > self.max_restarts:
                return None, f"max_restarts={self.max_restarts} used up"
        else:
            self.errors_in_a_row = 0
            if cause == "KILLED":
                self.recoveries += 1
                if self.recoveries > self.max_recoveries:
                    return None, f"max_recoveries={self.max_recoveries} used up"
        if self.errors_in_a_row and self.backoff > 0:
            return min(self.backoff * 2 ** (self.errors_in_a_row - 1), self.max_backoff), "restarting"
        return 0.0, "restarting"

    def stopped(self, wait: float = 0.0) -> None:
        """Every replica of the failed attempt stopped: records its end (and the back-off of
        ``wait`` seconds before the next one, if any); the next attempt is :attr:`attempt` + 1."""
        if self.pending is None:
            return
        code, cause = self.pending
        self.pending = None
        self._note("end", self.attempt, code, cause)
        self.attempt += 1
        if wait > 0:
            self._note("backoff", self.attempt, f"{wait:g}")

    def started(self) -> None:
        """Records that attempt :attr:`attempt` starts."""
        self._note("start", self.attempt, 0)

    def end(self, state: str) -> None:
        """Records the job's end (``SUCCEEDED`` or ``FAILED``): the running attempt's end too (a
        failure :meth:`failed` counted, or a success); a job that failed otherwise (a replica that
        could not start) leaves it to the job's state."""
        if self.pending is not None:
            code, cause = self.pending
            self.pending = None
            self._note("end", self.attempt, code, cause)
        elif state == "SUCCEEDED":
            self._note("end", self.attempt, 0, "SUCCEEDED")
        self._note("final", state)

    def _note(self, *words: object) -> None:
        """Appends one line to the attempt log; a failure to write (a full disk) is passed over:
        the job goes on, and ``status`` reads its state from ``state.json``."""
        line = " ".join(str(w) for w in words) + f" {time.time():.6f}\n"
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        except OSError:
            return
        try:
            os.write(fd, line.encode())
        except OSError:
            pass
        finally:
            os.close(fd)

    def snapshot(self) -> list[int]:
        """What a supervisor handing over to a fresh interpreter carries (see :mod:`.handover`;
        it hands over only between failures, so nothing is :attr:`pending`)."""
        return [self.attempt, self.errors, self.recoveries, self.errors_in_a_row]

    def restore(self, saved: list[int]) -> None:
        """Back to where :meth:`snapshot` left it."""
        self.attempt, self.errors, self.recoveries, self.errors_in_a_row = saved
