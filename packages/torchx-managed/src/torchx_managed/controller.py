"""A controller that runs as a job on a cluster (``-cfg controller=<scheduler>``): one process
drives every unfinished managed job kept in one ``journal`` (a shared directory, or an
``s3://`` URL), so recovery, failover across targets, ``pending_timeout`` and ``notify`` go on
with the submitting machine gone.

Run as ``python -m torchx_managed.controller ROOT`` (submitted by :func:`ensure`). It:

* holds ``ROOT/controller.lock`` for its whole life (under a URL: the lease object
  ``ROOT/controller.lease``, renewed like a driver's, see :mod:`torchx_managed.journal_store`): a
  second controller of the same journal exits at once (under a URL: as soon as it sees the lease
  renewed; a dead controller's lease is taken once it stayed unchanged for its duration);
* scans the journal every :data:`SCAN_INTERVAL` seconds and drives each unfinished job whose
  driver lock it can take, in a thread of its own (a job that another driver holds, e.g. a
  local one, is left to it: two drivers never drive one job; under a URL the driver lock is the
  job's lease object, renewed by the controller, and a lost one stops that job's driver);
* wakes a job's driver when ``torchx cancel`` journals a cancel (from any machine);
* exits after :data:`IDLE_EXIT` seconds with nothing to drive (the next submission, or the next
  look at an unfinished job, submits a new controller);
* on SIGTERM (a cancel of the controller job, a preemption) stops its drivers without ending
  their jobs: the next look at a job submits a new controller, which resumes it.

Under a URL journal the controller job's working directory and log are on the node that runs
it: :func:`controller_dir`. It reaches the bucket with the environment it inherits from whoever
submitted it (``sbatch`` and ``bsub`` pass the submitting environment: ``AWS_*`` credentials,
``AWS_PROFILE``, ``AWS_ENDPOINT_URL``), nothing of which is written into its script.
"""

from __future__ import annotations

import fcntl
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

from torchx.specs.roles import AppDef, Resource, Role
from torchx.specs.status import AppState, is_terminal
from torchx.util.files import lock_held

from torchx_managed.controller_record import claim, read_record, record_controller
from torchx_managed.journal import ManagedStore
from torchx_managed.journal_store import LEASE_DURATION, is_url
from torchx_managed.options import CONTROLLER_ENV

if TYPE_CHECKING:
    from torchx.runner import Runner

    from torchx_managed.driver import Driver
    from torchx_managed.options import ManagedOptions

logger: logging.Logger = logging.getLogger("torchx_managed.controller")

#: seconds between two scans of the journal
SCAN_INTERVAL = 1.0
#: seconds between two returns of the heap's freed pages to the system (see :func:`_trim_heap`)
TRIM_INTERVAL = 20.0
#: seconds with no unfinished job after which the controller job ends
IDLE_EXIT = 120.0
#: a controller job that failed within this many seconds of its submission is not replaced
#: before they are up (each look at a job would otherwise submit one more that fails alike)
FAILED_CONTROLLER_BACKOFF = 30.0
#: the lock a controller holds for its whole life, in the journal directory
CONTROLLER_LOCK = "controller.lock"
#: the lease a controller holds for its whole life under a URL journal
CONTROLLER_LEASE = "controller.lease"
#: the role of a controller job
CONTROLLER_ROLE = "controller"
#: the working directory, and so the log's, of a controller job on a URL journal (node-local)
URL_CONTROLLER_DIR = "/tmp"


def controller_dir(root: str) -> str:
    """The controller job's working directory (its log is written there): the journal directory,
    or for a URL journal :data:`URL_CONTROLLER_DIR`, which every node of a cluster has (a
    directory of the submitting machine's may be gone, or not mounted, when the job starts)."""
    return URL_CONTROLLER_DIR if is_url(root) else root


def controller_app(root: str) -> AppDef:
    """The controller job: this interpreter running this module on ``root`` (the cluster's nodes
    reach the same Python, and the same journal path or URL, as with a shared virtualenv)."""
    role = Role(
        CONTROLLER_ROLE,
        image=controller_dir(root),
        entrypoint=sys.executable,
        args=["-m", "torchx_managed.controller", root],
        env=dict(CONTROLLER_ENV),
        resource=Resource(cpu=1, gpu=0, memMB=256),
    )
    return AppDef("torchx-managed-controller", [role])


def _trim_heap() -> None:
    """Gives the heap's free pages back to the system (glibc's ``malloc_trim``): a controller's
    driver threads come and go with its jobs, and what they freed otherwise stays in its RSS
    (about 2 MB of a controller driving 100 jobs on a bucket journal). Nothing where the C
    library has no such call."""
    import ctypes

    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


def running(root: str) -> bool:
    """True while a controller process holds the journal's controller lock (under a URL: while
    its lease names a holder and was renewed within its duration, by the wall clock)."""
    if not is_url(root):
        return lock_held(os.path.join(root, CONTROLLER_LOCK))
    import json

    from torchx_managed.journal_store import ObjectStore

    got = ObjectStore(root).get(f"{root}/{CONTROLLER_LEASE}")
    try:
        record = json.loads(got[0]) if got is not None else {}
        return bool(record.get("holder")) and time.time() - float(record.get("t") or 0.0) <= LEASE_DURATION
    except (ValueError, TypeError, AttributeError):
        return False


@dataclass(frozen=True)
class ControllerLook:
    """What :func:`ensure` found: the controller job's handle (``""``: none recorded yet) and,
    when no controller can drive the journal's jobs now, why (``""`` otherwise)."""

    handle: str
    problem: str = ""


def ensure(runner: Runner, scheduler: str, root: str, opts: ManagedOptions) -> ControllerLook:
    """A live controller job for ``root`` on ``scheduler``: the recorded one while it is queued
    or running, else a new one, submitted here (on ``kubernetes``: the journal's Deployment, see
    :mod:`torchx_managed.k8s_controller`; ``opts``: the job's options). One that failed soon after
    its submission is not replaced before :data:`FAILED_CONTROLLER_BACKOFF`; the look then says
    why it failed (the last error of its log)."""
    if scheduler == "kubernetes":
        from torchx_managed import k8s_controller

        return ControllerLook(k8s_controller.ensure(opts, root))
    record, version = read_record(root)
    handle = str(record["handle"]) if isinstance(record.get("handle"), str) else None
    if handle is not None:
        try:
            status = runner.status(handle)
        except Exception as e:  # the scheduler briefly unreachable: do not pile up controllers
            logger.warning("cannot get the status of controller %s (%s); not submitting another", handle, e)
            return ControllerLook(
                handle, f"its controller {handle}: the scheduler did not answer ({e}); asked again at the next look"
            )
        if status is not None and not is_terminal(status.state):
            return ControllerLook(handle)
        submitted = record.get("submitted")
        if (
            status is not None
            and status.state == AppState.FAILED
            and isinstance(submitted, (int, float))
            and time.time() - submitted < FAILED_CONTROLLER_BACKOFF
        ):  # it could not run (the journal unreachable from the cluster?): no new one per look
            age = time.time() - submitted
            logger.warning(
                "controller %s failed %.0fs after it was submitted; not submitting another before %.0fs"
                " (its log says why)",
                handle,
                age,
                FAILED_CONTROLLER_BACKOFF,
            )
            why = last_error(runner, handle)
            return ControllerLook(
                handle,
                f"its controller {handle} failed {age:.0f}s after it was submitted"
                + (f": {why}" if why else "")
                + f"; another is submitted at a look after {FAILED_CONTROLLER_BACKOFF - age:.0f}s"
                f" (its log: torchx log {handle})",
            )
    if running(root):  # one runs that no record names (its record is being written)
        return ControllerLook(handle or "")
    claimed = claim(root, version)  # under a URL: one of two machines looking at once submits
    if claimed is None:
        return ControllerLook(handle or "")
    app = controller_app(root)
    has_job_dir = runner.scheduler_run_opts(scheduler).get("job_dir") is not None
    handle = runner.run(app, scheduler, {"job_dir": app.roles[0].image} if has_job_dir else None)
    record_controller(root, handle, claimed)
    logger.info("submitted controller %s for %s", handle, root)
    return ControllerLook(handle)


#: the log lines of a failed controller job :func:`last_error` reads (from its end)
ERROR_LINES = 200


def last_error(runner: Runner, handle: str) -> str:
    """The last error a controller job logged (its logger's ``ERROR`` line, else the log's last
    line, e.g. Python's own "No module named ..."); ``""`` when its log cannot be read."""
    try:
        lines = deque(runner.log_lines(handle, CONTROLLER_ROLE, 0), maxlen=ERROR_LINES)
    except Exception as e:  # a log the scheduler no longer keeps, or on a node's disk
        logger.info("cannot read the log of controller %s: %s", handle, e)
        return ""
    texts = [line.strip() for line in lines if line.strip()]
    for text in reversed(texts):
        if " ERROR " in text:  # "<time> ERROR <thread> <message>"
            return text.split(" ERROR ", 1)[1].split(" ", 1)[-1]
    return texts[-1] if texts else ""


class Controller:
    """Drives the unfinished jobs of one journal directory (see the module docstring)."""

    def __init__(self, store: ManagedStore) -> None:
        self.store = store
        self.stopping = threading.Event()
        self.driving: dict[str, tuple[threading.Thread, Driver, int | None]] = {}
        self.woken: set[str] = set()
        self.finished: set[str] = set()  # jobs read final once: never read again (a final job stays final)
        self.label = f"controller {socket.gethostname()} {os.getpid()}".encode()

    def request_stop(self) -> None:
        """Stops every driver (their jobs are not ended) and the controller (signal-safe)."""
        self.stopping.set()

    def run(self, idle_exit: float = IDLE_EXIT) -> None:
        """Scans and drives until stopped, or idle for ``idle_exit`` seconds."""
        idle_since = trimmed = time.monotonic()
        try:
            while not self.stopping.is_set():
                self._reap()
                if self._scan() or self.driving:
                    idle_since = time.monotonic()
                if time.monotonic() - trimmed >= TRIM_INTERVAL:
                    _trim_heap()
                    trimmed = time.monotonic()
                elif time.monotonic() - idle_since >= idle_exit:
                    logger.info("nothing to drive for %.0fs: exiting", idle_exit)
                    return
                self.stopping.wait(SCAN_INTERVAL)
        finally:
            for _, driver, _ in self.driving.values():
                driver.request_stop()
                driver.wake()
            for thread, _, _ in self.driving.values():
                thread.join(timeout=60)
            self._reap()

    def _scan(self) -> int:
        """Starts a driver for each unfinished job nobody drives; wakes those with a new cancel;
        returns how many jobs are unfinished."""
        unfinished = 0
        for job_id in self.store.job_ids():
            if job_id in self.finished:
                continue
            try:
                state = self.store.load(job_id)
            except Exception as e:  # a job being deleted, a torn spec: the others go on
                logger.warning("skipped job %s: %s", job_id, e)
                continue
            if state.final is not None:
                if job_id not in self.driving:  # its driver may still be writing its last events
                    self.finished.add(job_id)
                continue
            unfinished += 1
            held = self.driving.get(job_id)
            if held is not None:
                if state.cancelled and job_id not in self.woken:
                    self.woken.add(job_id)
                    held[1].wake()
                continue
            self._start(job_id)
        return unfinished

    def _start(self, job_id: str) -> None:
        from torchx.runner import get_runner

        from torchx_managed.driver import Driver

        objects = self.store.url_store(job_id)
        drivers: list[Driver] = []  # the one started below, once it is

        def lost() -> None:  # the job's lease is lost: its driver stops (its appends already fail)
            for driver in drivers:
                driver.request_stop()
                driver.wake()

        fd: int | None = None
        if objects is not None:
            if not objects.hold(job_id, lost):
                return  # another driver holds the job
        else:
            fd = self.store.take_driver_lock(job_id, own=False)
            if fd is None:
                return  # another driver holds the job
            os.pwrite(fd, self.label, 0)  # not a pid of this host's: nobody signals it for the job
        try:
            session = str(self.store.read_spec(job_id).get("session", "torchx"))
            driver = Driver(self.store, job_id, get_runner(name=session))
        except BaseException:
            self._let_go(job_id, fd)
            raise
        drivers.append(driver)
        thread = threading.Thread(target=self._drive, args=(job_id, driver), name=job_id, daemon=True)
        self.driving[job_id] = (thread, driver, fd)
        logger.info("driving job %s", job_id)
        thread.start()

    def _drive(self, job_id: str, driver: Driver) -> None:
        try:
            driver.run()
        except Exception:
            logger.exception("job %s: its driver failed (the next scan starts it again)", job_id)
        finally:
            driver.runner.close()

    def _reap(self) -> None:
        for job_id, (thread, _, fd) in list(self.driving.items()):
            if not thread.is_alive():
                self._let_go(job_id, fd)
                del self.driving[job_id]
                self.woken.discard(job_id)

    def _let_go(self, job_id: str, fd: int | None) -> None:
        """Lets go of the job's driver lock (``fd``) or lease (None: under a URL)."""
        if fd is not None:
            os.close(fd)
            return
        objects = self.store.url_store(job_id)
        if objects is not None:
            objects.let_go(job_id)


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``python -m torchx_managed.controller ROOT [--lease NAMESPACE/NAME]``.

    With ``--lease`` (the pod of a ``controller=kubernetes`` Deployment) it drives nothing before
    it holds that Lease, waits for the journal's lock instead of exiting when another holds it,
    stops (exit 1: Kubernetes starts it again, and it waits for the Lease) when it loses the
    Lease, and when idle scales its own Deployment (named like the Lease) to 0 instead of ending.
    """
    args = argv if argv is not None else sys.argv[1:]
    if len(args) not in (1, 3) or (len(args) == 3 and (args[1] != "--lease" or "/" not in args[2])):
        print("usage: python -m torchx_managed.controller JOURNAL_DIR [--lease NAMESPACE/NAME]", file=sys.stderr)
        return 2
    root = args[0].rstrip("/") if is_url(args[0]) else os.path.abspath(args[0])
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(threadName)s %(message)s")
    identity = f"{os.environ.get('TORCHX_CONTROLLER_POD') or socket.gethostname()} {os.getpid()}"
    stop = threading.Event()
    controller = Controller(ManagedStore(root))
    controller.label = f"controller {identity}".encode()

    def stop_all(*_: object) -> None:
        stop.set()
        controller.request_stop()

    signal.signal(signal.SIGTERM, stop_all)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    if len(args) == 1:
        return _run(controller, root, identity, stop, wait=False)
    from torchx_sched_k8s.errors import KubernetesError
    from torchx_sched_k8s.kubeapi import KubeApi

    from torchx_managed.k8s_controller import set_replicas
    from torchx_managed.lease import Lease

    namespace, name = args[2].split("/", 1)
    api = KubeApi(timeout=5.0, shared=False)  # its renewals never wait behind the drivers' requests
    lease = Lease(api, namespace, name, identity.replace(" ", "_"))
    lost = threading.Event()

    def on_lost() -> None:  # stop before a contender may take the Lease (it waits its whole duration)
        lost.set()
        stop_all()
        timer = threading.Timer(LOST_GRACE, os._exit, (1,))
        timer.daemon = True
        timer.start()

    try:
        if not lease.acquire(stop):
            return 0
        lease.keep(on_lost)
        while True:
            code = _run(controller, root, identity, stop, wait=True)
            if code != 0 or stop.is_set():
                return 1 if lost.is_set() else code
            # idle: scale the Deployment to 0; a job that came meanwhile scales it back
            try:
                set_replicas(api, namespace, name, 0)
                if not controller._scan():
                    logger.info("scaled deployment %s/%s to 0", namespace, name)
                    return 0
                set_replicas(api, namespace, name, 1)
            except KubernetesError as e:  # Kubernetes starts it again: it idles again
                logger.warning("cannot scale deployment %s/%s: %s", namespace, name, e)
                return 0
    finally:
        lease.release()
        api.close()


#: seconds a controller that lost its Lease gives its drivers to stop before it exits anyway
LOST_GRACE = 3.0
#: the same under a URL journal (its lease is lost after 6 s unrenewed, taken over after 9 s)
LOST_GRACE_URL = 1.0


def _run(controller: Controller, root: str, identity: str, stop: threading.Event, wait: bool) -> int:
    """Holds the journal's controller lock (``wait``: waits while another holds it, else exits
    at once) and runs ``controller`` until stopped or idle."""
    if is_url(root):
        return _run_leased(controller, root, identity, stop, wait)
    try:
        fd = os.open(os.path.join(root, CONTROLLER_LOCK), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as e:
        logger.error("cannot open the journal %s: %s", root, e)
        return 1
    try:
        waited = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not wait:
                    logger.info("another controller drives %s: exiting", root)
                    return 0
                if not waited:
                    logger.info("another controller holds %s's lock: waiting for it", root)
                    waited = True
                if stop.wait(1.0):
                    return 0
        os.ftruncate(fd, 0)
        os.pwrite(fd, identity.encode(), 0)
        logger.info("controlling the managed jobs in %s", root)
        controller.run()
        return 0
    finally:
        os.close(fd)


def _run_leased(controller: Controller, root: str, identity: str, stop: threading.Event, wait: bool) -> int:
    """:func:`_run` under a URL journal: holds ``ROOT/controller.lease`` (waits while a dead
    controller's lease stays unchanged; when it is seen renewed, exits at once, or with ``wait``
    waits for it until ``stop``); losing it stops every driver and ends the process (exit 1)
    before a contender may take it."""
    from torchx_managed.journal_store import ObjectLease, ObjectStore

    try:
        lease = ObjectLease(ObjectStore(root), f"{root}/{CONTROLLER_LEASE}", f"controller {identity}")
        if not lease.acquire(stop if wait else None):
            logger.info("another controller drives %s: exiting", root)
            return 0
    except Exception as e:  # the bucket unreachable, credentials missing: said in the job's log
        logger.error("cannot reach the journal %s: %s", root, e)
        return 1
    lost = threading.Event()

    def on_lost() -> None:  # stop before a contender may take the lease (it waits its whole duration)
        lost.set()
        stop.set()
        controller.request_stop()
        timer = threading.Timer(LOST_GRACE_URL, os._exit, (1,))
        timer.daemon = True
        timer.start()

    lease.keep(on_lost)
    try:
        logger.info("controlling the managed jobs in %s", root)
        controller.run()
        return 1 if lost.is_set() else 0
    finally:
        lease.release()


if __name__ == "__main__":
    sys.exit(main())
