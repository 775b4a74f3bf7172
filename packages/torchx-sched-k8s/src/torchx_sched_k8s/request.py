"""AppDef -> the Kubernetes objects torchx creates, as plain dicts.

Three shapes:

* ``volcano`` (default of ``kubernetes`` where the cluster has Volcano, as TorchX): one
  ``batch.volcano.sh/v1alpha1`` Job with a task per replica; Volcano's ``svc`` plugin makes
  the Service, so the rank-0 name is the same as below.
* ``jobs`` (default where the cluster has no Volcano CRD): a headless Service named after the app, then one
  batch/v1 Job per replica (``<app>-<role>-<replica>``, parallelism 1). No CRD is needed
  and it works on Kubernetes 1.20 (no Indexed Jobs). Pods set ``hostname``
  ``<role>-<replica>`` and ``subdomain`` ``<app>``, so replica 0 of the first role is
  ``<role>-0.<app>.<namespace>.svc`` (env ``TORCHX_RANK0_HOST``).
* ``mcad``: one ``workload.codeflare.dev/v1beta1`` AppWrapper whose generic items are one
  Pod per replica and the Service.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torchx.specs.overlays import apply_overlay, get_overlay
from torchx.specs.roles import AppDef, RetryPolicy
from torchx.util.yaml import dump_all

from torchx_sched_k8s import names
from torchx_sched_k8s.opts import MODE_JOBS, MODE_VOLCANO, KubernetesOpts, MCADOpts, PodOpts
from torchx_sched_k8s.pods import PodFactory, named_ports, rank0_host

KIND_JOBS = MODE_JOBS
KIND_VOLCANO = MODE_VOLCANO
KIND_MCAD = "mcad"

#: (group, version, plural) of a custom resource
Custom = tuple[str, str, str]

VOLCANO_GROUP, VOLCANO_VERSION, VOLCANO_PLURAL = "batch.volcano.sh", "v1alpha1", "jobs"
MCAD_GROUP, MCAD_VERSION, MCAD_PLURAL = "workload.codeflare.dev", "v1beta1", "appwrappers"
#: the pod annotation naming multus network attachments (``kubernetes_mcad``'s ``network`` option)
MULTUS_NETWORKS = "k8s.v1.cni.cncf.io/networks"
#: the pod label naming its PodGroup (``kubernetes_mcad`` with ``coscheduler_name``)
LABEL_POD_GROUP = "pod-group.scheduling.sigs.k8s.io"


@dataclass(init=False)
class KubernetesRequest:
    """What a dry run of a Kubernetes scheduler produced: the objects to create, in order.

    Also TorchX's ``KubernetesJob``/``KubernetesMCADJob``: ``KubernetesJob(images_to_push=...,
    resource=...)`` makes a request of that one object, and :attr:`resource` is TorchX's view
    of the app's own object. ``str()`` is the YAML.

    Attributes:
        namespace: where they go
        name: the app's Kubernetes name (``torchx.pytorch.org/app-name``)
        kind: ``jobs``, ``volcano`` or ``mcad``
        objects: the manifests (plain dicts), created in this order
        images_to_push: what the docker workspace must push before creating them
    """

    namespace: str
    name: str
    kind: str
    objects: list[dict[str, Any]]
    images_to_push: Any

    # Replicas share the sub-dicts that are equal for all of them (resources, volumes,
    # annotations ...): to change one replica, replace such a dict instead of editing it.

    def __init__(
        self,
        namespace: str = "default",
        name: str = "",
        kind: str = KIND_JOBS,
        objects: list[dict[str, Any]] | None = None,
        images_to_push: Any = None,
        resource: Any = None,
    ) -> None:
        self.namespace, self.name, self.kind = namespace, name, kind
        self.objects = objects if objects is not None else []
        self.images_to_push = images_to_push
        #: (what :attr:`resource` gave or was set to, its manifest then, its index in objects)
        self._resource: tuple[Any, dict[str, Any], int] | None = None
        if resource is not None:
            self.resource = resource

    @property
    def app_id(self) -> str:
        """``<namespace>:<name>``."""
        return f"{self.namespace}:{self.name}"

    def _own_index(self) -> int | None:
        group = {KIND_VOLCANO: VOLCANO_GROUP, KIND_MCAD: MCAD_GROUP}.get(self.kind)
        for i, obj in enumerate(self.objects):
            if group and str(obj.get("apiVersion", "")).startswith(group + "/"):
                return i
        return None

    @property
    def resource(self) -> Any:
        """The app's own custom object as TorchX's ``KubernetesJob.resource``: the Volcano Job
        (``volcano``) or the AppWrapper (``mcad``), a dict whose pod templates are
        ``kubernetes.client`` models (``V1Pod``, the AppWrapper's ``V1Service``; with the
        ``kubernetes`` package, which this imports; without it the plain manifest); None in
        ``jobs`` mode, which creates one ``batch/v1`` Job per replica (all in :attr:`objects`).

        What is changed in it is what is submitted (and shown by ``str()``/:meth:`to_yaml`):
        the object is then the changed resource serialized as the ``kubernetes`` client does."""
        if self._resource is None:
            index = self._own_index()
            if index is None:
                return None
            from torchx_sched_k8s.compat_models import as_torchx_resource, to_manifest

            view = as_torchx_resource(self.objects[index])
            self._resource = (view, to_manifest(view), index)
        return self._resource[0]

    @resource.setter
    def resource(self, value: Any) -> None:
        """Makes ``value`` (a manifest, plain or holding ``kubernetes.client`` models) the app's
        own object: it replaces the Volcano Job / AppWrapper, or, where there is none, the
        request becomes that one object (its namespace, name and kind read from it)."""
        from torchx_sched_k8s.compat_models import to_manifest

        manifest = to_manifest(value)
        index = self._own_index()
        if index is None:
            meta = manifest.get("metadata") or {}
            self.namespace = str(meta.get("namespace") or self.namespace)
            self.name = str(meta.get("name") or self.name)
            version = str(manifest.get("apiVersion", ""))
            self.kind = {VOLCANO_GROUP: KIND_VOLCANO, MCAD_GROUP: KIND_MCAD}.get(version.partition("/")[0], KIND_JOBS)
            self.objects, index = [manifest], 0
        else:
            self.objects[index] = manifest
        self._resource = (value, to_manifest(value), index)

    def _sync(self) -> None:
        """Puts :attr:`resource`, when it was read and changed since, in place of its object."""
        if self._resource is None:
            return
        from torchx_sched_k8s.compat_models import to_manifest

        value, as_read, index = self._resource
        manifest = to_manifest(value)
        if manifest != as_read:
            self.objects[index] = manifest
            self._resource = (value, manifest, index)

    def submitted_objects(self) -> list[dict[str, Any]]:
        """The objects to create, in order (:attr:`objects`, with the changes made in :attr:`resource`)."""
        self._sync()
        return self.objects

    def to_yaml(self) -> str:
        """The objects as a multi-document YAML stream (``kubectl apply -f`` ready)."""
        return dump_all(self.submitted_objects())

    def __str__(self) -> str:
        return self.to_yaml()


def _factories(app: AppDef, name: str, opts: PodOpts, restart_policy: str) -> list[PodFactory]:
    widest = len(str(max(r.num_replicas for r in app.roles) - 1))
    slugs = names.role_slugs([r.name for r in app.roles], max_len=63 - len(name) - 2 - widest)
    rank0 = rank0_host(slugs[0], name, opts.namespace)
    app_id = f"{opts.namespace}:{name}"
    return [
        PodFactory(role, slug, app_id, name, name, rank0, opts, restart_policy, idx)
        for idx, (role, slug) in enumerate(zip(app.roles, slugs, strict=True))
    ]


def _service(name: str, namespace: str, factories: list[PodFactory]) -> dict[str, Any]:
    """The headless Service that gives every pod ``<hostname>.<name>`` (not-ready pods included)."""
    ports: list[dict[str, Any]] = []
    seen_names: set[str] = set()
    seen_ports: set[int] = set()
    for factory in factories:
        for pname, port in named_ports(factory.role.port_map):
            if port in seen_ports:
                continue
            seen_ports.add(port)
            pname = pname if pname not in seen_names else f"p{port}"
            seen_names.add(pname)
            ports.append({"name": pname, "port": port, "targetPort": port})
    spec: dict[str, Any] = {
        "clusterIP": "None",
        "selector": {names.LABEL_APP_NAME: name},
        "publishNotReadyAddresses": True,
    }
    if ports:
        spec["ports"] = ports
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace, "labels": factories[0].base_labels},
        "spec": spec,
    }


def build_jobs(app: AppDef, opts: KubernetesOpts, name: str | None = None) -> KubernetesRequest:
    """The ``jobs`` request: a headless Service, then one batch/v1 Job per replica.

    Retries: a REPLICA-policy role's Jobs get ``backoffLimit = max_retries`` (the Job
    controller re-runs just that replica); APPLICATION-policy roles get ``backoffLimit 0``
    and torchx restarts every replica when one fails (see the scheduler).
    """
    name = name or names.app_name(app.name)
    factories = _factories(app, name, opts, "Never")
    objects: list[dict[str, Any]] = [_service(name, opts.namespace, factories)]
    for factory in factories:
        role = factory.role
        backoff = role.max_retries if role.retry_policy == RetryPolicy.REPLICA else 0
        annotations = {**factory.annotations, names.ANNOTATION_APP: app.name, names.ANNOTATION_RESTARTS: "0"}
        for replica in range(role.num_replicas):
            labels = factory.labels(replica)
            job_labels = {**labels, names.LABEL_KUEUE_QUEUE: opts.queue} if opts.queue else labels
            objects.append(
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "metadata": {
                        "name": f"{name}-{factory.slug}-{replica}",
                        "namespace": opts.namespace,
                        "labels": job_labels,
                        "annotations": annotations,
                    },
                    "spec": {
                        "backoffLimit": backoff,
                        "parallelism": 1,
                        "completions": 1,
                        "template": factory.template(replica, labels),
                    },
                }
            )
    return KubernetesRequest(opts.namespace, name, KIND_JOBS, objects)


#: task ``policies`` of a role with restarts, by retry policy (as TorchX): a REPLICA role leaves
#: a failed task to Volcano's own task retry (``maxRetry``), an APPLICATION role restarts the job
VOLCANO_RETRY_POLICIES: dict[RetryPolicy, list[dict[str, str]]] = {
    RetryPolicy.REPLICA: [],
    RetryPolicy.APPLICATION: [
        {"event": "PodEvicted", "action": "RestartJob"},
        {"event": "PodFailed", "action": "RestartJob"},
    ],
}


def build_volcano(app: AppDef, opts: KubernetesOpts, name: str | None = None) -> KubernetesRequest:
    """The ``volcano`` request (TorchX's manifest): one Volcano Job with a task per replica.

    A role with ``max_retries > 0`` gives its tasks ``maxRetry`` and the policies of its
    retry policy (:data:`VOLCANO_RETRY_POLICIES`); a role with ``max_retries=0`` gives them
    neither, so a failed task is not restarted. The job's ``maxRetry`` is the smallest
    ``max_retries`` of the roles. With ``min_replicas``, a role's first ``min_replicas`` tasks
    are required (task ``minAvailable`` 1) and the others optional (0).
    """
    name = name or names.app_name(app.name)
    factories = _factories(app, name, opts, "Never")
    tasks: list[dict[str, Any]] = []
    for factory in factories:
        role = factory.role
        for replica in range(role.num_replicas):
            task: dict[str, Any] = {
                "name": factory.hostname(replica),
                "replicas": 1,
                "template": factory.template(replica),
            }
            if role.max_retries > 0:
                task["maxRetry"] = role.max_retries
                task["policies"] = VOLCANO_RETRY_POLICIES[RetryPolicy(role.retry_policy)]
            if role.min_replicas is not None:
                task["minAvailable"] = 1 if replica < role.min_replicas else 0
            tasks.append(task)
    spec: dict[str, Any] = {
        "schedulerName": "volcano",
        "queue": opts.queue or "default",
        "tasks": tasks,
        "maxRetry": min(f.role.max_retries for f in factories),
        "plugins": {"svc": ["--publish-not-ready-addresses"], "env": []},
    }
    if opts.priority_class:
        spec["priorityClassName"] = opts.priority_class
    job = _custom_object(f"{VOLCANO_GROUP}/{VOLCANO_VERSION}", "Job", name, opts.namespace, factories, app, spec)
    return KubernetesRequest(opts.namespace, name, KIND_VOLCANO, [job])


def mode_from_discovery(volcano_resources: dict[str, Any] | None) -> str:
    """``mode=auto``: ``volcano`` when the API server's discovery document of
    ``batch.volcano.sh/v1alpha1`` lists ``jobs`` (the Volcano CRD is installed), else ``jobs``."""
    listed = (volcano_resources or {}).get("resources") or []
    return MODE_VOLCANO if any(r.get("name") == VOLCANO_PLURAL for r in listed) else MODE_JOBS


def pod_group_name(name: str, role_index: int) -> str:
    """The PodGroup of role ``role_index`` of app ``name`` (``kubernetes_mcad`` with a co-scheduler)."""
    return f"{name}-pg{role_index}"


def pod_group(group: str, namespace: str, factory: PodFactory) -> dict[str, Any]:
    """A scheduler-plugins PodGroup: the co-scheduler starts the role's pods all or none."""
    return {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": group, "namespace": namespace, "labels": factory.base_labels},
        "spec": {"minMember": factory.role.num_replicas},
    }


def mcad_scheduling_spec(total_pods: int, retries: int) -> dict[str, Any]:
    """An AppWrapper's ``schedulingSpec``: dispatch when ``total_pods`` fit; requeue a failed
    wrapper up to ``retries`` times, 300 s apart growing exponentially with no upper limit
    (MCAD's defaults, written out as TorchX does)."""
    requeuing = {"timeInSeconds": 300, "maxTimeInSeconds": 0, "growthType": "exponential", "maxNumRequeuings": retries}
    return {"minAvailable": total_pods, "requeuing": requeuing}


def build_mcad(app: AppDef, opts: MCADOpts, name: str | None = None) -> KubernetesRequest:
    """The ``mcad`` request: an AppWrapper whose generic items are one Pod per replica and the
    Service (with ``coscheduler_name`` first a PodGroup per role), in TorchX's order.

    As TorchX's: when every role has ``max_retries > 0``, the wrapper gets a ``schedulingSpec``:
    MCAD dispatches it when all replicas fit (``minAvailable``) and requeues it up to the
    smallest ``max_retries`` of the roles when it fails (``requeuing.maxNumRequeuings``);
    otherwise it has none (MCAD's defaults, no requeuing).
    """
    name = name or names.app_name(app.name)
    factories = _factories(app, name, opts, "Never")
    # in TorchX's order: the PodGroups, the pods, the Service
    groups: list[dict[str, Any]] = []
    items: list[dict[str, Any]] = []
    for index, factory in enumerate(factories):
        annotations = {**factory.annotations, names.ANNOTATION_APP: app.name}
        custom = {"replicas": 1, **factory.resources}
        if opts.network:
            annotations[MULTUS_NETWORKS] = opts.network
        group = ""
        if opts.coscheduler_name:  # gang-schedule each role: a PodGroup its pods name
            group = pod_group_name(name, index)
            groups.append({"replicas": 1, "generictemplate": pod_group(group, opts.namespace, factory)})
        for replica in range(factory.role.num_replicas):
            template = factory.template(replica)
            pod_spec, labels = template["spec"], template["metadata"]["labels"]
            if opts.coscheduler_name:
                pod_spec = {**pod_spec, "schedulerName": opts.coscheduler_name}
                labels = {**labels, LABEL_POD_GROUP: group}
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{name}-{factory.slug}-{replica}",
                    "namespace": opts.namespace,
                    "labels": labels,
                    "annotations": annotations,
                },
                "spec": pod_spec,
            }
            items.append({"replicas": 1, "custompodresources": [custom], "generictemplate": pod})
    items = [*groups, *items, {"replicas": 1, "generictemplate": _service(name, opts.namespace, factories)}]
    spec: dict[str, Any] = {"resources": {"GenericItems": items}}
    retries = min(f.role.max_retries for f in factories)
    if retries > 0:
        spec["schedulingSpec"] = mcad_scheduling_spec(sum(f.role.num_replicas for f in factories), retries)
    if opts.priority is not None:
        spec["priority"] = opts.priority
    wrapper = _custom_object(f"{MCAD_GROUP}/{MCAD_VERSION}", "AppWrapper", name, opts.namespace, factories, app, spec)
    return KubernetesRequest(opts.namespace, name, KIND_MCAD, [wrapper])


def _custom_object(
    api_version: str, kind: str, name: str, namespace: str, factories: list[Any], app: AppDef, spec: dict[str, Any]
) -> dict[str, Any]:
    """A custom resource carrying the app's labels and name annotation."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": factories[0].base_labels,
            "annotations": {names.ANNOTATION_APP: app.name},
        },
        "spec": spec,
    }


#: the overlay an app carries for the job object(s) torchx creates (each batch/v1 Job, the Volcano
#: Job, the AppWrapper): ``set_overlay(app, *JOB_OVERLAY, {...})``; pods take ``pods.POD_OVERLAY``
JOB_OVERLAY = ("kubernetes", "Job")


def apply_job_overlay(app: AppDef, request: KubernetesRequest) -> None:
    """Merges the app's ``Job`` overlay (:mod:`torchx.specs.overlays`) into every object of
    ``request`` but the Service; torchx's labels win over the overlay's."""
    overlay = get_overlay(app, *JOB_OVERLAY, flat_fallback=False)
    if not overlay:
        return
    for i, obj in enumerate(request.objects):
        if obj["kind"] == "Service":
            continue
        merged = copy.deepcopy(obj)  # objects share sub-dicts (see KubernetesRequest)
        apply_overlay(merged, overlay)
        merged["metadata"].setdefault("labels", {}).update(obj["metadata"].get("labels", {}))
        request.objects[i] = merged


#: ``mode`` option -> builder of the ``kubernetes`` scheduler
BUILDERS: dict[str, Callable[[AppDef, KubernetesOpts], KubernetesRequest]] = {
    MODE_JOBS: build_jobs,
    MODE_VOLCANO: build_volcano,
}
