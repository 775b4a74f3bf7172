"""How a managed job's bytes reach storage when its ``journal`` is a URL (``s3://BUCKET/PREFIX``).

A shared path keeps core's :class:`~torchx.util.durable.DurableStore` (files, ``O_APPEND``,
``flock``). An object store has no append and no lock, so a job under a URL root is kept as::

    ROOT/<job id>/spec.json              # written once, create-only
                 /events/<seq>.json      # one object per append, create-only: {"w": WRITER, "evs": [...]}
                 /driver.lease           # the driver's lease (below)
                 /driver.problem         # why its driver cannot go on, or blank
    ROOT/controller.lease                # a controller job's lease, held for its life (controller=slurm|lsf)
    ROOT/controller.json                 # which controller job serves ROOT (claimed, then recorded)

Every write that decides something is *conditional*, which is what fences two drivers:

* an append puts ``events/<seq>.json`` with ``If-None-Match: *``: two writers that read the same
  journal race for the same name and exactly one wins. A loser that holds no lease (``torchx
  cancel``) retries at the next number; a driver that finds another driver's append there has
  been taken over and stops (:class:`FencedError`) without writing;
* the lease is taken (create-only) or renewed and taken over (``If-Match`` on the ETag read), so
  two contenders cannot both win. Its rules (:mod:`torchx_managed.renewal`, shared with the
  Kubernetes Lease) are client-go's leader election, timed by the
  contender's own clock (no clocks are compared): a holder renews every :data:`RENEW_EVERY`
  seconds; a contender takes a lease whose ETag stayed unchanged for :data:`LEASE_DURATION`
  seconds, or at once when nobody holds it; a holder that could not renew for
  :data:`RENEW_DEADLINE` seconds, or reads another holder, has lost it: a driver process exits at
  once (a controller stops that job's driver thread), and each of its appends checks first that
  its last renewal is younger than the deadline.

A process on another machine cannot signal the driver: every second renewal (~3 s) the driver
lists the journal, and an append by another writer (``torchx cancel``) makes it look at the
journal as a local cancel's ``SIGTERM`` does.

What this assumes of the store: strong read-after-write and list-after-write consistency (S3
since 2020) and conditional ``PutObject`` (``If-None-Match: *`` and ``If-Match``: S3 since 2024,
MinIO, moto). Only ``s3://`` is accepted (:func:`check_url`); a filesystem whose conditional
writes torchx does not know is refused at submit rather than driven unfenced. Who may read and
write the journal is the bucket's policy (the local ``check_private`` has no equivalent).

The bucket is reached through botocore's S3 client (boto3's core; one per process, made on the first request;
endpoint, region and credentials from the ``AWS_*`` environment or profile), imported only here,
only for a URL journal: ``pip install 'torchx-managed[s3]'``. Not fsspec and s3fs: they add
aiobotocore and aiohttp, some 10 MB more in a controller job, for the same requests.
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

from torchx.specs import workspace
from torchx.util.durable import DRIVER_START_TIMEOUT, DurableStore, state_root

from torchx_managed.renewal import RenewedLease

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
    """True if ``location`` is a URL (``SCHEME://...``, core's rule for workspaces) rather than a
    path (``file://`` is a path)."""
    return workspace.is_url(location) and not location.startswith("file://")


class FencedError(RuntimeError):
    """This process's lease on a job's journal is lost (another driver took it over): it must stop."""


def _code(e: BaseException) -> tuple[str, int | None]:
    """The error code and HTTP status of a botocore ``ClientError`` (``("", None)`` for another error)."""
    response = getattr(e, "response", None)
    if not isinstance(response, dict):
        return "", None
    code = str((response.get("Error") or {}).get("Code", ""))
    return code, (response.get("ResponseMetadata") or {}).get("HTTPStatusCode")


def _conflict(e: BaseException) -> bool:
    """True if ``e`` is a failed precondition (HTTP 412, or 409 for a concurrent one) of a conditional write."""
    code, status = _code(e)
    return code in ("PreconditionFailed", "ConditionalRequestConflict", "412") or status in (409, 412)


def _missing(e: BaseException) -> bool:
    """True if ``e`` says the object is not there (HTTP 404)."""
    code, status = _code(e)
    return code in ("NoSuchKey", "NotFound", "404") or status == 404


def _why(e: BaseException) -> str:
    """The first line of what went wrong (the service's own message for an error it answered)."""
    response = getattr(e, "response", None)
    text = str(((response or {}).get("Error") or {}).get("Message") or "") if isinstance(response, dict) else ""
    text = (text or str(e)).strip()
    return text.splitlines()[0] if text else type(e).__name__


#: connections the S3 client keeps open: a controller's many jobs (a lease renewal every 1.5 s,
#: appends, reads) rarely have more requests in flight at once; beyond it a connection is opened
#: for one request and closed
POOL = 50
#: one S3 client per process (made on the first request; botocore's clients are thread-safe), by
#: the ``AWS_*`` environment it was made under
_clients: dict[tuple[tuple[str, str], ...], Any] = {}
_clients_lock = threading.Lock()


def _client() -> Any:
    """This process's S3 client (endpoint, region and credentials from the ``AWS_*`` environment
    and profile, as every AWS tool reads them). Timeouts and retries as s3fs's were: a black-holed
    endpoint fails a request within seconds rather than minutes."""
    env = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("AWS_")))
    with _clients_lock:
        client = _clients.get(env)
        if client is None:
            from botocore.config import Config  # botocore's session, not boto3's on top of it: 3 MB less

            config = Config(
                connect_timeout=5,
                read_timeout=15,
                retries={"max_attempts": 5, "mode": "standard"},
                max_pool_connections=POOL,
            )
            client = _clients[env] = s3_session().create_client("s3", config=config)
        return client


#: the services whose entries a bucket journal's botocore session keeps of botocore's
#: ``endpoints.json``: S3, and those its credential providers make clients of (assumed roles,
#: SSO, ``aws login``)
ENDPOINT_SERVICES = frozenset({"s3", "sts", "sso", "sso-oidc", "signin"})
#: the S3 operations a bucket journal's client keeps of S3's service model: those
#: :class:`ObjectStore` calls, and those botocore's S3 handlers call themselves (``HeadBucket`` to
#: find a bucket's region after a redirect, ``CreateSession`` for a directory bucket)
S3_OPERATIONS = frozenset(
    {"GetObject", "PutObject", "HeadObject", "ListObjectsV2", "DeleteObjects", "HeadBucket", "CreateSession"}
)


def _no_documentation(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object of a service model with its ``documentation`` text blank (botocore's
    ``help()`` text; the key stays, some of botocore's code reads it)."""
    return {k: "" if k == "documentation" else v for k, v in pairs}


def _shape_refs(node: Any) -> Iterator[str]:
    """The names of the shapes a part of a service model refers to (``{"shape": NAME}``)."""
    if isinstance(node, dict):
        ref = node.get("shape")
        if isinstance(ref, str):
            yield ref
        for value in node.values():
            yield from _shape_refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _shape_refs(value)


def _s3_operations_only(model: dict[str, Any]) -> dict[str, Any]:
    """S3's service model with only :data:`S3_OPERATIONS` and the shapes they reach."""
    operations = {k: v for k, v in (model.get("operations") or {}).items() if k in S3_OPERATIONS}
    shapes = model.get("shapes") or {}
    kept: set[str] = set()
    todo = list(_shape_refs(operations))
    while todo:
        name = todo.pop()
        if name not in kept and name in shapes:
            kept.add(name)
            todo.extend(_shape_refs(shapes[name]))
    return {**model, "operations": operations, "shapes": {k: v for k, v in shapes.items() if k in kept}}


class _JournalData:
    """botocore's file loader, less what a bucket journal's S3 client never uses (a controller's
    memory, issue 28):

    * ``endpoints.json`` (every AWS service's endpoints in every partition, 7 MB once parsed)
      keeps only the entries of :data:`ENDPOINT_SERVICES`. The file is still botocore's own, so
      botocore uses it as its built-in data and resolves those services' endpoints (and sign
      regions) exactly as with all of it;
    * S3's ``service-2`` model (3.4 MB once parsed) keeps only :data:`S3_OPERATIONS` and their
      shapes, and is parsed without its documentation (0.2 MB). Those operations' requests are
      built, signed and parsed from the same definitions as with all of it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def exists(self, path: str) -> bool:
        return bool(self.inner.exists(path))

    def load_file(self, path: str) -> Any:
        parts = path.replace(os.sep, "/").rsplit("/", 3)
        if parts[-1] == "service-2" and parts[-3:-2] == ["s3"]:
            model = _load_json(path, _no_documentation)
            if isinstance(model, dict):
                return _s3_operations_only(model)
        data = self.inner.load_file(path)
        if parts[-1] == "endpoints" and isinstance(data, dict):
            for partition in data.get("partitions") or []:
                services = partition.get("services") or {}
                partition["services"] = {k: v for k, v in services.items() if k in ENDPOINT_SERVICES}
        return data


def _load_json(path: str, hook: Callable[[list[tuple[str, Any]]], Any]) -> Any:
    """What botocore's file loader reads at ``path`` (``PATH.json`` or ``PATH.json.gz``, None if
    neither is there), its objects made by ``hook``."""
    import gzip

    for ext, opener in ((".json", open), (".json.gz", gzip.open)):
        if os.path.isfile(path + ext):
            with opener(path + ext, "rb") as f:
                return json.loads(f.read().decode("utf-8"), object_pairs_hook=hook)
    return None


def s3_session() -> Any:
    """A botocore session of its own for the S3 client (see :class:`_JournalData`)."""
    import botocore.session

    session = botocore.session.get_session()
    loader = session.get_component("data_loader")
    loader.file_loader = _JournalData(loader.file_loader)
    return session


class ObjectStore:
    """Conditional reads and writes of objects under one ``s3://BUCKET/PREFIX`` URL, through
    botocore's S3 client (made once per process, on the first request).

    Raises:
        ImportError: botocore (boto3) is not installed (one line)
    """

    def __init__(self, url: str) -> None:
        try:
            import botocore.session  # noqa: F401  (checked here; the client is made on the first request)
        except ImportError:
            raise ImportError(f"journal={url} needs boto3: pip install 'torchx-managed[s3]'") from None
        self.url = url.rstrip("/")

    @staticmethod
    def _key(url: str) -> tuple[str, str]:
        """``(bucket, key)`` of an ``s3://BUCKET/KEY`` URL."""
        bucket, _, key = url.split("://", 1)[-1].partition("/")
        return bucket, key

    def get(self, url: str) -> tuple[bytes, str] | None:
        """The object's bytes and ETag (None: there is none), read in one request: a write after
        it makes a later ``If-Match`` on that ETag fail, never succeed on bytes not read."""
        bucket, key = self._key(url)
        try:
            out = _client().get_object(Bucket=bucket, Key=key)
        except Exception as e:
            if _missing(e):
                return None
            raise
        with out["Body"] as body:
            return bytes(body.read()), str(out.get("ETag", ""))

    def _put(self, url: str, data: bytes, **condition: str) -> str:
        bucket, key = self._key(url)
        return str(_client().put_object(Bucket=bucket, Key=key, Body=data, **condition).get("ETag", ""))

    def create(self, url: str, data: bytes) -> str | None:
        """Writes the object only if none exists; its ETag, or None if one existed (``data``
        must be unique to this write: see :meth:`_landed`)."""
        try:
            return self._put(url, data, IfNoneMatch="*")
        except Exception as e:
            if _conflict(e):
                return self._landed(url, data)
            raise

    def replace(self, url: str, data: bytes, etag: str) -> str | None:
        """Writes the object only if its ETag is still ``etag``; the new ETag, or None if it
        changed (``data`` must be unique to this write: see :meth:`_landed`)."""
        try:
            return self._put(url, data, IfMatch=etag)
        except Exception as e:
            if _conflict(e):
                return self._landed(url, data)
            if _missing(e):
                return None
            raise

    def _landed(self, url: str, data: bytes) -> str | None:
        """After a failed precondition: the object's ETag if it holds ``data`` (botocore sent the
        write again after its reply was lost, and the first one was stored), else None (another
        writer's). Without this a stored append was written again at the next number, and a
        stored lease renewal read as a lost lease."""
        current = self.get(url)
        return current[1] if current is not None and current[0] == data else None

    def put(self, url: str, data: bytes) -> None:
        """Writes the object whatever is there."""
        self._put(url, data)

    def modified(self, url: str) -> str | None:
        """When the object was last written (None: there is none)."""
        bucket, key = self._key(url)
        try:
            return str(_client().head_object(Bucket=bucket, Key=key).get("LastModified"))
        except Exception as e:
            if _missing(e):
                return None
            raise

    def _list(self, url: str, delimiter: str) -> Iterator[dict[str, Any]]:
        """The pages of a listing of everything whose key starts with ``url``'s key plus ``/``."""
        bucket, key = self._key(url)
        pages = _client().get_paginator("list_objects_v2")
        yield from pages.paginate(Bucket=bucket, Prefix=f"{key}/" if key else "", Delimiter=delimiter)

    def names(self, url: str) -> list[str]:
        """The names directly under ``url`` (none if there is nothing)."""
        found: set[str] = set()
        for page in self._list(url, "/"):
            found.update(str(p["Prefix"]) for p in page.get("CommonPrefixes") or ())
            found.update(str(o["Key"]) for o in page.get("Contents") or ())
        return sorted(k.rstrip("/").rsplit("/", 1)[-1] for k in found if k.rstrip("/"))

    def cat(self, urls: list[str]) -> dict[str, bytes]:
        """The bytes of several objects, read concurrently (a missing one left out)."""
        if len(urls) <= 1:
            got = [(u, self.get(u)) for u in urls]
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(min(8, len(urls))) as pool:
                got = list(zip(urls, pool.map(self.get, urls), strict=True))
        return {u: g[0] for u, g in got if g is not None}

    def remove(self, url: str) -> None:
        """Removes the object ``url`` and everything under it."""
        bucket, key = self._key(url)
        keys = [key] if key else []
        for page in self._list(url, ""):
            keys.extend(str(o["Key"]) for o in page.get("Contents") or ())
        for i in range(0, len(keys), 1000):  # DeleteObjects takes at most 1000 keys
            batch = [{"Key": k} for k in keys[i : i + 1000]]
            _client().delete_objects(Bucket=bucket, Delete={"Objects": batch, "Quiet": True})


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
        if not store._key(url)[0]:
            raise OSError("it names no bucket")
        if store.create(probe, b"probe") is None:
            raise OSError("a new object read as existing (its conditional writes are not honoured)")
        store.remove(probe)
    except Exception as e:
        raise ValueError(f"journal={url}: cannot write there: {_why(e)}") from None
    return store.url


def _hostname() -> str:
    import socket  # here: only a URL journal needs it

    return socket.gethostname()


def _identity() -> str:
    import uuid

    return f"{_hostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class ObjectLease(RenewedLease):
    """One holder's hold on a lease object (``driver.lease`` of a job, ``controller.lease`` of a
    journal; rules in the module docstring and :mod:`torchx_managed.renewal`).

    Args:
        store: the bucket
        url: the lease object
        identity: who holds it (unique per holder)
        pid: the pid its record names for this machine's ``torchx cancel`` to signal (None: a
            controller's thread holds it; nothing is signalled)
    """

    def __init__(self, store: ObjectStore, url: str, identity: str, pid: int | None = None) -> None:
        super().__init__(url, identity, LEASE_DURATION, RENEW_EVERY, RENEW_DEADLINE)
        self.store, self.url, self.pid = store, url, pid
        self._etag = ""  # of the record this holder last wrote

    def _record(self, holder: str) -> bytes:
        pid = self.pid if holder else None
        return json.dumps({"holder": holder, "pid": pid, "host": _hostname(), "t": time.time()}).encode()

    def _read(self) -> tuple[str, str, float] | None:
        current = self.store.get(self.url)
        if current is None:
            return None
        data, etag = current
        try:
            holder = str(json.loads(data).get("holder") or "")
        except (ValueError, AttributeError):
            holder = "?"
        return etag, holder, LEASE_DURATION

    def _wrote(self, etag: str | None) -> bool:
        if etag is None:  # another write won the race
            return False
        self._etag = etag
        return True

    def _create(self) -> bool:
        return self._wrote(self.store.create(self.url, self._record(self.identity)))

    def _replace(self, version: str) -> bool:
        return self._wrote(self.store.replace(self.url, self._record(self.identity), version))

    def _give_back(self) -> None:
        self.store.replace(self.url, self._record(""), self._etag)


def _exit_lost() -> None:
    """A driver process whose lease is lost ends at once (exit code 3), before anything else of it runs on."""
    logging.shutdown()
    os._exit(3)


#: when each job's spec was written, by journal root (a job's spec is written once: its time is
#: asked once per process)
_spec_times: dict[str, dict[str, str]] = {}
_spec_times_lock = threading.Lock()


class UrlStore(DurableStore):
    """The jobs kept under a URL ``root`` (see the module docstring): core's store interface on
    objects. Each driver's ``driver.log`` stays on the machine that runs it, under
    ``$TORCHX_MANAGED_STATE_DIR/url-logs/``.

    Raises:
        ImportError: botocore (boto3) is not installed (one line)
    """

    #: a driver started again may first wait for a dead driver's lease to expire
    driver_start_timeout = DRIVER_START_TIMEOUT + LEASE_DURATION

    def __init__(self, root: str, kind: str = "job") -> None:
        self.root, self.kind = root.rstrip("/"), kind
        self.objects = ObjectStore(self.root)
        self._leases: dict[str, ObjectLease] = {}  # job id -> the lease this process holds
        self._held: dict[int, str] = {}  # a lock descriptor handed out -> its job id
        self._contenders: dict[str, ObjectLease] = {}  # job id -> a lease refused here, timing its record
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
            # a nonce: two appends of the same events by one writer are still two writes
            envelope = {"w": writer, "n": os.urandom(8).hex(), "evs": list(events)}
            data = json.dumps(envelope, separators=(",", ":")).encode()
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
        """Every stored job (with a spec), oldest first: one LIST, and one HEAD per job this
        process has not seen with a spec yet (a controller's scan every second used to HEAD
        every job's spec, 100 requests a second for 100 jobs)."""
        names = [n for n in self.objects.names(self.root) if not n.startswith(".")]
        with _spec_times_lock:
            known = dict(_spec_times.get(self.root) or {})
        for name in names:
            if name not in known:
                modified = self.objects.modified(f"{self.root}/{name}/{SPEC}")
                if modified is not None:
                    known[name] = modified
        listed = set(names)
        known = {n: t for n, t in known.items() if n in listed}  # a deleted job is gone from the listing
        with _spec_times_lock:
            _spec_times[self.root] = known
        return [n for _, n in sorted((t, n) for n, t in known.items())]

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

    def _take(self, job_id: str, pid: int | None, on_lost: Callable[[], None]) -> bool:
        """Takes the job's lease once (no wait) and keeps it renewed; False if held elsewhere. A
        refused contender is kept for the next try, which so times the same record: a dead
        holder's lease is taken once it stayed unchanged for :data:`LEASE_DURATION`."""
        url = f"{self.job_dir(job_id)}/{LEASE}"
        lease = self._contenders.pop(job_id, None) or ObjectLease(self.objects, url, _identity(), pid)
        if not lease.try_acquire():
            self._contenders[job_id] = lease
            return False
        self._leases[job_id] = lease
        lease.keep(on_lost)
        return True

    def take_driver_lock(self, job_id: str, own: bool = True) -> int | None:
        """Takes the job's lease once (no wait; renewed until let go); a descriptor standing for
        it, or None if held elsewhere. ``own=False``: the lease names no pid (nobody signals this
        process for the job's driver). :meth:`spawn` with that descriptor gives the lease back
        just before the driver starts, which then takes it at once; so does
        :meth:`release_handed`. A lost lease makes this process's appends fail (:class:`FencedError`)."""
        if not self._take(job_id, os.getpid() if own else None, lambda: None):
            return None
        fd = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        self._held[fd] = job_id
        return fd

    def hold(self, job_id: str, on_lost: Callable[[], None]) -> bool:
        """For a controller's thread that drives the job: takes its lease once (no wait; see
        :meth:`_take`) naming no pid, renewed until :meth:`let_go`; ``on_lost`` is called (from the
        renewing thread) if it is lost, after which the job's appends by this process fail."""
        return self._take(job_id, None, on_lost)

    def let_go(self, job_id: str) -> None:
        """Gives back the lease :meth:`hold` took (a contender takes it at once)."""
        lease = self._leases.pop(job_id, None)
        if lease is not None:
            lease.release()

    @contextmanager
    def driver_lock(self, job_id: str, fd: int | None = None) -> Iterator[bool]:
        """Holds the job's lease (renewed in a thread) while the block runs; yields False if a
        live driver holds it. ``fd`` (a lock handed over by :meth:`spawn`) needs nothing: the
        lease was given back for this process to take."""
        if self.objects.get(f"{self.job_dir(job_id)}/{SPEC}") is None:
            raise self._unknown(f"unknown {self.kind} {job_id!r}")
        lease = ObjectLease(self.objects, f"{self.job_dir(job_id)}/{LEASE}", _identity(), os.getpid())
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

        lease.keep(_exit_lost, look)
        try:
            yield True
        finally:
            self._leases.pop(job_id, None)
            lease.release()

    def release_handed(self, lock_fd: int | None) -> None:
        """Gives back the lease :meth:`take_driver_lock` took with ``lock_fd`` (if this store did)."""
        job_id = self._held.pop(lock_fd, None) if lock_fd is not None else None
        if job_id is not None:
            self.let_go(job_id)

    def spawn(self, job_id: str, argv: Any, cwd: str | None = None, lock_fd: int | None = None) -> int:
        """Starts the job's detached driver on this machine (see :meth:`DurableStore.spawn`): the
        lease taken with ``lock_fd`` is given back first, for the driver to take."""
        self.release_handed(lock_fd)
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

    def release_driver_lock(self, lock_fd: int) -> None:
        """Lets go of a lock :meth:`take_driver_lock` returned (a URL job's lease given back, if
        :meth:`spawn` did not hand it over)."""
        for store in self._url_stores.values():
            store.release_handed(lock_fd)
        os.close(lock_fd)

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
