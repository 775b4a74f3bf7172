"""The entry point of a detached driver process (torchx-sweep's, torchx-managed's): one job of
a :class:`~torchx.util.durable.DurableStore` driven to its end by a plugin's driver object.

The driver runs as ``python -m PLUGIN.driver ROOT JOB_ID [--lock-fd N]`` in a session of its
own (it outlives the CLI that started it). :func:`drive` holds the job's driver lock for the
process's whole life (a second driver of the same job exits at once), opens a runner in the
job's session, and wires the signals: ``SIGTERM`` asks the driver to stop (it decides what
that means for its job), ``SIGHUP`` is ignored (the terminal that started it may close). A
driver that stops on an error records it in the job's ``driver.problem``
(:meth:`~torchx.util.durable.DurableStore.report_problem`).
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable, Sequence

from torchx.runner.api import Runner, get_runner
from torchx.util.durable import DurableStore, UnknownJobError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Protocol

    class Driver(Protocol):
        """What :func:`drive` needs of a plugin's driver."""

        def request_stop(self) -> None:
            """Called from the ``SIGTERM`` handler: ask the loop to stop soon."""

        def run(self) -> None:
            """Drives the job until it ends or a stop was requested."""


def drive(
    store: DurableStore,
    argv: Sequence[str],
    make_driver: Callable[[str, Runner], Driver],
    logger: logging.Logger,
) -> int:
    """Runs the driver of the job named by ``argv`` (``ROOT``-relative ``JOB_ID [--lock-fd N]``,
    the root already opened as ``store``); returns the process's exit code.

    Args:
        argv: ``[JOB_ID]`` or ``[JOB_ID, "--lock-fd", N]`` (``N``: a held lock handed over by
            :meth:`DurableStore.spawn`)
        make_driver: builds the driver of job ``JOB_ID`` with the runner it submits through
        logger: the plugin's logger (its messages go to the job's ``driver.log``)
    """
    job_id = argv[0]
    lock_fd = int(argv[2]) if len(argv) >= 3 and argv[1] == "--lock-fd" else None
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        with store.driver_lock(job_id, fd=lock_fd) as held:
            if not held:
                logger.info("%s already has a driver", job_id)
                return 0
            session = str(store.read_spec(job_id)["session"])
            with get_runner(name=session) as runner:
                driver = make_driver(job_id, runner)
                signal.signal(signal.SIGTERM, lambda *_: driver.request_stop())
                signal.signal(signal.SIGHUP, signal.SIG_IGN)
                driver.run()
    except UnknownJobError as e:  # deleted before or while it ran: nothing of it is to be done
        logger.info("stopping: %s", e)
    except Exception as e:  # said where a look at the job finds it: driver.log may be unwritable
        store.report_problem(job_id, f"its driver stopped: {type(e).__name__}: {e}")
        raise
    return 0
