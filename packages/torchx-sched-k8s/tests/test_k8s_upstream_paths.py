"""Upstream's module paths of the Kubernetes schedulers are this package's."""

from __future__ import annotations


def test_upstream_paths() -> None:
    from torchx.schedulers.kubernetes_mcad_scheduler import KubernetesMCADOpts, KubernetesMCADScheduler
    from torchx.schedulers.kubernetes_scheduler import KubernetesOpts, KubernetesScheduler, create_scheduler
    from torchx_sched_k8s import opts, scheduler

    assert KubernetesScheduler is scheduler.KubernetesScheduler
    assert {k for k, _ in opts.KubernetesOpts.as_runopts()} <= set(KubernetesOpts.__annotations__)  # + aliases
    assert KubernetesMCADScheduler is scheduler.KubernetesMCADScheduler
    assert {k for k, _ in opts.MCADOpts.as_runopts()} <= set(KubernetesMCADOpts.__annotations__)  # + aliases
    assert create_scheduler is scheduler.create_scheduler


def test_upstream_kubernetes_request_builders() -> None:
    from torchx.schedulers.kubernetes_scheduler import (
        LABEL_REPLICA_ID,
        RESERVED_MEMMB,
        RESERVED_MILLICPU,
        app_to_resource,
        pod_labels,
        role_to_pod,
    )
    from torchx.specs import AppDef, Resource, Role

    assert (RESERVED_MILLICPU, RESERVED_MEMMB) == (100, 1024)
    role = Role(name="trainer", image="img", entrypoint="python", args=["-c", "1"], num_replicas=2)
    role.resource = Resource(cpu=2, gpu=0, memMB=4096)
    app = AppDef(name="app", roles=[role])

    job = app_to_resource(app, "q", "sa", "high")
    assert (job["kind"], job["spec"]["queue"], job["spec"]["priorityClassName"]) == ("Job", "q", "high")
    assert len(job["spec"]["tasks"]) == 2
    assert job["spec"]["tasks"][0]["template"].spec.service_account_name == "sa"  # a V1Pod, as TorchX's

    pod = role_to_pod("trainer-0", role, "sa", efa_device_count=2)  # a kubernetes.client V1Pod, as upstream
    assert type(pod).__name__ == "V1Pod" and pod.metadata.annotations == {"sidecar.istio.io/inject": "false"}
    (container,) = pod.spec.containers
    assert (container.name, container.image, container.command) == ("trainer-0", "img", ["python", "-c", "1"])
    assert container.args is None and pod.spec.service_account_name == "sa"
    assert container.resources.limits["cpu"] == "2000m"
    assert container.resources.requests["cpu"] == f"{2000 - RESERVED_MILLICPU}m"
    assert container.resources.requests["memory"] == f"{4096 - RESERVED_MEMMB}M"
    assert container.resources.limits["vpc.amazonaws.com/efa"] == "2"
    assert container.security_context is not None and not container.security_context.privileged
    assert pod.spec.node_selector == {}

    labels = pod_labels(app, 0, role, 1, "default:app-x")
    assert labels[LABEL_REPLICA_ID] == "1"
    assert labels["torchx.pytorch.org/app-name"] == "app-x"
