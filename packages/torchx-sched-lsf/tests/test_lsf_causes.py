"""LSF ``end_cause`` from what OpenLava printed for jobs that ended in each way (recorded on the
live cluster by fixtures/capture_causes.py: exit 3, a replica SIGKILLed on its host, a cancel
through torchx, ``bkill`` by the owner outside torchx, and ``bkill`` by root of a job of
``nobody``), and from IBM LSF's TERM_* exit reasons."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from torchx.schedulers.causes import EndCause
from torchx_sched_lsf.causes import kill_request, lsf_end, owner
from torchx_sched_lsf.parse import LsfJob, parse_unformatted

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


def recorded(name: str) -> dict[str, Any]:
    with open(os.path.join(FIXTURES, f"causes_{name}.json")) as f:
        data: dict[str, Any] = json.load(f)
    return data


@pytest.mark.parametrize(
    ("name", "cause", "code", "words"),
    [
        ("exit_3", EndCause.APP_ERROR, 3, "cause/1 exited with code 3"),
        ("replica_sigkilled", EndCause.KILLED, 137, "cause/1 killed by SIGKILL"),
        ("cancelled", EndCause.CANCELLED, None, "through torchx"),
        ("bkill_by_owner", EndCause.CANCELLED, None, "bkill by its owner root"),
        ("bkill_by_root", EndCause.KILLED, None, "bkill by root (signal KILL), not its owner nobody"),
    ],
)
def test_recorded_on_openlava(name: str, cause: EndCause, code: int | None, words: str) -> None:
    data = recorded(name)
    (job,) = parse_unformatted(data["bjobs"])
    end = lsf_end(job, data["bhist"], data["codes"], data["marked"])
    assert end is not None
    assert (end.cause, end.exit_code) == (cause, code), end
    assert words in end.reason


def test_bhist_kill_request_and_owner() -> None:
    history = recorded("bkill_by_root")["bhist"]
    assert kill_request(history) == ("KILL", "root")
    assert owner(history) == "nobody"
    assert kill_request(recorded("exit_3")["bhist"]) is None


@pytest.mark.parametrize(
    ("reason", "cause"),
    [
        ("TERM_PREEMPT: job killed after preemption", EndCause.PREEMPTED),
        ("TERM_RUNLIMIT: job killed after reaching LSF run time limit", EndCause.TIMEOUT),
        ("TERM_MEMLIMIT: job killed after reaching LSF memory usage limit", EndCause.KILLED),
        ("TERM_ADMIN: job killed by root or LSF administrator", EndCause.KILLED),
        ("TERM_OWNER: job killed by owner", EndCause.CANCELLED),
        ("TERM_LOAD: job killed after load exceeds threshold", EndCause.NODE_FAILURE),
    ],
)
def test_ibm_lsf_exit_reasons(reason: str, cause: EndCause) -> None:
    job = LsfJob(job_id="7", name="x", stat="EXIT", exit_code=130, hosts=["h"], reason=reason)
    end = lsf_end(job, "", {}, False)
    assert end is not None and end.cause == cause and reason in end.reason


def test_running_zombie_and_done() -> None:
    assert lsf_end(LsfJob(job_id="7", name="x", stat="RUN"), "", {}, False) is None
    assert lsf_end(LsfJob(job_id="7", name="x", stat="ZOMBI"), "", {}, False).cause == EndCause.NODE_FAILURE  # type: ignore[union-attr]
    assert lsf_end(LsfJob(job_id="7", name="x", stat="DONE", exit_code=0), "", {}, False).exit_code == 0  # type: ignore[union-attr]
