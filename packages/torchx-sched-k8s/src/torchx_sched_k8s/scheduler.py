"""The ``kubernetes`` and ``kubernetes_mcad`` schedulers.

``kubernetes`` submits a Volcano Job, as TorchX, wherever the cluster serves Volcano's Job CRD
(run option ``mode``, default ``auto``); on a cluster without Volcano, or with ``mode=jobs``, it
submits plain batch/v1 Jobs (Kueue-ready through ``queue``).

Lifecycle in ``jobs`` mode:

* **submit** creates the headless Service, then one Job per replica (a server-side dry run
  of each role's first Job comes first; if a create fails, what was created is removed).
* **retries**: REPLICA-policy roles are retried by the Job controller (``backoffLimit``).
  APPLICATION-policy roles are restarted by torchx: when ``describe`` (``status``,
  ``wait``) finds such a role failed and restarts remain, it deletes every Job of the app
  and creates them again (annotation ``torchx.pytorch.org/restarts`` counts them); the
  deletes are conditional on the Jobs' uids, so concurrent callers restart once. When
  no restart remains, the replicas still running are stopped and the app is FAILED.
* **cancel** annotates every Job ``torchx.pytorch.org/cancelled`` and sets its
  ``parallelism`` to 0: the Job controller kills the pods, the Jobs stay, and
  ``describe`` answers CANCELLED. **delete** removes Jobs, pods and the Service.

Volcano mode and MCAD rely on their controllers for retries; cancel annotates the object
(and asks Volcano to abort the job, or deletes MCAD's pods), delete removes it.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, ClassVar

from torchx.schedulers.api import DescribeAppResponse, ListAppResponse, Scheduler
from torchx.schedulers.capabilities import SchedulerCapabilities
from torchx.schedulers.streams import Stream
from torchx.specs.dryrun import AppDryRunInfo
from torchx.specs.roles import AppDef, RetryPolicy
from torchx.specs.runopts import CfgVal, runopts
from torchx.specs.status import AppState, is_terminal
from torchx.workspace.api import WorkspaceMixin

from torchx_sched_k8s import names, status
from torchx_sched_k8s.errors import KubernetesError
from torchx_sched_k8s.logs import aware, log_lines
from torchx_sched_k8s.opts import MODE_AUTO, MODE_JOBS, MODE_VOLCANO, KubernetesOpts, MCADOpts
from torchx_sched_k8s.pods import PodSpecError
from torchx_sched_k8s.request import (
    BUILDERS,
    KIND_JOBS,
    KIND_MCAD,
    KIND_VOLCANO,
    MCAD_GROUP,
    MCAD_PLURAL,
    MCAD_VERSION,
    VOLCANO_GROUP,
    VOLCANO_PLURAL,
    VOLCANO_VERSION,
    Custom,
    KubernetesRequest,
    apply_job_overlay,
    build_mcad,
    mode_from_discovery,
)
from torchx_sched_k8s.workspace import docker_workspace

if TYPE_CHECKING:
    from torchx.schedulers.causes import AttemptEnd
    from torchx.schedulers.recovery import AttemptLog, RecoveryPolicy

    from torchx_sched_k8s.kubeapi import KubeApi

logger: logging.Logger = logging.getLogger(__name__)

VOLCANO: Custom = (VOLCANO_GROUP, VOLCANO_VERSION, VOLCANO_PLURAL)
MCAD: Custom = (MCAD_GROUP, MCAD_VERSION, MCAD_PLURAL)
VOLCANO_COMMAND: Custom = ("bus.volcano.sh", "v1alpha1", "commands")
#: objects created one after another up to this many, in parallel beyond
_PARALLEL_CREATE_MIN = 8
_CREATE_WORKERS = 8
#: how often log_iter looks again for a pod that has not started
_LOG_POLL = 0.5


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _fresh_job(job: dict[str, Any], restarts: int) -> dict[str, Any]:
    """A Job to create again from a server copy: server fields and generated selectors removed."""
    meta = job["metadata"]
    generated = ("controller-uid", "job-name")
    spec = dict(job["spec"])
    spec.pop("selector", None)
    spec.pop("manualSelector", None)
    template = dict(spec["template"])
    tmeta = dict(template.get("metadata") or {})
    tmeta["labels"] = {k: v for k, v in (tmeta.get("labels") or {}).items() if k not in generated}
    template["metadata"] = tmeta
    spec["template"] = template
    annotations = dict(meta.get("annotations") or {})
    annotations[names.ANNOTATION_RESTARTS] = str(restarts)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "labels": {k: v for k, v in (meta.get("labels") or {}).items() if k not in generated},
            "annotations": annotations,
        },
        "spec": spec,
    }


class KubernetesScheduler(Scheduler[Mapping[str, CfgVal], AppDef, KubernetesRequest]):
    """Runs apps on Kubernetes as a Volcano Job (``mode=volcano``) or batch/v1 Jobs (``mode=jobs``);
    ``mode=auto`` (the default) picks Volcano where the cluster has it.

    Args:
        session_name: the session (part of app handles)
        client: a configured ``kubernetes.client.ApiClient`` (TorchX's argument; default: from the kubeconfig)
        api_client: the same, under its earlier name here
        kwargs: other scheduler parameters (ignored)
    """

    capabilities: ClassVar[SchedulerCapabilities] = SchedulerCapabilities(
        log_tail=True,
        log_since_until=True,
        retry_policies=frozenset({RetryPolicy.REPLICA, RetryPolicy.APPLICATION}),
        elastic=True,
        mounts=frozenset({"bind", "volume", "device"}),
        workspace=True,
        recovery=True,
    )
    backend_name: ClassVar[str] = "kubernetes"
    #: the custom resources this scheduler creates
    customs: ClassVar[dict[str, Custom]] = {KIND_VOLCANO: VOLCANO}

    def __init__(self, session_name: str, client: Any = None, api_client: Any = None, **kwargs: Any) -> None:
        super().__init__(self.backend_name, session_name)
        self._api_client = client if client is not None else api_client
        self._kube: KubeApi | None = None
        self._auto_mode: str | None = None

    @property
    def kube(self) -> KubeApi:
        """The API access (the ``kubernetes`` client is imported on first use: dry runs never need it)."""
        if self._kube is None:
            from torchx_sched_k8s.kubeapi import KubeApi

            self._kube = KubeApi(self._api_client)
        return self._kube

    def close(self) -> None:
        """Closes the API client's connections."""
        if self._kube is not None:
            self._kube.close()

    # ------------------------------------------------------------------ submit
    def _run_opts(self) -> runopts:
        return KubernetesOpts.as_runopts()

    def _build(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> KubernetesRequest:
        opts: KubernetesOpts = KubernetesOpts.from_cfg(cfg)
        mode = self.auto_mode() if opts.mode == MODE_AUTO else opts.mode
        builder = BUILDERS.get(mode)
        if builder is None:
            raise ValueError(
                f"run option mode={opts.mode!r} is unknown; use {MODE_VOLCANO}, {MODE_JOBS} or {MODE_AUTO}"
            )
        return builder(app, opts)

    def auto_mode(self) -> str:
        """What ``mode=auto`` means on this scheduler's cluster: ``volcano`` when the API server
        serves Volcano's Job CRD, ``jobs`` when it does not (asked once per scheduler). When the
        cluster cannot be asked (no kubeconfig, unreachable), ``volcano``, TorchX's manifest."""
        if self._auto_mode is None:
            try:
                self._auto_mode = mode_from_discovery(self.kube.discover(VOLCANO_GROUP, VOLCANO_VERSION))
            except KubernetesError as e:
                logger.info("could not ask the cluster whether Volcano is installed (%s); using mode=volcano", e)
                return MODE_VOLCANO
        return self._auto_mode

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[KubernetesRequest]:
        images_to_push = None
        if isinstance(self, WorkspaceMixin):
            try:
                images_to_push = self.dryrun_push_images(app, cfg)
            except NotImplementedError:
                images_to_push = None
        try:
            request = self._build(app, cfg)
        except PodSpecError as e:
            raise ValueError(str(e)) from None
        apply_job_overlay(app, request)
        request.images_to_push = images_to_push
        return AppDryRunInfo(request, KubernetesRequest.to_yaml)

    def submit_recovery_dryrun(
        self, app: AppDef, cfg: Mapping[str, CfgVal], policy: RecoveryPolicy
    ) -> AppDryRunInfo[KubernetesRequest]:
        """One Job that the Job controller runs again until an attempt succeeds or its
        ``backoffLimit`` is used up (see :mod:`torchx_sched_k8s.recovery`; ``podFailurePolicy``
        where the server has it, asked once here)."""
        from torchx_sched_k8s import recovery

        info = self._submit_dryrun(app, cfg)
        ckpt = recovery.check(app, info.request, policy)
        try:
            minor = self.kube.server_minor()
        except KubernetesError as e:
            logger.info("could not ask the cluster for its version (%s); counting every failed pod alike", e)
            minor = None
        request = recovery.compile_request(info.request, policy, ckpt, minor)
        return AppDryRunInfo(request, KubernetesRequest.to_yaml)

    def recovery_attempts(self, app_id: str) -> AttemptLog | None:
        """The attempts of a Job from :meth:`submit_recovery_dryrun`: its pods, each numbered by
        its first log line (None: no such Job, or one that does not recover)."""
        from torchx_sched_k8s import recovery

        try:
            namespace, name = names.parse_app_id(app_id)
        except ValueError:
            return None
        selector = names.app_selector(name)
        jobs = [
            j
            for j in self.kube.list_jobs(namespace, selector)
            if recovery.ANNOTATION_RECOVERY in status.annotations_of(j)
        ]
        if len(jobs) != 1:
            return None
        pods = self.kube.list_pods(namespace, selector)
        numbers = {}
        for pod in pods:
            if recovery.started(pod):
                n = recovery.attempt_number(self._log_head(namespace, pod["metadata"]["name"]))
                if n is not None:
                    numbers[pod["metadata"]["name"]] = n
        return recovery.attempts(jobs[0], pods, numbers)

    def _log_head(self, namespace: str, pod: str) -> str:
        """The first bytes of a pod's log ("" when the kubelet no longer has it)."""
        try:
            response = self.kube.pod_log(namespace, pod, limit_bytes=256)
        except KubernetesError:
            return ""
        try:
            return bytes(response.data).decode("utf-8", "replace")
        finally:
            response.release_conn()

    def schedule(self, dryrun_info: AppDryRunInfo[KubernetesRequest]) -> str:
        """Pushes workspace images, then creates the request's objects; returns ``namespace:name``."""
        request = dryrun_info.request
        if request.images_to_push and isinstance(self, WorkspaceMixin):
            self.push_images(request.images_to_push)
        custom = self.customs.get(request.kind)
        objects = request.submitted_objects()  # what the dry run shows, with the changes made to request.resource
        for i, obj in enumerate(objects):
            if not (obj.get("metadata") or {}).get("name"):
                raise ValueError(
                    f"object {i} of the request ({obj.get('kind') or 'no kind'}) has no metadata.name;"
                    " give the request's resource a name (metadata.name) and submit again"
                )
        # an app of one object (a Volcano Job, an AppWrapper, one Job) is validated by its own
        # creation, which is all or nothing: a dry run would only add a round trip
        if dryrun_info.cfg.get("validate_spec", True) and len(objects) > 1:
            self._validate_objects(request, custom)
        try:
            self._create_all(objects, custom)
        except BaseException:
            try:
                self._purge(request.namespace, request.name, request.kind)
            except Exception as cleanup:  # keep the original error; say what may be left
                logger.warning("could not remove the partly created app %s: %s", request.app_id, cleanup)
            raise
        return request.app_id

    def _validate_objects(self, request: KubernetesRequest, custom: Custom | None) -> None:
        """Server-side dry run of the first object of each shape (the Service, each role's first Job)."""
        seen_roles: set[str] = set()
        for obj in request.objects:
            role = status.annotations_of(obj).get(names.ANNOTATION_ROLE, "")
            if obj["kind"] == "Job" and custom is None and role in seen_roles:
                continue
            seen_roles.add(role)
            self.kube.create(obj, custom, dry_run=True)

    def _create_all(self, objects: list[dict[str, Any]], custom: Custom | None) -> None:
        if len(objects) < _PARALLEL_CREATE_MIN:
            for obj in objects:
                self.kube.create(obj, custom)
            return
        self.kube.create(objects[0], custom)  # the Service first: pods resolve names from the start
        pool = ThreadPoolExecutor(max_workers=_CREATE_WORKERS)
        try:
            futures = [pool.submit(self.kube.create, obj, custom) for obj in objects[1:]]
            for future in as_completed(futures):
                future.result()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)  # after a failure, create nothing more

    # ------------------------------------------------------------------ describe
    def _view(self, namespace: str, name: str) -> tuple[str, status.AppView, dict[str, Any] | None] | None:
        """(kind, view, custom object) of the app, or None if nothing of it exists."""
        selector = names.app_selector(name)
        jobs = self.kube.list_jobs(namespace, selector)
        if jobs:
            view = status.view_jobs(jobs, self.kube.list_pods(namespace, selector))
            return None if view is None else (KIND_JOBS, view, None)
        vcjob = self.kube.get_custom(VOLCANO, namespace, name)
        if vcjob is None or status.labels_of(vcjob).get(names.LABEL_APP_NAME) != name:
            return None
        return KIND_VOLCANO, status.volcano_view(vcjob, self.kube.list_pods(namespace, selector)), vcjob

    def _known(self, app_id: str) -> tuple[str, str, tuple[str, status.AppView, dict[str, Any] | None]] | None:
        """(namespace, name, :meth:`_view`) of the app; None for a malformed id or an unknown app."""
        try:
            namespace, name = names.parse_app_id(app_id)
        except ValueError:
            return None
        found = self._view(namespace, name)
        return None if found is None else (namespace, name, found)

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        """The app's state per role and replica (None if it does not exist).

        In ``jobs`` mode this also restarts an APPLICATION-policy app that failed and
        has restarts left, or stops what still runs of an app that failed for good.
        """
        known = self._known(app_id)
        if known is None:
            return None
        namespace, name, (kind, view, _) = known
        if kind == KIND_JOBS and view.state == AppState.FAILED and not (view.cancelled or view.stopped):
            view = self._after_failure(namespace, name, view)
        return DescribeAppResponse(
            app_id=app_id,
            state=view.state,
            num_restarts=view.num_restarts,
            msg=view.msg,
            roles_statuses=view.roles_statuses(),
            roles=view.role_defs,
        )

    def end_cause(self, app_id: str) -> AttemptEnd | None:
        """Why the app ended, from the last pod of its failed replica and its Job (see
        :mod:`torchx_sched_k8s.causes`); None while it runs, or for an unknown app."""
        from torchx_sched_k8s import causes

        known = self._known(app_id)
        if known is None:
            return None
        namespace, name, (_, view, _) = known
        return causes.app_end(view, self.kube.list_pods(namespace, names.app_selector(name)))

    def _after_failure(self, namespace: str, name: str, view: status.AppView) -> status.AppView:
        """Restarts the app if every failed role allows it, else stops what still runs."""
        infos = {info.name: info for info in view.roles}
        failed = [infos[r] for r in view.failed_roles if r in infos]
        jobs = [r.job for r in view.replicas if r.job is not None]
        restarts = max(int(status.annotations_of(j).get(names.ANNOTATION_RESTARTS, "0") or 0) for j in jobs)
        if (
            failed
            and all(i.retry_policy == RetryPolicy.APPLICATION.value for i in failed)
            and restarts < min(i.max_retries for i in failed)
        ):
            logger.info("%s:%s failed (%s); restart %d", namespace, name, ", ".join(view.failed_roles), restarts + 1)
            self._restart(jobs, restarts + 1)
            found = self._view(namespace, name)
            return found[1] if found is not None else view
        patch = {"metadata": {"annotations": {names.ANNOTATION_STOPPED: _now()}}, "spec": {"parallelism": 0}}
        for job in jobs:
            self.kube.patch_job(namespace, job["metadata"]["name"], patch)
        view.stopped = True
        return view

    def _restart(self, jobs: list[dict[str, Any]], restarts: int) -> None:
        """Deletes and re-creates every Job; stops quietly if another caller got there first."""
        fresh = [_fresh_job(job, restarts) for job in jobs]
        for job in jobs:
            meta = job["metadata"]
            if not self.kube.delete_job(meta["namespace"], meta["name"], uid=meta.get("uid")):
                return
        for obj in fresh:
            try:
                self.kube.create(obj)
            except KubernetesError as e:
                if e.status != 409:
                    raise

    # ------------------------------------------------------------------ list
    def _list_namespace(self, cfg: Mapping[str, CfgVal] | None) -> str:
        return str((cfg or {}).get("namespace") or "default")

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        """The apps torchx made in the namespace (``cfg['namespace']``, default ``default``)."""
        namespace = self._list_namespace(cfg)
        jobs_of: dict[str, list[dict[str, Any]]] = {}
        for job in self.kube.list_jobs(namespace, names.MANAGED_SELECTOR):
            jobs_of.setdefault(status.labels_of(job).get(names.LABEL_APP_NAME, ""), []).append(job)
        vcjobs = self.kube.list_custom(VOLCANO, namespace, names.MANAGED_SELECTOR)
        pods_of: dict[str, list[dict[str, Any]]] = {}
        if jobs_of or vcjobs:
            for pod in self.kube.list_pods(namespace, names.MANAGED_SELECTOR):
                pods_of.setdefault(status.labels_of(pod).get(names.LABEL_APP_NAME, ""), []).append(pod)
        out = []
        for name, jobs in sorted(jobs_of.items()):
            view = status.view_jobs(jobs, pods_of.get(name, []))
            if view is not None and name:
                app = status.annotations_of(jobs[0]).get(names.ANNOTATION_APP, name)
                submitted, started, ended = status.job_times(jobs, view.state)
                out.append(
                    ListAppResponse(
                        f"{namespace}:{name}", view.state, name=app, submitted=submitted, started=started, ended=ended
                    )
                )
        for vcjob in vcjobs:
            out.append(
                self._list_entry(namespace, vcjob, status.volcano_view(vcjob, pods_of.get(self._name_of(vcjob), [])))
            )
        return out

    @staticmethod
    def _name_of(obj: dict[str, Any]) -> str:
        return str(obj["metadata"]["name"])

    def _list_entry(self, namespace: str, obj: dict[str, Any], view: status.AppView) -> ListAppResponse:
        name = self._name_of(obj)
        app = status.annotations_of(obj).get(names.ANNOTATION_APP, name)
        submitted = status.epoch(obj.get("metadata", {}).get("creationTimestamp"))
        return ListAppResponse(app_id=f"{namespace}:{name}", state=view.state, name=app, submitted=submitted)

    # ------------------------------------------------------------------ cancel / delete
    def _cancel_existing(self, app_id: str) -> None:
        namespace, name = names.parse_app_id(app_id)
        found = self._view(namespace, name)
        if found is None or is_terminal(found[1].state):
            return
        kind, view, obj = found
        mark: dict[str, Any] = {"metadata": {"annotations": {names.ANNOTATION_CANCELLED: _now()}}}
        if kind == KIND_JOBS:
            mark["metadata"]["annotations"].update(self._attempt_at_cancel(app_id, view))
            for replica in view.replicas:
                if replica.job is not None:
                    self.kube.patch_job(
                        namespace, replica.job["metadata"]["name"], {**mark, "spec": {"parallelism": 0}}
                    )
            return
        self.kube.patch_custom(self.customs[kind], namespace, name, mark)
        if obj is not None:
            self._stop_custom(kind, namespace, obj)

    def _attempt_at_cancel(self, app_id: str, view: status.AppView) -> dict[str, str]:
        """Of a Job that recovers in Kubernetes: the annotation naming the attempt that runs
        (the Job controller deletes its pod, and with it the server's record of it)."""
        from torchx_sched_k8s import recovery

        if not any(recovery.ANNOTATION_RECOVERY in status.annotations_of(r.job or {}) for r in view.replicas):
            return {}
        log = self.recovery_attempts(app_id)
        running = [a.n for a in (log.attempts if log is not None else []) if a.state is None]
        return {recovery.ANNOTATION_CANCELLED_ATTEMPT: str(running[-1])} if running else {}

    def _stop_custom(self, kind: str, namespace: str, obj: dict[str, Any]) -> None:
        """Asks Volcano to abort the job (a bus.volcano.sh Command)."""
        meta = obj["metadata"]
        owner = {
            "apiVersion": obj["apiVersion"],
            "kind": obj["kind"],
            "name": meta["name"],
            "uid": meta.get("uid", ""),
            "controller": True,
        }
        command = {
            "apiVersion": "/".join(VOLCANO_COMMAND[:2]),
            "kind": "Command",
            "metadata": {"name": f"{meta['name']}-abort", "namespace": namespace, "ownerReferences": [owner]},
            "action": "AbortJob",
            "target": owner,
        }
        try:
            self.kube.create(command, VOLCANO_COMMAND)
        except KubernetesError as e:
            if e.status != 404:
                raise
            logger.warning(
                "%s: marked cancelled, but this cluster has no Volcano Command resource to abort the job with",
                meta["name"],
            )

    def _delete_existing(self, app_id: str) -> None:
        namespace, name = names.parse_app_id(app_id)
        found = self._view(namespace, name)
        self._purge(namespace, name, found[0] if found else KIND_JOBS)

    def _purge(self, namespace: str, name: str, kind: str) -> None:
        """Deletes every object of the app: its Jobs or custom object, pods and Services."""
        selector = names.app_selector(name)
        custom = self.customs.get(kind)
        if custom is not None:
            self.kube.delete_custom(custom, namespace, name)
        else:
            self.kube.delete_jobs(namespace, selector)
        self.kube.delete_pods(namespace, selector)
        self.kube.delete_services(namespace, selector)

    # ------------------------------------------------------------------ logs
    def _replica_pod(self, namespace: str, name: str, role_name: str, k: int) -> dict[str, Any] | None:
        pods = self.kube.list_pods(namespace, f"{names.app_selector(name)},{names.LABEL_REPLICA_ID}={k}")
        return status.newest_pods(p for p in pods if status.replica_key(p)[0] == role_name).get((role_name, k))

    @staticmethod
    def _started(pod: dict[str, Any]) -> bool:
        for cs in (pod.get("status") or {}).get("containerStatuses") or []:
            if "running" in (cs.get("state") or {}) or "terminated" in (cs.get("state") or {}):
                return True
        return False

    def _wait_for_pod(self, app_id: str, namespace: str, name: str, role_name: str, k: int) -> dict[str, Any] | None:
        """The replica's pod once its container started (None if the app ends first)."""
        while True:
            pod = self._replica_pod(namespace, name, role_name, k)
            if pod is not None and self._started(pod):
                return pod
            desc = self.describe(app_id)
            if desc is None or is_terminal(desc.state):
                pod = self._replica_pod(namespace, name, role_name, k)
                return pod if pod is not None and self._started(pod) else None
            time.sleep(_LOG_POLL)

    def log_iter(
        self,
        app_id: str,
        role_name: str,
        k: int = 0,
        regex: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        should_tail: bool = False,
        streams: Stream | None = None,
    ) -> Iterable[str]:
        """Lines of the newest pod of replica ``k`` of ``role_name`` (stdout and stderr combined).

        ``should_tail`` waits for the pod to start and follows it until it ends;
        ``since``/``until`` filter on the kubelet's per-line timestamps.
        """
        namespace, name = names.parse_app_id(app_id)
        self._check_replica(app_id, role_name, k)
        if should_tail:
            pod = self._wait_for_pod(app_id, namespace, name, role_name, k)
        else:
            pod = self._replica_pod(namespace, name, role_name, k)
            pod = pod if pod is not None and self._started(pod) else None
        if pod is None:
            return iter(())
        kwargs: dict[str, Any] = {"follow": should_tail, "timestamps": bool(since or until)}
        if since:
            # whole seconds back from now (the server's granularity); exact filtering on timestamps
            kwargs["since_seconds"] = max(1, math.ceil((datetime.now(timezone.utc) - aware(since)).total_seconds()) + 1)
        pods = [pod] if should_tail else self._attempt_pods(namespace, name, pod)
        if len(pods) > 1:
            return self._pod_lines(pods, namespace, kwargs, since, until, regex)
        response = self.kube.pod_log(namespace, pods[0]["metadata"]["name"], **kwargs)
        return self._lines(response, kwargs["timestamps"], since, until, regex, pods[0]["metadata"]["name"], namespace)

    def _attempt_pods(self, namespace: str, name: str, newest: dict[str, Any]) -> Sequence[dict[str, Any]]:
        """Every started pod of a Job that recovers in Kubernetes (each pod is an attempt),
        oldest first; of any other app, its newest pod alone."""
        from torchx_sched_k8s import recovery

        if recovery.ANNOTATION_RECOVERY not in status.annotations_of(newest):
            return [newest]
        pods = [p for p in self.kube.list_pods(namespace, names.app_selector(name)) if self._started(p)]
        return sorted(pods, key=lambda p: (p["metadata"].get("creationTimestamp") or "", p["metadata"]["name"]))

    def _pod_lines(
        self,
        pods: Sequence[dict[str, Any]],
        namespace: str,
        kwargs: dict[str, Any],
        since: datetime | None,
        until: datetime | None,
        regex: str | None,
    ) -> Iterable[str]:
        for pod in pods:
            pod_name = pod["metadata"]["name"]
            response = self.kube.pod_log(namespace, pod_name, **kwargs)
            yield from self._lines(response, kwargs["timestamps"], since, until, regex, pod_name, namespace)

    def _check_replica(self, app_id: str, role_name: str, k: int) -> None:
        """Raises ValueError unless the app has replica ``k`` of ``role_name``."""
        desc = self.describe(app_id)
        if desc is None:
            return
        replicas = {r.role: len(r.replicas) for r in desc.roles_statuses}
        if k < 0 or k >= replicas.get(role_name, 0):
            known = ", ".join(f"{role}/0..{n - 1}" for role, n in replicas.items())
            raise ValueError(f"app {app_id} has no replica {role_name}/{k}; it has {known}")

    def _lines(
        self,
        response: Any,
        timestamps: bool,
        since: datetime | None,
        until: datetime | None,
        regex: str | None,
        pod: str,
        namespace: str,
    ) -> Iterable[str]:
        try:
            with self.kube.errors(f"read log of pod {pod!r}", namespace):
                yield from log_lines(response.stream(64 * 1024, decode_content=True), timestamps, since, until, regex)
        finally:
            response.release_conn()


class KubernetesMCADScheduler(KubernetesScheduler):
    """Runs apps as MCAD AppWrappers (``workload.codeflare.dev/v1beta1``) of pods and a Service.

    MCAD requeues a failed wrapper up to ``max(max_retries)`` times (APPLICATION policy);
    cancel annotates the wrapper and deletes its pods; delete removes the wrapper.
    """

    capabilities: ClassVar[SchedulerCapabilities] = SchedulerCapabilities(
        log_tail=True,
        log_since_until=True,
        retry_policies=frozenset({RetryPolicy.APPLICATION}),
        elastic=False,
        mounts=frozenset({"bind", "volume", "device"}),
        workspace=True,
    )
    backend_name: ClassVar[str] = "kubernetes_mcad"
    customs: ClassVar[dict[str, Custom]] = {KIND_MCAD: MCAD}

    def _run_opts(self) -> runopts:
        return MCADOpts.as_runopts()

    def _build(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> KubernetesRequest:
        return build_mcad(app, MCADOpts.from_cfg(cfg))

    def _view(self, namespace: str, name: str) -> tuple[str, status.AppView, dict[str, Any] | None] | None:
        wrapper = self.kube.get_custom(MCAD, namespace, name)
        if wrapper is None or status.labels_of(wrapper).get(names.LABEL_APP_NAME) != name:
            return None
        pods = self.kube.list_pods(namespace, names.app_selector(name))
        return KIND_MCAD, status.mcad_view(wrapper, pods), wrapper

    def list(self, cfg: Mapping[str, CfgVal] | None = None) -> list[ListAppResponse]:
        """The AppWrappers torchx made in the namespace."""
        namespace = self._list_namespace(cfg)
        wrappers = self.kube.list_custom(MCAD, namespace, names.MANAGED_SELECTOR)
        pods_of: dict[str, list[dict[str, Any]]] = {}
        if wrappers:
            for pod in self.kube.list_pods(namespace, names.MANAGED_SELECTOR):
                pods_of.setdefault(status.labels_of(pod).get(names.LABEL_APP_NAME, ""), []).append(pod)
        return [
            self._list_entry(namespace, w, status.mcad_view(w, pods_of.get(self._name_of(w), []))) for w in wrappers
        ]

    def _stop_custom(self, kind: str, namespace: str, obj: dict[str, Any]) -> None:
        """Deletes the wrapper's pods (the wrapper stays, annotated cancelled)."""
        self.kube.delete_pods(namespace, names.app_selector(self._name_of(obj)))


_CLASSES: dict[type[KubernetesScheduler], type[KubernetesScheduler]] = {}


def _with_workspace(base: type[KubernetesScheduler]) -> type[KubernetesScheduler]:
    """``base`` mixed with the docker workspace (or its stand-in that explains what to install)."""
    cls = _CLASSES.get(base)
    if cls is None:
        mixin = docker_workspace()
        cls = type(base.__name__, (mixin, base), {"__module__": __name__, "__doc__": base.__doc__})
        _CLASSES[base] = cls
    return cls


def create_scheduler(session_name: str, **kwargs: Any) -> KubernetesScheduler:
    """The ``kubernetes`` scheduler (with the docker workspace when installed)."""
    return _with_workspace(KubernetesScheduler)(session_name, **kwargs)


def create_mcad_scheduler(session_name: str, **kwargs: Any) -> KubernetesScheduler:
    """The ``kubernetes_mcad`` scheduler (with the docker workspace when installed)."""
    return _with_workspace(KubernetesMCADScheduler)(session_name, **kwargs)
