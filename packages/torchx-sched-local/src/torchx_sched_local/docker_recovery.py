"""``local_docker`` jobs that recover inside their container (managed's native recovery).

The app (one replica) runs under core's bash restart loop (:func:`torchx.schedulers.recovery.restart_loop`),
the container's main process: ``bash -c LOOP torchx ENTRYPOINT ARGS...``. Each attempt is the
app started again in the same container, so ``TORCHX_ATTEMPT`` changes per attempt, the default
``TORCHX_CHECKPOINT_DIR`` (``/tmp/torchx-checkpoints``, in the container's own filesystem) is
the same for every attempt, and the attempt log (``/tmp/torchx-attempts``) stays in the container,
where any client of the same Docker engine reads it (``get_archive``, also from a stopped
container). Docker's restart policy is not used: it restarts a container with the same
environment (no new ``TORCHX_ATTEMPT``), on any non-zero exit (no ``recover_on_exit_codes``,
no application errors told from kills, one ``MaximumRetryCount`` for both budgets, a job
whose budget is used up would be restarted again), with its own back-off.

The image needs ``bash``, ``grep`` and ``date`` (coreutils).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from docker.models.containers import Container
    from torchx.schedulers.recovery import AttemptLog, RecoveryPolicy

#: the attempt log, in the container
ATTEMPT_LOG = "/tmp/torchx-attempts"
#: ``TORCHX_CHECKPOINT_DIR`` when the policy names none: the container's own filesystem, kept
#: across its attempts (they run in the one container)
CHECKPOINT_DIR = "/tmp/torchx-checkpoints"
#: on a container that recovers by itself
LABEL_RECOVERY = "torchx.pytorch.org/recovery"

#: one attempt: the app in the background (so that a stop reaches the loop at once), a SIGTERM
#: (``docker stop``: cancel) passed on to it; its exit code in ``$rc``
_RUN_LINES = [
    '"$@" &',
    "tx_pid=$!",
    "trap 'tx_stop=1; kill -TERM \"$tx_pid\" 2>/dev/null' TERM",
    'wait "$tx_pid"; rc=$?',
    'if [ "$tx_stop" = 1 ]; then wait "$tx_pid"; rc=$?; fi',
    "trap 'tx_stop=1' TERM",
    "tx_lost=0",
]


def loop_command(policy: RecoveryPolicy, command: list[str]) -> list[str]:
    """The container's command: ``command`` run as attempts under ``policy``."""
    from torchx.schedulers.recovery import restart_loop

    lines = restart_loop(
        policy,
        _RUN_LINES,
        log_path=ATTEMPT_LOG,
        requeue_count="0",
        default_checkpoint_dir=CHECKPOINT_DIR,
        lost_wait=0,
    )
    return ["bash", "-c", "\n".join(lines), "torchx", *command]


def read_attempts(container: Container) -> AttemptLog:
    """The attempts recorded in ``container``'s attempt log (none yet: an empty log)."""
    import io
    import tarfile

    from docker.errors import NotFound
    from torchx.schedulers.recovery import AttemptLog, read_attempt_log

    try:
        chunks, _ = container.get_archive(ATTEMPT_LOG)
    except NotFound:
        return AttemptLog()
    with tarfile.open(fileobj=io.BytesIO(b"".join(chunks))) as tar:
        member = tar.extractfile(tar.getmembers()[0])
        text = member.read().decode("utf-8", errors="replace") if member is not None else ""
    return read_attempt_log(text)
