"""The functions the ``kubernetes_mcad_scheduler`` docs page lists."""

from __future__ import annotations

import pytest
from torchx import specs
from torchx.specs import AppState

pytest.importorskip("torchx_sched_k8s")

from torchx.schedulers.kubernetes_mcad_scheduler import (
    app_to_resource,
    get_appwrapper_status,
    get_port_for_service,
    get_role_information,
    get_tasks_status_description,
)


def app() -> specs.AppDef:
    return specs.AppDef(
        "trainer",
        roles=[
            specs.Role(
                "worker",
                image="img:1",
                entrypoint="python",
                args=["-m", "train"],
                env={"A": "1"},
                num_replicas=3,
                resource=specs.Resource(cpu=2, gpu=1, memMB=4096),
                port_map={"c10d": 29400},
            )
        ],
    )


def test_app_to_resource_and_role_information() -> None:
    from torchx_sched_k8s.compat_models import to_manifest

    wrapper = app_to_resource(app(), namespace="team", priority_class_name="high", network="net1", priority=3)
    assert wrapper["kind"] == "AppWrapper"
    assert wrapper["spec"]["priority"] == 3
    # the pods are kubernetes.client models, as TorchX's; describe reads the wrapper as the API server returns it
    roles = get_role_information(to_manifest(wrapper)["spec"]["resources"]["GenericItems"])
    worker = roles["worker"]
    assert worker.num_replicas == 3
    assert worker.image == "img:1"
    # as TorchX 0.7 reads them: the whole command in args, entrypoint unset, env and sizes as the manifest holds them
    assert worker.entrypoint == specs.MISSING and worker.args == ["python", "-m", "train"]
    assert {"name": "A", "value": "1"} in worker.env
    assert (worker.resource.cpu, worker.resource.gpu, worker.resource.memMB) == ("1900m", "1", "3072M")
    assert worker.port_map == [{"name": "c10d", "containerPort": 29400}]


def test_role_information_stops_at_the_first_missing_field_as_torchx() -> None:
    def item(container: dict[str, object], role: str = "echo") -> dict[str, object]:
        labels = {"torchx.pytorch.org/role-name": role}
        return {"generictemplate": {"metadata": {"labels": labels}, "spec": {"containers": [container]}}}

    full = {
        "image": "i",
        "command": ["sh", "-c", "x"],
        "env": {"name": "A", "value": "1"},
        "resources": {"requests": {"cpu": 900, "memory": 512, "nvidia.com/gpu": 2}},
        "ports": {"c10d": 29500},
        "volumeMounts": ["m"],
    }
    (role,) = get_role_information([item(full), item(full), {}, {"generictemplate": {"metadata": {}}}]).values()
    assert (role.num_replicas, role.image, role.args, role.env) == (2, "i", ["sh", "-c", "x"], full["env"])
    assert (role.resource.cpu, role.resource.gpu, role.resource.memMB) == (900, 2, 512)
    assert (role.port_map, role.mounts) == ({"c10d": 29500}, ["m"])
    no_memory = {**full, "resources": {"requests": {"cpu": 900}}}
    (role,) = get_role_information([item(no_memory)]).values()
    assert role.resource == specs.NULL_RESOURCE and role.port_map == {}  # reading stopped at memory
    (role,) = get_role_information([item({"command": ["x"]})]).values()
    assert (role.image, role.args) == ("", [])  # no image: nothing more is read


def test_port_for_service() -> None:
    assert get_port_for_service(app()) == "29400"
    assert get_port_for_service(specs.AppDef("a", roles=[specs.Role("r", image="i")])) == "29500"
    bad = specs.AppDef("a", roles=[specs.Role("r", image="i", port_map={"p": 70000})])
    with pytest.warns(UserWarning):
        assert get_port_for_service(bad) == "29500"


def test_appwrapper_status_and_tasks() -> None:
    assert get_appwrapper_status({"metadata": {}}) == AppState.PENDING
    assert get_appwrapper_status({"status": {"state": "Running"}}) == AppState.RUNNING
    assert get_appwrapper_status({"status": {"state": "Failed"}}) == AppState.FAILED
    assert get_tasks_status_description({"running": 2, "pending": "1", "state": "Running"}) == {
        "running": 2,
        "pending": "1",
    }


def test_coscheduler_gets_a_pod_group_per_role() -> None:
    from torchx.schedulers.kubernetes_mcad_scheduler import create_pod_group

    wrapper = app_to_resource(app(), namespace="team", coscheduler_name="scheduler-plugins-scheduler")
    items = [i["generictemplate"] for i in wrapper["spec"]["resources"]["GenericItems"]]
    group = items[0]  # TorchX's order: the PodGroups first
    assert group["kind"] == "PodGroup" and group["spec"]["minMember"] == 3
    pods = items[1:-1]
    assert [type(p).__name__ for p in pods] == ["V1Pod"] * 3 and items[-1].kind == "Service"
    assert {p.metadata.labels["pod-group.scheduling.sigs.k8s.io"] for p in pods} == {group["metadata"]["name"]}
    assert all(p.spec.scheduler_name == "scheduler-plugins-scheduler" for p in pods)
    item = create_pod_group(app(), app().roles[0], 0, "team", "trainer-abc")
    assert item["generictemplate"]["metadata"]["name"] == "trainer-abc-pg0"


def test_small_helpers() -> None:
    from torchx.schedulers.kubernetes_mcad_scheduler import (
        cleanup_str,
        enable_retry,
        get_unique_truncated_appid,
        mcad_svc,
    )

    assert cleanup_str("-1Foo_Bar-2") == "foobar-2"
    with pytest.warns(UserWarning, match="too long"):  # the name is cut, as TorchX's
        name = get_unique_truncated_appid(specs.AppDef("x" * 100, roles=[specs.Role("r", image="i")]))
    assert len(name) <= 63 and name == cleanup_str(name)
    spec: dict[str, object] = {}
    enable_retry(spec, 3, 4)
    assert spec["schedulingSpec"] == {
        "minAvailable": 4,
        "requeuing": {"timeInSeconds": 300, "maxTimeInSeconds": 0, "growthType": "exponential", "maxNumRequeuings": 3},
    }
    svc = mcad_svc(app(), "trainer-abc", "team", "29500")  # a kubernetes.client V1Service, as upstream
    assert type(svc).__name__ == "V1Service" and svc.kind == "Service" and svc.spec.cluster_ip == "None"
    assert (svc.metadata.name, svc.metadata.namespace) == ("trainer-abc", "team")
    assert [(p.port, p.target_port) for p in svc.spec.ports] == [(29500, 29500)]


def test_role_to_pod_and_object_labels() -> None:
    from torchx.schedulers.kubernetes_mcad_scheduler import object_labels, role_to_pod

    role = app().roles[0]
    pod = role_to_pod(  # TorchX's signature
        "worker-0",
        "trainer-abc",
        "team",
        role,
        service_account="sa",
        image_secret="regcred",
        coscheduler_name="cs",
        priority_class_name="hi",
        network="n1",
    )
    assert type(pod).__name__ == "V1Pod" and pod.kind == "Pod"  # a kubernetes.client model, as upstream
    spec = pod.spec
    assert spec.service_account_name == "sa"
    assert [s.name for s in spec.image_pull_secrets] == ["regcred"]
    assert spec.scheduler_name == "cs" and spec.priority_class_name == "hi"
    assert pod.metadata.annotations["k8s.v1.cni.cncf.io/networks"] == "n1"
    assert spec.containers[0].image == "img:1"
    env = {(e.name, e.value) for e in spec.containers[0].env}
    assert ("TORCHX_MCAD_WORKER_0_HOSTS", "trainer-abc-0.trainer-abc") in env
    bare = role_to_pod("worker-0", "trainer-abc", "team", role, None, None, None, None, None)
    assert bare.spec.image_pull_secrets is None and bare.spec.scheduler_name is None
    labels = object_labels(app(), "trainer-abc")
    assert labels and all(isinstance(v, str) for v in labels.values())


def test_pod_labels() -> None:
    from torchx.schedulers.kubernetes_mcad_scheduler import pod_labels

    labels = pod_labels(app(), 0, app().roles[0], 2, "cs", "trainer-abc")
    assert labels["pod-group.scheduling.sigs.k8s.io"] == "trainer-abc-pg0"
    assert "pod-group.scheduling.sigs.k8s.io" not in pod_labels(app(), 0, app().roles[0], 2, None, "trainer-abc")
