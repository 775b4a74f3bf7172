"""A job that recovers in LSF: the bsub request, the job script's attempts under a real bash
(with the variables LSF sets), and the reruns ``bhist -l`` records."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from torchx import specs
from torchx.schedulers.causes import EndCause
from torchx.schedulers.recovery import RecoveryPolicy, read_attempt_log
from torchx_sched_lsf.causes import requeue_causes, requeue_requested
from torchx_sched_lsf.opts import LsfOpts
from torchx_sched_lsf.scheduler import LsfScheduler
from torchx_sched_lsf.script import attempt_log, build_request

#: ``bhist -l`` of a job OpenLava ran twice: the first run ended by ``brequeue`` (recorded on
#: the live cluster; the wrapped lines as bhist prints them)
REQUEUED = """\
Job Id <106>, Job Name <sh@sh:1>, User <root>, Project <default>, Command <#!/bi
                     n/bash>
Sun Nov 29 01:33:12: Submitted from host <vm> to Queue <normal>, CWD </tmp/torc
                     hx-native-lsf-6mlthj46>, Re-runnable;
Sun Nov 29 01:33:14: Dispatched to <vm>;
Sun Nov 29 01:33:14: Starting (Pid 30140);
Sun Nov 29 01:33:15: Signal <REQUEUE_PEND> requested by user or administrator <
                     root>;
Sun Nov 29 01:33:16: Exited with exit code 130. The CPU time used is 0.1 second
                     s;
Sun Nov 29 01:33:17: Pending: Job has been requeued;
Sun Nov 29 01:33:18: Dispatched to <vm>;
Sun Nov 29 01:33:18: Starting (Pid 30540);
"""


def _app(code: str, replicas: int = 1) -> specs.AppDef:
    role = specs.Role(
        "w",
        image="/img",
        entrypoint=sys.executable,
        args=["-c", code],
        num_replicas=replicas,
        resource=specs.Resource(cpu=1, gpu=0, memMB=64),
    )
    return specs.AppDef("rec", [role])


def _start(tmp: Path, app: specs.AppDef, policy: RecoveryPolicy, job: str = "7") -> subprocess.Popen[bytes]:
    req = build_request(app, LsfOpts(), policy=policy)
    env = {**os.environ, "LSB_JOBID": job, "LSB_MCPU_HOSTS": f"{socket.gethostname()} 4"}
    return subprocess.Popen(["bash", "-c", req.script], cwd=tmp, env=env)


def _log(tmp: Path, job: str = "7") -> str:
    path = tmp / attempt_log(job)
    return path.read_text() if path.exists() else ""


def test_the_request_is_rerunnable_only_when_it_recovers() -> None:
    app = _app("pass")
    assert build_request(app, LsfOpts(), policy=RecoveryPolicy()).args[-1] == "-r"
    assert "-r" not in build_request(app, LsfOpts()).args
    info = LsfScheduler("s").submit_recovery_dryrun(app, {}, RecoveryPolicy(max_restarts=2))
    assert "-r" in info.request.args and "tx_log=" in info.request.script


def test_an_app_error_restarts_in_the_job_with_the_next_attempt_number(tmp_path: Path) -> None:
    # every replica of attempt 0 fails; attempt 1 succeeds; each writes its TORCHX_ATTEMPT
    code = (
        "import os, sys; a = os.environ['TORCHX_ATTEMPT'];"
        " open(os.path.join(os.environ['TORCHX_CHECKPOINT_DIR'], 'seen'), 'a').write(a + '\\n');"
        " sys.exit(3 if a == '0' else 0)"
    )
    proc = _start(tmp_path, _app(code, replicas=2), RecoveryPolicy(max_restarts=1))
    assert proc.wait(timeout=60) == 0
    log = read_attempt_log(_log(tmp_path))
    assert [(a.n, a.state, a.cause, a.exit_code) for a in log.attempts] == [
        (0, "FAILED", "APP_ERROR", 3),
        (1, "SUCCEEDED", None, 0),
    ]
    assert log.final == "SUCCEEDED"
    assert sorted((tmp_path / "lsf-7.checkpoints" / "seen").read_text().split()) == ["0", "0", "1", "1"]
    assert (tmp_path / "lsf-7.runs").read_text().count("\n") == 1


def test_a_rerun_names_the_attempt_its_host_lost_and_counts_on(tmp_path: Path) -> None:
    """LSF reran the job (its batch shell died with attempt 0): the next batch shell records
    attempt 0 lost and runs attempt 1, its start line counting the rerun; bhist names it."""
    (tmp_path / attempt_log("7")).write_text("start 0 0 1.0\n")
    (tmp_path / "lsf-7.runs").write_text("1\n")
    code = "import os; print('attempt', os.environ['TORCHX_ATTEMPT'])"
    assert _start(tmp_path, _app(code), RecoveryPolicy(max_recoveries=1)).wait(timeout=60) == 0
    text = _log(tmp_path)
    assert "start 1 1 " in text
    log = read_attempt_log(text)
    assert log.lost == [0]
    log.name_lost(requeue_causes(REQUEUED))
    assert [(a.n, a.state, a.cause) for a in log.attempts] == [(0, "FAILED", "KILLED"), (1, "SUCCEEDED", None)]
    assert log.attempts[0].reason == "brequeue by root: LSF requeued the job"


def test_a_rerun_of_a_finished_job_starts_nothing(tmp_path: Path) -> None:
    (tmp_path / attempt_log("7")).write_text("start 0 0 1.0\nend 0 0 SUCCEEDED 2.0\nfinal SUCCEEDED 2.0\n")
    mark = tmp_path / "ran"
    proc = _start(tmp_path, _app(f"open({str(mark)!r}, 'w')"), RecoveryPolicy())
    assert proc.wait(timeout=60) == 0
    assert not mark.exists()
    assert len(read_attempt_log(_log(tmp_path)).attempts) == 1


def test_a_replica_that_never_reports_its_end_is_lost_not_a_success(tmp_path: Path) -> None:
    """The wrapper that writes a replica's end on its host is killed (as with its host): the
    replica's own exit code never arrives, so the attempt is LOST (the script then waits for
    LSF's rerun, which a stop ends)."""
    code = "import os, signal, time; os.kill(os.getppid(), signal.SIGKILL); time.sleep(0.2)"
    proc = _start(tmp_path, _app(code), RecoveryPolicy(max_recoveries=2))
    try:
        deadline = time.monotonic() + 60
        while "end 0 - LOST" not in _log(tmp_path):
            assert time.monotonic() < deadline and proc.poll() is None, _log(tmp_path)
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) != 0
    finally:
        if proc.poll() is None:
            proc.kill()
    log = read_attempt_log(_log(tmp_path))
    assert [(a.n, a.cause) for a in log.attempts] == [(0, EndCause.NODE_FAILURE.value)]
    assert log.final is None  # a stop is no end of the job: nothing more starts


def test_bhist_reruns() -> None:
    assert requeue_causes(REQUEUED) == [(EndCause.KILLED, "brequeue by root: LSF requeued the job")]
    host_lost = REQUEUED.replace("Signal <REQUEUE_PEND>", "Signal <KILL>")
    assert requeue_causes(host_lost)[0][0] == EndCause.NODE_FAILURE
    assert not requeue_requested(REQUEUED)  # the last run goes on
    ended = REQUEUED.split("Sun Nov 29 01:33:16")[0]
    assert requeue_requested(ended)
