"""How a managed job's bytes reach storage when its ``journal`` is an fsspec URL (``s3://BUCKET/PREFIX``).

A shared path keeps core's :class:`~torchx.util.durable.DurableStore` (files, ``O_APPEND``,
``flock``). An object store has no append and no lock, so a job under a URL root is kept as::

    ROOT/<job id>/spec.json              # written once, create-only
                 /events/<seq>.json      # one object per append, create-only: {"w": WRITER, "evs": [...]}
                 /driver.lease           # the driver's lease (below)
                 /driver.problem         # why its driver cannot go on, or blank

Every write that decides something is *conditional*, which is what fences two drivers:

* an append puts ``events/<seq>.json`` with ``If-None-Match: *``: two writers that read the same
  journal race for the same name and exactly one wins. A loser that holds no lease (``torchx
  cancel``) retries at the next number; a driver that finds another driver's append there has
  been taken over and stops (:class:`FencedError`) without writing;
* the lease is taken (create-only) or renewed and taken over (``If-Match`` on the ETag read), so
  two contenders cannot both win. Its rules are client-go's leader election, timed by the
  contender's own clock (no clocks are compared): a holder renews every :data:`RENEW_EVERY`
  seconds; a contender takes a lease whose ETag stayed unchanged for :data:`LEASE_DURATION`
  seconds, or at once when nobody holds it; a holder that could not renew for
  :data:`RENEW_DEADLINE` seconds, or reads another holder, has lost it: its process exits at once,
  and each of its appends checks first that its last renewal is younger than the deadline.

A process on another machine cannot signal the driver: every second renewal (~3 s) the driver
lists the journal, and an append by another writer (``torchx cancel``) makes it look at the
journal as a local cancel's ``SIGTERM`` does.

What this assumes of the store: strong read-after-write and list-after-write consistency (S3
since 2020) and conditional ``PutObject`` (``If-None-Match: *`` and ``If-Match``: S3 since 2024,
MinIO, moto). Only ``s3://`` is accepted (:func:`check_url`); a filesystem whose conditional
writes torchx does not know is refused at submit rather than driven unfenced. Who may read and
write the journal is the bucket's policy (the local ``check_private`` has no equivalent).

fsspec (and ``s3fs``) are imported only here, only for a URL journal: ``pip install
'torchx-managed[fsspec]'``.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from torchx.util.durable import DRIVER_START_TIMEOUT, DurableStore, state_root

logger: logging.Logger = logging.getLogger("torchx_managed.journal_store")

#: URL schemes whose conditional writes the store uses (see the module docstring)
PROTOCOLS = ("s3", "s3a")
SPEC = "spec.json"
EVENTS = "events"
LEASE = "driver.lease"
PROBLEM = "driver.problem"
#: seconds a lease unrenewed stays its holder's
LEASE_DURATION = 9.0
#: seconds between two renewals by the holder
RENEW_EVERY = 1.5
#: seconds without a renewal after which a holder counts itself as having lost its lease
RENEW_DEADLINE = 6.0
#: digits of an event object's sequence number
SEQ_WIDTH = 10


def is_url(location: str) -> bool:
    """True if ``location`` is a URL (``SCHEME://...``) rather than a path."""
    return "://" in location and not location.startswith("file://")


class FencedError(RuntimeError):
    """This process's lease on a job's journal is lost (another driver took it over): it must stop."""


def _conflict(e: BaseException) -> bool:
    """True if ``e`` is a failed precondition (HTTP 412) of a conditional write."""
    seen: BaseException | None = e
    while seen is not None:
        if isinstance(seen, FileExistsError):
            return True
        response = getattr(seen, "response", None)
        if isinstance(response, dict):
            code = str((response.get("Error") or {}).get("Code", ""))
            status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
            if code in ("PreconditionFailed", "ConditionalRequestConflict", "412") or status in (409, 412):
                return True
        seen = seen.__cause__ or seen.__context__
    return False


class ObjectStore:
    """Conditional reads and writes of objects under one fsspec URL (S3 through ``s3fs``).

    Raises:
        ImportError: fsspec, or the filesystem of the URL's scheme, is not installed (one line)
    """

    def __init__(self, url: str) -> None:
        try:
            import fsspec
        except ImportError:
            raise ImportError(f"journal={url} needs fsspec: pip install 'torchx-managed[fsspec]'") from None
        try:
            self.fs, _ = fsspec.core.url_to_fs(url)
        except ImportError as e:
            raise ImportError(
                f"journal={url}: the filesystem of {url.split('://')[0]}:// is not installed"
                f" ({str(e).splitlines()[0]}); pip install 'torchx-managed[fsspec]'"
            ) from None
        self.url = url.rstrip("/")

    def _key(self, url: str) -> str:
        return str(self.fs._strip_protocol(url))

    def get(self, url: str) -> tuple[bytes, str] | None:
        """The object's bytes and ETag (None: there is none). The ETag is read first: a write in
        between makes a later ``If-Match`` on it fail, never succeed on bytes not read."""
        key = self._key(url)
        self.fs.invalidate_cache(key)
        try:
            etag = str(self.fs.info(key).get("ETag", ""))
            return bytes(self.fs.cat_file(key)), etag
        except FileNotFoundError:
            return None

    def create(self, url: str, data: bytes) -> str | None:
        """Writes the object only if none exists; its ETag, or None if one existed."""
        try:
            out = self.fs.pipe_file(self._key(url), data, mode="create")
        except Exception as e:
            if _conflict(e):
                return None
            raise
        return str((out or {}).get("ETag", ""))

    def replace(self, url: str, data: bytes, etag: str) -> str | None:
        """Writes the object only if its ETag is still ``etag``; the new ETag, or None if it changed."""
        try:
            out = self.fs.pipe_file(self._key(url), data, IfMatch=etag)
        except Exception as e:
            if _conflict(e) or isinstance(e, FileNotFoundError):
                return None
            raise
        return str((out or {}).get("ETag", ""))

    def put(self, url: str, data: bytes) -> None:
        """Writes the object whatever is there."""
        self.fs.pipe_file(self._key(url), data)

    def names(self, url: str) -> list[str]:
        """The names directly under ``url`` (none if there is nothing)."""
        key = self._key(url)
        self.fs.invalidate_cache(key)
        try:
            return sorted(p.rstrip("/").rsplit("/", 1)[-1] for p in self.fs.ls(key, detail=False, refresh=True))
        except FileNotFoundError:
            return []

    def cat(self, urls: list[str]) -> dict[str, bytes]:
        """The bytes of several objects, read concurrently (a missing one left out)."""
        if not urls:
            return {}
        keys = {self._key(u): u for u in urls}
        got = self.fs.cat(list(keys), on_error="omit")
        return {keys[k]: bytes(v) for k, v in got.items() if k in keys}

    def remove(self, url: str) -> None:
        """Removes everything under ``url``."""
        try:
            self.fs.rm(self._key(url), recursive=True)
        except FileNotFoundError:
            pass


def check_url(url: str) -> str:
    """The checked URL of a ``journal`` on object storage: its scheme is one with conditional
    writes, its filesystem is installed, and a create-only write and a removal there work (a
    probe object). Returns it without a trailing ``/``.

    Raises:
        ValueError: one line saying what is wrong and how to fix it
    """
    scheme = url.split("://", 1)[0].lower()
    if scheme not in PROTOCOLS:
        raise ValueError(
            f"journal={url}: torchx-managed fences drivers on object storage with conditional writes, which it"
            f" uses on {', '.join(p + '://' for p in PROTOCOLS)} only; give an s3:// URL or a shared path"
        )
    try:
        store = ObjectStore(url)
    except ImportError as e:
        raise ValueError(str(e)) from None
    import uuid

    probe = f"{store.url}/.torchx-probe-{uuid.uuid4().hex}"
    try:
        if store.create(probe, b"probe") is None:
            raise OSError("a new object read as existing (its conditional writes are not honoured)")
        store.remove(probe)
    except Exception as e:
        why = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ValueError(f"journal={url}: cannot write there: {why}") from None
    return store.url


def _hostname() -> str:
    import socket  # here: only a URL journal needs it

    return socket.gethostname()


def _identity() -> str:
    import uuid

    return f"{_hostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class ObjectLease:
    """One process's hold on a job's ``driver.lease`` (rules in the module docstring)."""

    def __init__(self, store: ObjectStore, url: str, identity: str) -> None:
        self.store, self.url, self.identity = store, url, identity
        self.holder = ""
        self._etag = ""  # of the record this process last wrote or read
        self._observed: tuple[str, float] | None = None  # (ETag, when first read unchanged)
        self._renewed: float | None = None  # monotonic time of this process's last take or renewal
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _record(self, holder: str) -> bytes:
        return json.dumps(
            {"holder": holder, "pid": os.getpid() if holder else None, "host": _hostname(), "t": time.time()}
        ).encode()

    def try_acquire(self) -> bool:
        """Takes or renews the lease once; True if this process holds it now."""
        current = self.store.get(self.url)
        now = time.monotonic()
        if current is None:
            etag = self.store.create(self.url, self._record(self.identity))
            return self._took(etag)
        data, etag = current
        try:
            self.holder = str(json.loads(data).get("holder") or "")
        except ValueError:
            self.holder = "?"
        if self._observed is None or self._observed[0] != etag:
            self._observed = (etag, now)
        if self.holder not in ("", self.identity) and now - self._observed[1] < LEASE_DURATION:
            return False
        return self._took(self.store.replace(self.url, self._record(self.identity), etag))

    def _took(self, etag: str | None) -> bool:
        if etag is None:  # another write won the race
            return False
        if self.holder != self.identity:
            logger.info("took lease %s", self.url)
        self.holder, self._etag, self._renewed = self.identity, etag, time.monotonic()
        return True

    def acquire(self) -> bool:
        """Takes the lease, waiting while its record stays unchanged (a holder that died); False
        as soon as the holder is seen renewing it (a live driver)."""
        first: str | None = None
        while True:
            if self.try_acquire():
                return True
            assert self._observed is not None
            if first is None:
                first = self._observed[0]
                logger.info("lease %s is held by %s: waiting to see it renewed or expire", self.url, self.holder)
            elif self._observed[0] != first:
                return False
            time.sleep(RENEW_EVERY / 2)

    def valid(self) -> bool:
        """True while this process's last renewal is younger than :data:`RENEW_DEADLINE`."""
        return self._renewed is not None and time.monotonic() - self._renewed < RENEW_DEADLINE

    def keep(self, tick: Callable[[], None] | None = None) -> None:
        """Renews the lease in a thread until :meth:`release`, calling ``tick`` after every
        second renewal; a lost lease ends the process at once (exit code 3), before anything else
        of it runs on."""

        def loop() -> None:
            renewals = 0
            while not self._stop.wait(RENEW_EVERY):
                if self.valid():
                    try:
                        if self.try_acquire():
                            renewals += 1
                            if tick is not None and renewals % 2 == 0:
                                tick()
                            continue
                    except Exception as e:
                        logger.warning("cannot renew lease %s: %s", self.url, e)
                if self._stop.is_set():
                    return
                if self.holder not in ("", self.identity) or not self.valid():
                    logger.error("lost lease %s (holder now %r): stopping", self.url, self.holder or None)
                    self._renewed = None
                    logging.shutdown()
                    os._exit(3)

        self._thread = threading.Thread(target=loop, name="lease", daemon=True)
        self._thread.start()

    def release(self) -> None:
        """Stops renewing and, if still held, gives the lease back (a contender takes it at once)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)
        if self._renewed is None:
            return
        self._renewed = None
        try:
            self.store.replace(self.url, self._record(""), self._etag)
        except Exception as e:  # it expires by itself
            logger.warning("cannot give lease %s back: %s", self.url, e)


class UrlStore(DurableStore):
    """The jobs kept under a URL ``root`` (see the module docstring): core's store interface on
    objects. Each driver's ``driver.log`` stays on the machine that runs it, under
    ``$TORCHX_MANAGED_STATE_DIR/url-logs/``.

    Raises:
        ImportError: fsspec or the URL's filesystem is not installed (one line)
    """

    #: a driver started again may first wait for a dead driver's lease to expire
    driver_start_timeout = DRIVER_START_TIMEOUT + LEASE_DURATION

    def __init__(self, root: str, kind: str = "job") -> None:
        self.root, self.kind = root.rstrip("/"), kind
        self.objects = ObjectStore(self.root)
        self._leases: dict[str, ObjectLease] = {}  # job id -> the lease this process holds
        self._held: dict[int, str] = {}  # a lock descriptor handed out -> its job id
        self._seen: dict[str, dict[int, dict[str, Any]]] = {}  # job id -> seq -> envelope read
        self._lock = threading.Lock()  # over _seen

    def job_dir(self, job_id: str) -> str:
        """The job's URL.

        Raises:
            UnknownJobError: the id is not a plain name
        """
        if not job_id or "/" in job_id or job_id.startswith("."):
            raise self._unknown(f"{job_id!r} is not a {self.kind} id")
        return f"{self.root}/{job_id}"

    def log_path(self, job_id: str) -> str:
        """The local ``driver.log`` of the job's driver started on this machine."""
        import hashlib

        digest = hashlib.sha256(self.root.encode()).hexdigest()[:12]
        path = os.path.join(state_root("managed", "TORCHX_MANAGED_STATE_DIR"), "url-logs", digest, job_id)
        os.makedirs(path, mode=0o700, exist_ok=True)
        return os.path.join(path, "driver.log")

    def create(self, job_id: str, spec: dict[str, Any]) -> str:
        """Stores a new job's spec (create-only).

        Raises:
            FileExistsError: a job with this id exists
        """
        url = self.job_dir(job_id)
        if self.objects.create(f"{url}/{SPEC}", json.dumps(spec).encode()) is None:
            raise FileExistsError(f"{url}/{SPEC} exists")
        return url

    def check_private(self, job_id: str) -> None:
        """Nothing: who may write a URL journal is the bucket's policy."""

    def read_spec(self, job_id: str) -> dict[str, Any]:
        """The job's spec.

        Raises:
            UnknownJobError: no such job here
        """
        url = f"{self.job_dir(job_id)}/{SPEC}"
        got = self.objects.get(url)
        if got is None:
            raise self._unknown(f"unknown {self.kind} {job_id!r} (no {url})")
        spec: dict[str, Any] = json.loads(got[0])
        return spec

    def update_spec(self, job_id: str, **changes: Any) -> None:
        """Rewrites the spec with ``changes``."""
        spec = self.read_spec(job_id)
        spec.update(changes)
        self.objects.put(f"{self.job_dir(job_id)}/{SPEC}", json.dumps(spec).encode())

    def _envelopes(self, job_id: str) -> dict[int, dict[str, Any]]:
        """The job's appends by sequence number (objects never change once written: each is read
        once); a copy, safe to read while the lease's thread reads the journal too."""
        with self._lock:
            return dict(self._read_envelopes(job_id))

    def _read_envelopes(self, job_id: str) -> dict[int, dict[str, Any]]:
        seen = self._seen.setdefault(job_id, {})
        url = f"{self.job_dir(job_id)}/{EVENTS}"
        new = [n for n in self.objects.names(url) if n.endswith(".json") and n[:-5].isdigit()]
        new = [n for n in new if int(n[:-5]) not in seen]
        for name, data in self.objects.cat([f"{url}/{n}" for n in new]).items():
            try:
                env = json.loads(data)
            except ValueError:
                continue
            if isinstance(env, dict):
                seen[int(name.rsplit("/", 1)[-1][:-5])] = env
        return seen

    def events(self, job_id: str) -> Iterator[dict[str, Any]]:
        """The job's journal, oldest first."""
        envs = self._envelopes(job_id)
        for seq in sorted(envs):
            for ev in envs[seq].get("evs") or ():
                if isinstance(ev, dict):
                    yield ev

    def append(self, job_id: str, *events: dict[str, Any], sync: bool = False) -> None:
        """Appends the events as the journal's next object (create-only; every write is durable
        once it returns, ``sync`` or not).

        Raises:
            UnknownJobError: the job was removed (or never stored)
            FencedError: this process drives the job but its lease is lost, or another driver
                appended in its place: nothing was written
        """
        lease = self._leases.get(job_id)
        url = self.job_dir(job_id)
        with self._lock:  # first try the number after the journal last read (no LIST): a conflict reads it again
            envs = dict(self._seen.get(job_id) or {})
        for _ in range(100):
            if lease is not None and not lease.valid():
                raise FencedError(f"lost the lease of {url}: another driver may drive it")
            envs = envs or self._envelopes(job_id)
            if not envs and self.objects.get(f"{url}/{SPEC}") is None:
                raise self._unknown(f"unknown {self.kind} {job_id!r} (no {url}/{SPEC})")
            seq = max(envs, default=-1) + 1
            writer = lease.identity if lease is not None else ""
            data = json.dumps({"w": writer, "evs": list(events)}, separators=(",", ":")).encode()
            if self.objects.create(f"{url}/{EVENTS}/{seq:0{SEQ_WIDTH}d}.json", data) is not None:
                with self._lock:
                    self._seen.setdefault(job_id, {})[seq] = json.loads(data)
                return
            # another writer took that number: a driver in this one's place fences it
            envs = self._envelopes(job_id)
            if lease is not None and any(
                str(e.get("w") or "") not in ("", writer) for s, e in envs.items() if s >= seq
            ):
                raise FencedError(f"another driver appended to {url}: this one stops")
        raise OSError(f"cannot append to {url}: the journal keeps changing")

    def job_ids(self) -> list[str]:
        """Every stored job (with a spec), oldest first."""
        found = []
        for name in self.objects.names(self.root):
            if name.startswith("."):
                continue
            try:
                info = self.objects.fs.info(self.objects._key(f"{self.root}/{name}/{SPEC}"))
            except (FileNotFoundError, OSError):
                continue
            modified = info.get("LastModified")
            found.append((str(modified), name))
        return [n for _, n in sorted(found)]

    # ------------------------------------------------------------------ the driver's lease
    def _lease_record(self, job_id: str) -> dict[str, Any] | None:
        got = self.objects.get(f"{self.job_dir(job_id)}/{LEASE}")
        if got is None:
            return None
        try:
            rec = json.loads(got[0])
        except ValueError:
            return None
        return rec if isinstance(rec, dict) else None

    def driver_pid(self, job_id: str) -> int | None:
        """The pid of the job's driver when it runs on this machine, -1 when it runs elsewhere,
        None when its lease names no holder or was last renewed more than a lease's duration ago
        by the wall clock (a hint for whether to start one: the lease itself decides who drives)."""
        rec = self._lease_record(job_id)
        if rec is None or not rec.get("holder"):
            return None
        if time.time() - float(rec.get("t") or 0.0) > LEASE_DURATION:
            return None
        pid = rec.get("pid")
        return int(pid) if isinstance(pid, int) and rec.get("host") == _hostname() else -1

    def _lock_names(self, job_id: str, pid: int) -> bool:
        rec = self._lease_record(job_id)
        return rec is not None and rec.get("pid") == pid and rec.get("host") == _hostname()

    def take_driver_lock(self, job_id: str, own: bool = True) -> int | None:
        """Takes the job's lease once (no wait); a descriptor standing for it, or None if held
        elsewhere. :meth:`spawn` with that descriptor gives the lease back just before the driver
        starts, which then takes it at once."""
        self.job_dir(job_id)
        lease = ObjectLease(self.objects, f"{self.job_dir(job_id)}/{LEASE}", _identity())
        if not lease.try_acquire():
            return None
        fd = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        self._leases[job_id], self._held[fd] = lease, job_id
        return fd

    @contextmanager
    def driver_lock(self, job_id: str, fd: int | None = None) -> Iterator[bool]:
        """Holds the job's lease (renewed in a thread) while the block runs; yields False if a
        live driver holds it. ``fd`` (a lock handed over by :meth:`spawn`) needs nothing: the
        lease was given back for this process to take."""
        if self.objects.get(f"{self.job_dir(job_id)}/{SPEC}") is None:
            raise self._unknown(f"unknown {self.kind} {job_id!r}")
        lease = ObjectLease(self.objects, f"{self.job_dir(job_id)}/{LEASE}", _identity())
        if not lease.acquire():
            yield False
            return
        self._leases[job_id] = lease
        seen = max(self._envelopes(job_id), default=-1)

        def look() -> None:  # another machine's append (a cancel) cannot signal this process
            nonlocal seen
            envs = self._envelopes(job_id)
            new = [s for s in envs if s > seen and envs[s].get("w") != lease.identity]
            seen = max(envs, default=seen)
            if new:
                logger.info("the journal of %s has appends from elsewhere: looking at it", job_id)
                import signal

                os.kill(os.getpid(), signal.SIGTERM)  # the driver's "look at the journal (a cancel)"

        lease.keep(look)
        try:
            yield True
        finally:
            self._leases.pop(job_id, None)
            lease.release()

    def _release_handed(self, lock_fd: int | None) -> None:
        job_id = self._held.pop(lock_fd, None) if lock_fd is not None else None
        if job_id is not None:
            lease = self._leases.pop(job_id, None)
            if lease is not None:
                lease.release()

    def spawn(self, job_id: str, argv: Any, cwd: str | None = None, lock_fd: int | None = None) -> int:
        """Starts the job's detached driver on this machine (see :meth:`DurableStore.spawn`): the
        lease taken with ``lock_fd`` is given back first, for the driver to take."""
        self._release_handed(lock_fd)
        return self._start(job_id, argv, cwd).pid

    # ------------------------------------------------------------------ problems
    def report_problem(self, job_id: str, text: str) -> bool:
        """Records why the job's driver cannot go on in ``driver.problem``; never raises."""
        try:
            self.objects.put(f"{self.job_dir(job_id)}/{PROBLEM}", " ".join(text.split()).encode())
            return True
        except Exception:
            return False

    def problem(self, job_id: str) -> str:
        """What :meth:`report_problem` last recorded ("" if nothing)."""
        try:
            got = self.objects.get(f"{self.job_dir(job_id)}/{PROBLEM}")
        except Exception:
            return ""
        return got[0].decode(errors="replace").strip() if got else ""

    def remove(self, job_id: str) -> None:
        """Removes the job's objects."""
        self.objects.remove(self.job_dir(job_id))
        self._seen.pop(job_id, None)


class RoutedStore(DurableStore):
    """A :class:`DurableStore` whose root, or a job's ``ID@URL`` root, may be a URL: such jobs
    are kept by a :class:`UrlStore` (one per URL, made on first use)."""

    def __init__(self, root: str, kind: str = "job") -> None:
        if is_url(root):
            self.root, self.kind = root.rstrip("/"), kind
        else:
            super().__init__(root, kind)
        self._url_stores: dict[str, UrlStore] = {}

    def _locate(self, job_id: str) -> tuple[str, str]:
        """``(root, plain id)`` of a job id (a subclass reads ``ID@ROOT`` ids here)."""
        return self.root, job_id

    def _route(self, job_id: str) -> tuple[UrlStore, str] | None:
        """The URL store and plain id of a job kept under a URL, else None."""
        root, name = self._locate(job_id)
        if not is_url(root):
            return None
        store = self._url_stores.get(root)
        if store is None:
            store = self._url_stores[root] = UrlStore(root, self.kind)
            store._unknown = self._unknown  # type: ignore[method-assign]
        return store, name

    def url_store(self, job_id: str) -> UrlStore | None:
        """The URL store of a job kept under a URL, else None."""
        routed = self._route(job_id)
        return routed[0] if routed else None

    def job_dir(self, job_id: str) -> str:
        routed = self._route(job_id)
        return routed[0].job_dir(routed[1]) if routed else super().job_dir(job_id)

    def create(self, job_id: str, spec: dict[str, Any]) -> str:
        routed = self._route(job_id)
        return routed[0].create(routed[1], spec) if routed else super().create(job_id, spec)

    def check_private(self, job_id: str) -> None:
        if self._route(job_id) is None:
            super().check_private(job_id)

    def read_spec(self, job_id: str) -> dict[str, Any]:
        routed = self._route(job_id)
        return routed[0].read_spec(routed[1]) if routed else super().read_spec(job_id)

    def update_spec(self, job_id: str, **changes: Any) -> None:
        routed = self._route(job_id)
        if routed:
            routed[0].update_spec(routed[1], **changes)
        else:
            super().update_spec(job_id, **changes)

    def append(self, job_id: str, *events: dict[str, Any], sync: bool = False) -> None:
        routed = self._route(job_id)
        if routed:
            routed[0].append(routed[1], *events, sync=sync)
        else:
            super().append(job_id, *events, sync=sync)

    def events(self, job_id: str) -> Iterator[dict[str, Any]]:
        routed = self._route(job_id)
        return routed[0].events(routed[1]) if routed else super().events(job_id)

    def job_ids(self) -> list[str]:
        return UrlStore(self.root).job_ids() if is_url(self.root) else super().job_ids()

    def driver_pid(self, job_id: str) -> int | None:
        routed = self._route(job_id)
        return routed[0].driver_pid(routed[1]) if routed else super().driver_pid(job_id)

    def take_driver_lock(self, job_id: str, own: bool = True) -> int | None:
        routed = self._route(job_id)
        return routed[0].take_driver_lock(routed[1], own) if routed else super().take_driver_lock(job_id, own)

    @contextmanager
    def driver_lock(self, job_id: str, fd: int | None = None) -> Iterator[bool]:
        routed = self._route(job_id)
        with routed[0].driver_lock(routed[1], fd) if routed else super().driver_lock(job_id, fd) as held:
            yield held

    def spawn(self, job_id: str, argv: Any, cwd: str | None = None, lock_fd: int | None = None) -> int:
        routed = self._route(job_id)
        return routed[0].spawn(routed[1], argv, cwd, lock_fd) if routed else super().spawn(job_id, argv, cwd, lock_fd)

    def report_problem(self, job_id: str, text: str) -> bool:
        routed = self._route(job_id)
        return routed[0].report_problem(routed[1], text) if routed else super().report_problem(job_id, text)

    def problem(self, job_id: str) -> str:
        routed = self._route(job_id)
        return routed[0].problem(routed[1]) if routed else super().problem(job_id)

    def remove(self, job_id: str) -> None:
        routed = self._route(job_id)
        if routed:
            routed[0].remove(routed[1])
        else:
            super().remove(job_id)

    def resume(self, job_id: str, argv: Any, finished: bool, cwd: str | None = None) -> bool:
        routed = self._route(job_id)
        return (
            routed[0].resume(routed[1], argv, finished, cwd) if routed else super().resume(job_id, argv, finished, cwd)
        )
