"""What the dashboard shows, read through the Runner API: job lists, job details, logs, cancel, delete.

Nothing here knows a backend: every answer comes from :class:`torchx.runner.Runner` and the
scheduler's declared capabilities. Errors a user can fix are :class:`BadRequest` (HTTP 400) and
:class:`NotFound` (HTTP 404); one scheduler that cannot answer a listing is reported beside the
jobs of the others.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any

from torchx.runner import Runner
from torchx.specs import AppState, Role
from torchx.specs.handles import MalformedAppHandleException, UnknownAppException, parse_app_handle
from torchx.util.record import deep_copy

#: how long one scheduler may take to list its jobs before the listing reports it as an error
LIST_TIMEOUT = 30.0
SORT_KEYS = ("handle", "scheduler", "name", "state", "submitted")
#: the times a job in the listing carries (seconds since the epoch; null where its scheduler does not say)
TIME_KEYS = ("submitted", "started", "ended")
MAX_LIMIT = 1000


@dataclass
class Group:
    """A row of the job list no scheduler lists (a sweep), with the listed jobs nested under it.

    Attributes:
        job: its row (``handle, scheduler, app_id, name, kind, submitted``); state and the other
            times come from its members
        members: the handles of the jobs nested under it
        state: its state from its listed members' states (handle -> state name)
    """

    job: dict[str, Any]
    members: list[str]
    state: Callable[[Mapping[str, str]], str]


class BadRequest(ValueError):
    """The request is malformed (HTTP 400); the message says what to change."""


class NotFound(LookupError):
    """No such job, scheduler or sweep (HTTP 404)."""


class Forbidden(PermissionError):
    """The dashboard refuses this (read-only mode, HTTP 403)."""


@dataclass
class ListQuery:
    """Filters, order and page of ``GET /api/jobs``."""

    scheduler: str | None = None
    state: str | None = None
    q: str = ""
    sort: str | None = None
    descending: bool = False
    offset: int = 0
    limit: int = 100

    @staticmethod
    def parse(params: Mapping[str, str]) -> ListQuery:
        """From query parameters ``scheduler, state, q, sort (name|-name ...), offset, limit``.

        Raises:
            BadRequest: a parameter has a wrong value
        """
        query = ListQuery(scheduler=params.get("scheduler") or None, q=params.get("q", "").strip())
        state = params.get("state") or None
        if state is not None:
            state = state.upper()
            if state not in AppState.__members__:
                raise BadRequest(f"unknown state {state!r}: use one of {', '.join(AppState.__members__)}")
        query.state = state
        sort = params.get("sort") or None
        if sort is not None:
            query.descending = sort.startswith("-")
            query.sort = sort.lstrip("-")
            if query.sort not in SORT_KEYS:
                raise BadRequest(f"cannot sort by {query.sort!r}: use one of {', '.join(SORT_KEYS)} (- for descending)")
        query.offset = _int_param(params, "offset", 0, 0, None)
        query.limit = _int_param(params, "limit", 100, 1, MAX_LIMIT)
        return query


def _int_param(params: Mapping[str, str], name: str, default: int, low: int, high: int | None) -> int:
    raw = params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f"{name} must be an integer (got {raw!r})") from None
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise BadRequest(f"{name} must be {bound} (got {value})")
    return value


@dataclass
class JobList:
    """One page of jobs, how many matched, and the schedulers that could not list."""

    jobs: list[dict[str, Any]]
    total: int
    offset: int
    limit: int
    schedulers: list[str]
    errors: list[dict[str, str]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """The ``GET /api/jobs`` answer."""
        return {
            "jobs": self.jobs,
            "total": self.total,
            "offset": self.offset,
            "limit": self.limit,
            "schedulers": self.schedulers,
            "errors": self.errors,
        }


def _error_text(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0] if len(text) > 2000 else text


class JobService:
    """The dashboard's view of the jobs of ``runner``'s schedulers.

    Args:
        runner: the runner every call goes through (shared; schedulers are thread-safe enough
            for concurrent reads, as the CLI's parallel log threads already rely on)
        schedulers: the schedulers to list (None: every installed one that can list)
        read_only: refuse cancel and delete
    """

    def __init__(self, runner: Runner, schedulers: Sequence[str] | None = None, read_only: bool = False) -> None:
        self.runner = runner
        self.read_only = read_only
        installed = runner.scheduler_backends()
        if schedulers:
            unknown = [s for s in schedulers if s not in installed]
            if unknown:
                raise BadRequest(
                    f"unknown scheduler(s) {', '.join(unknown)}: installed are {', '.join(installed) or 'none'}"
                )
        self._explicit = list(schedulers) if schedulers else None
        self._installed = installed
        self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="torchx-dashboard-list")
        self._trackers: list[Any] | None = None
        self._lock = threading.Lock()
        #: one lock per scheduler: the runner creates each once, and a slow one blocks no other
        self._creating = {name: threading.Lock() for name in installed}

    def warm_up(self) -> None:
        """Creates the shown schedulers (plugin discovery, imports) so the first page does not pay
        for it (the server runs this in a thread at start-up); one that cannot be created is reported
        when the jobs are listed."""
        for name in self.schedulers:
            try:
                self._capabilities(name)
            except Exception:
                continue

    def close(self) -> None:
        """Stops the listing threads and closes the runner's schedulers."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.runner.close()

    # ------------------------------------------------------------------ schedulers
    @property
    def schedulers(self) -> list[str]:
        """The schedulers this dashboard shows (``-s``, else every installed one)."""
        return list(self._explicit or self._installed)

    def _check_scheduler(self, name: str) -> None:
        if name not in self.schedulers:
            raise NotFound(f"scheduler {name!r} is not shown here (shown: {', '.join(self.schedulers)})")

    def _capabilities(self, name: str) -> Any:
        with self._creating.get(name, self._lock):
            return self.runner.get_scheduler(name).capabilities

    # ------------------------------------------------------------------ listing
    def _list_one(self, name: str, explicit: bool) -> list[dict[str, Any]] | None:
        """The jobs of one scheduler; None for one that cannot list and was not asked for by name.

        Raises:
            UnsupportedFeatureError: it cannot list, and was asked for by name
        """
        from torchx.schedulers.capabilities import UnsupportedFeatureError

        if not self._capabilities(name).list:
            if explicit:
                raise UnsupportedFeatureError(f"scheduler {name!r} cannot list its jobs")
            return None
        return [
            {
                "handle": app.app_handle,
                "scheduler": name,
                "app_id": app.app_id,
                "name": app.name,
                "state": app.state.name,
                **{key: getattr(app, key, None) for key in TIME_KEYS},
            }
            for app in self.runner.list(name)
        ]

    def list_jobs(self, query: ListQuery, groups: Sequence[Group] = ()) -> JobList:
        """The page of jobs ``query`` asks for; a scheduler that fails is reported, the others still list.

        A managed job's attempts (named ``{its id}-{n}``) are nested in its ``children``, and so
        are the members of each of ``groups`` (a sweep's trials) listed by a scheduler shown;
        filters and order apply to the top rows (one matches when it or a nested job does).

        Raises:
            BadRequest: ``query.scheduler`` is not one of :attr:`schedulers`
        """
        names = self.schedulers
        if query.scheduler is not None:
            if query.scheduler not in names:
                raise BadRequest(f"unknown scheduler {query.scheduler!r}: use one of {', '.join(names)}")
            names = [query.scheduler]
        explicit = self._explicit is not None or query.scheduler is not None
        futures = {name: self._pool.submit(self._list_one, name, explicit) for name in names}
        deadline = time.monotonic() + LIST_TIMEOUT  # one deadline for all: they list side by side
        errors: list[dict[str, str]] = []
        listed: list[str] = []
        jobs: list[dict[str, Any]] = []
        for name, future in futures.items():
            try:
                found = future.result(timeout=max(0.0, deadline - time.monotonic()))
            except FutureTimeout:
                errors.append({"scheduler": name, "error": f"no answer within {LIST_TIMEOUT:g} s"})
                continue
            except Exception as e:
                errors.append({"scheduler": name, "error": _error_text(e)})
                continue
            if found is not None:
                listed.append(name)
                jobs.extend(found)
        jobs = [j for j in _nest(jobs, [g for g in groups if g.job["scheduler"] in listed]) if _matches(j, query)]
        if query.sort in TIME_KEYS:
            key = query.sort
            known = sorted((j for j in jobs if j[key] is not None), key=lambda j: (j[key], j["handle"]))
            unknown = sorted((j for j in jobs if j[key] is None), key=lambda j: j["handle"])
            jobs = (known[::-1] if query.descending else known) + unknown  # unknown times last either way
        elif query.sort is not None:
            key = query.sort
            jobs.sort(key=lambda j: (str(j[key]).lower(), j["handle"]), reverse=query.descending)
        page = jobs[query.offset : query.offset + query.limit]
        return JobList(page, len(jobs), query.offset, query.limit, listed, errors)

    # ------------------------------------------------------------------ one job
    def parse_handle(self, handle: str) -> str:
        """The scheduler of ``handle``.

        Raises:
            BadRequest: not ``{scheduler}://{session}/{app_id}``
            NotFound: its scheduler is not shown here
        """
        try:
            parsed = parse_app_handle(handle)
        except MalformedAppHandleException:
            raise BadRequest(
                f"malformed app handle {handle!r}: expected {{scheduler}}://{{session}}/{{app_id}}"
            ) from None
        self._check_scheduler(parsed.scheduler_backend)
        return parsed.scheduler_backend

    def job(self, handle: str, with_request: bool = True) -> dict[str, Any]:
        """Status and description of one job: roles with their replicas' states, the request (unless
        ``with_request`` is False: a refresh), tracker records and (with ``torchx-managed``) its attempts.

        Raises:
            BadRequest: malformed handle
            NotFound: unknown job
        """
        scheduler = self.parse_handle(handle)
        desc = self.runner.describe_app(handle)
        if desc is None:
            raise NotFound(f"unknown job {handle}")
        caps = self._capabilities(scheduler)
        statuses = {rs.role: rs.replicas for rs in desc.roles_statuses}
        roles = [_role_json(r, statuses.get(r.name, [])) for r in desc.roles]
        known = {r.name for r in desc.roles}
        for name, replicas in statuses.items():  # a scheduler that reports states but not roles
            if name not in known:
                roles.append({"name": name, "replicas": [_replica_json(x) for x in replicas]})
        metadata = dict(desc.metadata)
        attempts = metadata.pop("attempts", None)
        request, request_error = self._request(handle, scheduler, desc.metadata) if with_request else (None, None)
        return {
            "handle": handle,
            "scheduler": scheduler,
            "app_id": desc.app_id,
            "state": desc.state.name,
            "msg": "" if desc.msg == "<NONE>" else desc.msg,
            "structured_error_msg": "" if desc.structured_error_msg == "<NONE>" else desc.structured_error_msg,
            "num_restarts": max(desc.num_restarts, 0),
            "ui_url": desc.ui_url,
            "metadata": metadata,
            "roles": roles,
            "attempts": attempts if isinstance(attempts, list) else None,
            "request": request,
            "request_error": request_error,
            "tracker": self._tracker(handle),
            "can_cancel": bool(caps.cancel) and not self.read_only,
            "can_delete": bool(caps.delete) and not self.read_only,
            "logs": bool(caps.logs),
            "log_tail": bool(caps.log_tail),
            "log_since": bool(caps.log_since_until),
        }

    def _request(self, handle: str, scheduler: str, metadata: Mapping[str, Any]) -> tuple[str | None, str | None]:
        """The request the job's roles make on its scheduler: a dry run of the described app; where
        that needs run options, with those the job's description reports (a managed job's
        ``targets``, without which its scheduler cannot build a request)."""
        try:
            described = self.runner.describe(handle)
            if described is None or not described.roles:
                return None, "the scheduler does not describe this job's roles"
            app = deep_copy(described)  # Runner.dryrun writes into its app (as TorchX): not the runner's record
            try:
                return str(self.runner.dryrun(app, scheduler)), None
            except Exception:
                opts = self.runner.scheduler_run_opts(scheduler)
                cfg = {key: value for key, value in metadata.items() if key in opts and value is not None}
                if not cfg:
                    raise
                return str(self.runner.dryrun(app, scheduler, cfg)), None
        except Exception as e:
            return None, _error_text(e)

    def _tracker(self, handle: str) -> dict[str, Any] | None:
        """Metadata and artifacts the configured trackers hold for the job's run (its handle)."""
        trackers = self.trackers()
        if not trackers:
            return None
        metadata: dict[str, Any] = {}
        artifacts: list[dict[str, Any]] = []
        errors = []
        for tracker in trackers:
            try:
                metadata.update(tracker.metadata(handle))
                for name, art in tracker.artifacts(handle).items():
                    artifacts.append({"name": name, "path": art.path, "metadata": dict(art.metadata or {})})
            except Exception as e:
                errors.append(_error_text(e))
        return {"metadata": metadata, "artifacts": artifacts, "errors": errors}

    def trackers(self) -> list[Any]:
        """The tracker backends ``.torchxconfig`` (or the environment) configures, built once."""
        with self._lock:
            if self._trackers is None:
                from torchx.runner.api import configured_trackers
                from torchx.tracker.api import build_trackers

                self._trackers = list(build_trackers(configured_trackers()))
            return self._trackers

    # ------------------------------------------------------------------ actions
    def cancel(self, handle: str) -> dict[str, Any]:
        """Cancels the job; returns its state after.

        Raises:
            Forbidden: read-only mode
            NotFound: unknown job
        """
        self._writable("cancel")
        self.parse_handle(handle)
        if self.runner.status(handle) is None:
            raise NotFound(f"unknown job {handle}")
        self.runner.cancel(handle)
        status = self.runner.status(handle)
        return {"handle": handle, "state": status.state.name if status else "UNKNOWN"}

    def delete(self, handle: str) -> dict[str, Any]:
        """Stops the job and removes it from its scheduler.

        Raises:
            Forbidden: read-only mode
            NotFound: unknown job
        """
        self._writable("delete")
        self.parse_handle(handle)
        if self.runner.status(handle) is None:
            raise NotFound(f"unknown job {handle}")
        self.runner.delete(handle)
        return {"handle": handle, "deleted": True}

    def _writable(self, what: str) -> None:
        if self.read_only:
            raise Forbidden(f"the dashboard is read-only (--read-only): it does not {what} jobs")

    # ------------------------------------------------------------------ logs
    def log_lines(
        self,
        handle: str,
        params: Mapping[str, str],
        follow: bool,
    ) -> Iterator[str]:
        """Lines of one replica's log; ``params``: ``role`` (default: the first), ``replica`` (0),
        ``regex``, ``since`` (ISO time, unix time or 10m/2h ago).

        Raises:
            BadRequest: malformed handle or parameter, or the scheduler cannot do what is asked
            NotFound: unknown job or role
        """
        from torchx.cli.output import parse_time
        from torchx.schedulers.capabilities import UnsupportedFeatureError

        self.parse_handle(handle)
        regex = params.get("regex") or None
        if regex is not None:
            try:
                re.compile(regex)
            except re.error as e:
                raise BadRequest(f"invalid regex {regex!r}: {e}") from None
        since = None
        if params.get("since"):
            try:
                since = parse_time(params["since"])
            except ValueError as e:
                raise BadRequest(str(e)) from None
        replica = _int_param(params, "replica", 0, 0, None)
        desc = self.runner.describe_app(handle)
        if desc is None:
            raise NotFound(f"unknown job {handle}")
        names = [r.name for r in desc.roles] or [rs.role for rs in desc.roles_statuses]
        role = params.get("role") or (names[0] if names else "")
        if role not in names:
            raise NotFound(f"job {handle} has no role {role!r} (it has: {', '.join(names) or 'none'})")
        try:
            return iter(self.runner.log_lines(handle, role, replica, regex, since, should_tail=follow))
        except UnsupportedFeatureError as e:
            raise BadRequest(str(e)) from None
        except UnknownAppException:
            raise NotFound(f"unknown job {handle}") from None

    def end_state(self, handle: str, timeout: float = 10) -> str:
        """The job's state once its log ended: its final state, waited for up to ``timeout`` s
        (a replica's output closes a moment before its scheduler records the end); ``UNKNOWN``
        if the scheduler forgot the job."""
        status = self.runner.wait(handle, wait_interval=0.2, timeout=timeout)
        return status.state.name if status else "UNKNOWN"


def _nest(jobs: list[dict[str, Any]], groups: Sequence[Group]) -> list[dict[str, Any]]:
    """The top rows: managed jobs with their attempts, groups with their members, the other jobs."""
    nested: set[str] = set()
    for job in jobs:
        job["children"] = []
    for job in jobs:
        if job["scheduler"] != "managed":
            continue
        attempt = re.compile(re.escape(str(job["app_id"])) + r"-(\d+)")
        found = {}
        for other in jobs:
            match = attempt.fullmatch(str(other["name"] or "")) if other["scheduler"] != "managed" else None
            if match:
                found[other["handle"]] = (int(match.group(1)), other)
        job["children"] = [j for _, j in sorted(found.values(), key=lambda nj: (nj[0], nj[1]["handle"]))]
        nested.update(found)
        _times_from(job, job["children"])
    by_handle = {j["handle"]: j for j in jobs}
    rows = []
    for group in groups:
        members = [by_handle[h] for h in group.members if h in by_handle]  # in the group's order
        nested.update(j["handle"] for j in members)
        row = {**group.job, "state": group.state({j["handle"]: j["state"] for j in members}), "children": members}
        rows.append(_times_from(row, members))
    return rows + [j for j in jobs if j["handle"] not in nested]


def _times_from(row: dict[str, Any], members: list[dict[str, Any]]) -> dict[str, Any]:
    """Fills the times ``row`` lacks from its nested jobs: the first submitted and started, and
    (once ``row`` is final) the last ended."""
    for key, pick in (("submitted", min), ("started", min), ("ended", max)):
        known = [j[key] for j in members if j.get(key) is not None]
        if row.get(key) is None:
            row[key] = pick(known) if known else None
    if AppState[row["state"]] not in (AppState.SUCCEEDED, AppState.FAILED, AppState.CANCELLED):
        row["ended"] = None
    return row


def _matches(job: Mapping[str, Any], query: ListQuery) -> bool:
    if any(_matches(child, query) for child in job.get("children", ())):
        return True
    if query.state is not None and job["state"] != query.state:
        return False
    if query.q:
        text = query.q.lower()
        return text in str(job["handle"]).lower() or text in str(job["name"]).lower()
    return True


def _replica_json(replica: Any) -> dict[str, Any]:
    error = replica.structured_error_msg
    return {
        "id": replica.id,
        "state": replica.state.name,
        "hostname": replica.hostname,
        "error": "" if error == "<NONE>" else error,
    }


def _role_json(role: Role, replicas: Sequence[Any]) -> dict[str, Any]:
    res = role.resource
    return {
        "name": role.name,
        "image": role.image,
        "entrypoint": role.entrypoint,
        "args": list(role.args),
        "num_replicas": role.num_replicas,
        "resource": {"cpu": res.cpu, "gpu": res.gpu, "memMB": res.memMB},
        "replicas": [_replica_json(x) for x in replicas],
    }
