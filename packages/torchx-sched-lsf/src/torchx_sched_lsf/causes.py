"""Why an LSF job ended (pure): from ``bjobs`` (its state and, on IBM LSF, ``EXIT_REASON``),
``bhist -l`` (who asked for a kill: OpenLava and IBM LSF both write ``Signal <KILL>
requested by user or administrator <name>``; and the job's owner, ``User <name>``), the
replicas' ``.exit`` files of torchx's script, and torchx's cancel marker.

==========================================  ==============================================
torchx's ``cancel`` (its marker file)        ``CANCELLED``
``bkill`` by the job's owner                 ``CANCELLED`` (a cancel outside torchx)
``bkill`` by someone else (root, an admin)   ``KILLED``
``TERM_PREEMPT``                             ``PREEMPTED``
``TERM_RUNLIMIT``, ``TERM_CPULIMIT``,        ``TIMEOUT``
``TERM_DEADLINE``
``TERM_MEMLIMIT``, ``TERM_SWAP``             ``KILLED``
``TERM_ADMIN``                               ``KILLED``; ``TERM_OWNER``: ``CANCELLED``
``TERM_LOAD``, ``TERM_HOST``-like reasons,   ``NODE_FAILURE``
the job ``ZOMBI``/``UNKWN`` at its end
a replica's exit code (128 + N: signal N)    ``APP_ERROR`` / signal
==========================================  ==============================================

OpenLava gives no ``TERM_*`` words: there only the kill requests and exit codes tell.
"""

from __future__ import annotations

import re

from torchx.schedulers.causes import AttemptEnd, EndCause, signal_end

from torchx_sched_lsf.parse import LsfJob

_KILL_REQUEST = re.compile(r"Signal <(\w+)> requested by user or administrator\s*<([^>]*)>")
_OWNER = re.compile(r"User <([^>]*)>")
_TERM = re.compile(r"\bTERM_[A-Z_]+")
_TERM_CAUSES = {
    "TERM_PREEMPT": EndCause.PREEMPTED,
    "TERM_RUNLIMIT": EndCause.TIMEOUT,
    "TERM_CPULIMIT": EndCause.TIMEOUT,
    "TERM_DEADLINE": EndCause.TIMEOUT,
    "TERM_MEMLIMIT": EndCause.KILLED,
    "TERM_SWAP": EndCause.KILLED,
    "TERM_ADMIN": EndCause.KILLED,
    "TERM_OWNER": EndCause.CANCELLED,
    "TERM_LOAD": EndCause.NODE_FAILURE,
    "TERM_ZOMBIE": EndCause.NODE_FAILURE,
    "TERM_ORPHAN_SYSTEM": EndCause.NODE_FAILURE,
    "TERM_REQUEUE_ADMIN": EndCause.KILLED,
}


def kill_request(history: str) -> tuple[str, str] | None:
    """(signal, who) of the last kill ``bhist -l`` records (its lines folded), else None."""
    folded = re.sub(r"\n\s+", "", history)
    found = _KILL_REQUEST.findall(folded)
    return (found[-1][0], found[-1][1].strip()) if found else None


def owner(history: str) -> str:
    """The job's owner from ``bhist -l`` (``User <name>``), ``""`` if not given."""
    m = _OWNER.search(re.sub(r"\n\s+", "", history))
    return m.group(1) if m else ""


def requeue_causes(history: str) -> list[tuple[EndCause, str]]:
    """Why each earlier run of a job LSF ran more than once ended (oldest first), from its
    ``bhist -l`` (one run per ``Dispatched to``): a run ended by ``brequeue`` (``Signal
    <REQUEUE_PEND> requested by ... <who>``) is ``KILLED``; any other (LSF reran a ``bsub -r``
    job whose host failed or rebooted) is ``NODE_FAILURE``."""
    runs = re.sub(r"\n\s+", "", history).split("Dispatched to")[1:-1]
    out: list[tuple[EndCause, str]] = []
    for run in runs:
        requests = [who.strip() for sig, who in _KILL_REQUEST.findall(run) if sig == "REQUEUE_PEND"]
        if requests:
            out.append((EndCause.KILLED, f"brequeue by {requests[-1] or 'someone'}: LSF requeued the job"))
        else:
            out.append((EndCause.NODE_FAILURE, "its host failed: LSF reran the job (bsub -r)"))
    return out


def requeue_requested(history: str) -> bool:
    """Whether the last run ``bhist -l`` records was ended by ``brequeue`` (LSF dispatches the
    job again)."""
    last = re.sub(r"\n\s+", "", history).split("Dispatched to")[-1]
    requests = _KILL_REQUEST.findall(last)
    return bool(requests) and requests[-1][0] == "REQUEUE_PEND"


def lsf_end(job: LsfJob, history: str, codes: dict[str, int], marked: bool) -> AttemptEnd | None:
    """Why ``job`` ended; ``history``: its ``bhist -l``; ``codes``: ``role/k`` -> exit code of the
    replicas that ended by themselves, in start order; ``marked``: torchx cancelled it. None
    while it runs."""
    if job.stat not in ("DONE", "EXIT", "ZOMBI"):
        return None
    if marked:  # also when the kill came as the job started and LSF says DONE (see cancelled_by_torchx)
        return AttemptEnd(EndCause.CANCELLED, None, "cancelled through torchx")
    if job.stat == "DONE":
        return AttemptEnd(EndCause.APP_ERROR, 0, "DONE")
    if job.stat == "ZOMBI":
        return AttemptEnd(EndCause.NODE_FAILURE, None, f"ZOMBI: its host stopped answering {job.reason}".strip())
    term = _TERM.search(job.reason)
    if term and term.group() in _TERM_CAUSES:
        return AttemptEnd(_TERM_CAUSES[term.group()], job.exit_code, job.reason)
    request = kill_request(history)
    if request is not None:
        sig, who = request
        by = owner(history)
        if who and who == by:
            return AttemptEnd(EndCause.CANCELLED, None, f"bkill by its owner {who} (signal {sig}), outside torchx")
        return AttemptEnd(EndCause.KILLED, None, f"bkill by {who or 'someone'} (signal {sig}), not its owner {by}")
    failed = [(name, code) for name, code in codes.items() if code != 0]
    if failed:
        name, code = failed[0]
        if 128 < code <= 128 + 64:
            end = signal_end(code - 128)
            return AttemptEnd(end.cause, code, f"{name} {end.reason} (exit code {code})")
        return AttemptEnd(EndCause.APP_ERROR, code, f"{name} exited with code {code}")
    if job.exit_code is not None:
        return AttemptEnd(EndCause.APP_ERROR, job.exit_code, f"EXIT: exit code {job.exit_code}")
    return AttemptEnd(EndCause.UNKNOWN, None, f"EXIT {job.reason}".strip())
