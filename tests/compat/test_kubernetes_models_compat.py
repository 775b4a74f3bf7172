"""Upstream's ``role_to_pod``/``mcad_svc`` return ``kubernetes.client`` models; ours are our
scheduler's manifests converted to those models, losing nothing."""

from __future__ import annotations

from typing import Any

import pytest
from torchx import specs

kubernetes = pytest.importorskip("kubernetes")


def devices_role() -> specs.Role:
    return specs.Role(
        name="foo",
        image="img",
        entrypoint="python",
        args=["-c", "print(1)"],
        env={"A": "b"},
        port_map={"c10d": 29500},
        resource=specs.Resource(cpu=2, gpu=1, memMB=3000, devices={"vpc.amazonaws.com/efa": 2}),
        mounts=[
            specs.DeviceMount(src_path="/dev/a", dst_path="/a", permissions="rwm"),
            specs.DeviceMount(src_path="/dev/b", dst_path="/b", permissions="r"),
        ],
    )


def test_role_to_pod_device_mounts_compare_equal_to_client_models() -> None:
    from kubernetes.client import V1HostPathVolumeSource, V1Volume, V1VolumeMount
    from torchx.schedulers.kubernetes_scheduler import role_to_pod

    pod = role_to_pod("foo", devices_role(), service_account=None)
    assert pod.spec.volumes[1:] == [
        V1Volume(name="mount-0", host_path=V1HostPathVolumeSource(path="/dev/a")),
        V1Volume(name="mount-1", host_path=V1HostPathVolumeSource(path="/dev/b")),
    ]
    assert pod.spec.containers[0].volume_mounts[1:] == [
        V1VolumeMount(name="mount-0", mount_path="/a", read_only=False),
        V1VolumeMount(name="mount-1", mount_path="/b", read_only=True),
    ]
    assert pod.spec.containers[0].security_context.privileged is True


def test_a_role_without_devices_has_an_empty_security_context_and_node_selector() -> None:
    from kubernetes.client import V1SecurityContext
    from torchx.schedulers.kubernetes_scheduler import role_to_pod

    pod = role_to_pod("foo", specs.Role(name="foo", image="img"), service_account="")
    assert pod.spec.containers[0].security_context == V1SecurityContext()
    assert pod.spec.node_selector == {}


@pytest.mark.parametrize("efa", [None, 4])
def test_the_models_serialize_back_to_the_manifest(efa: int | None) -> None:
    from kubernetes.client import ApiClient
    from torchx.schedulers.kubernetes_scheduler import pod_manifest, role_to_pod

    role = devices_role()
    manifest: dict[str, Any] = pod_manifest("foo", role, "sa", efa_device_count=efa)
    pod = role_to_pod("foo", role, "sa", efa_device_count=efa)
    assert ApiClient().sanitize_for_serialization(pod) == manifest


def test_mcad_models_serialize_back_to_the_manifests() -> None:
    from kubernetes.client import ApiClient
    from torchx.schedulers.kubernetes_mcad_scheduler import mcad_svc, role_to_pod, svc_manifest

    app = specs.AppDef("app", roles=[devices_role()])
    svc = mcad_svc(app, "app-x", "team", "1234")
    assert type(svc).__name__ == "V1Service"
    assert ApiClient().sanitize_for_serialization(svc) == svc_manifest(app, "app-x", "team", "1234")
    pod = role_to_pod("app-x-0", "app-x", "team", devices_role(), "sa", "regcred", "cs", "hi", "net")
    back = ApiClient().sanitize_for_serialization(pod)
    assert back["spec"]["imagePullSecrets"] == [{"name": "regcred"}]
    assert back["spec"]["schedulerName"] == "cs" and back["spec"]["priorityClassName"] == "hi"
    assert back["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] == "net"


def test_a_dry_run_imports_no_kubernetes_client_and_its_resource_is_torchx_s() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from torchx.schedulers.kubernetes_scheduler import create_scheduler\n"
        "from torchx import specs\n"
        "app = specs.AppDef('a', roles=[specs.Role('r', image='i', entrypoint='e', num_replicas=2)])\n"
        "info = create_scheduler('s').submit_dryrun(app, {'mode': 'volcano'})\n"
        "str(info)\n"
        "print('kubernetes' in sys.modules)\n"
        "template = info.request.resource['spec']['tasks'][1]['template']\n"
        "print('kubernetes' in sys.modules, type(template).__name__, template.spec.containers[0].command)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split("\n")[:2] == ["False", "True V1Pod ['e']"]


def test_what_is_changed_in_the_resource_is_shown_and_submitted() -> None:
    from torchx.schedulers.kubernetes_mcad_scheduler import create_scheduler

    app = specs.AppDef("a", roles=[specs.Role("r", image="i", entrypoint="e", num_replicas=2)])
    request = create_scheduler("s").submit_dryrun(app, {"namespace": "ns"}).request
    before = request.to_yaml()
    items = request.resource["spec"]["resources"]["GenericItems"]
    assert [type(i["generictemplate"]).__name__ for i in items] == ["V1Pod", "V1Pod", "V1Service"]  # TorchX's order
    assert "'service_account_name': None" in str(request.resource)  # the models' print, as TorchX's
    assert request.to_yaml() == before  # only read: the manifest is untouched (no key dropped by the models)
    items[0]["generictemplate"].spec.service_account_name = "changed"
    (wrapper,) = request.submitted_objects()
    pods = [i["generictemplate"] for i in wrapper["spec"]["resources"]["GenericItems"]]
    assert [p["spec"].get("serviceAccountName") for p in pods[:2]] == ["changed", None]
    assert "serviceAccountName: changed" in str(request)  # str() is the YAML, as TorchX's request


def test_a_request_made_of_a_resource_as_torchx_s_kubernetes_job() -> None:
    from kubernetes.client import V1ObjectMeta
    from torchx.schedulers.kubernetes_scheduler import KubernetesJob

    resource = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": V1ObjectMeta(name="j", namespace="n"),
    }
    job = KubernetesJob(images_to_push={"sha256:x": ("repo", "x")}, resource=resource)
    assert (job.namespace, job.name, job.kind, job.app_id) == ("n", "j", "volcano", "n:j")
    assert job.resource is resource
    assert job.objects == [
        {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "j", "namespace": "n"}}
    ]
    empty = KubernetesJob(images_to_push=None, resource={})
    assert empty.objects == [{}] and empty.app_id == "default:"


def test_submitting_an_object_without_a_name_says_so() -> None:
    from torchx.schedulers.api import AppDryRunInfo
    from torchx.schedulers.kubernetes_scheduler import KubernetesJob, create_scheduler

    info = AppDryRunInfo(KubernetesJob(images_to_push=None, resource={}), str)
    with pytest.raises(ValueError, match="has no metadata.name"):
        create_scheduler("s").schedule(info)


def test_role_to_pod_is_torchx_s_raw_pod_of_the_role() -> None:
    from torchx.schedulers.kubernetes_scheduler import pod_manifest

    role = specs.Role(
        name="r",
        image="img",
        entrypoint="run",
        args=["--id", specs.macros.app_id],  # not filled in: the scheduler does that per replica
        env={"E": "1"},
        port_map={"p": 80},
        resource=specs.Resource(cpu=1, gpu=0, memMB=3000),
        mounts=[specs.VolumeMount(src="claim", dst_path="/d", read_only=True)],
    )
    assert pod_manifest("c", role, None) == {
        "metadata": {"annotations": {"sidecar.istio.io/inject": "false"}, "labels": {}},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "img",
                    "command": ["run", "--id", "${app_id}"],
                    "env": [{"name": "E", "value": "1"}],
                    "resources": {
                        "limits": {"cpu": "1000m", "memory": "3000M"},
                        "requests": {"cpu": "900m", "memory": "1976M"},
                    },
                    "ports": [{"name": "p", "containerPort": 80}],
                    "volumeMounts": [
                        {"name": "dshm", "mountPath": "/dev/shm"},
                        {"name": "mount-0", "mountPath": "/d", "readOnly": True},
                    ],
                    "securityContext": {},
                }
            ],
            "restartPolicy": "Never",
            "volumes": [
                {"name": "dshm", "emptyDir": {"medium": "Memory"}},
                {"name": "mount-0", "persistentVolumeClaim": {"claimName": "claim"}},
            ],
            "nodeSelector": {},
        },
    }


def test_mcad_helpers_label_as_torchx() -> None:
    from torchx.schedulers.kubernetes_mcad_scheduler import create_pod_group, pod_labels, svc_manifest

    app = specs.AppDef("app", roles=[specs.Role("r", image="i", num_replicas=2)])
    common = {
        "app.kubernetes.io/name": "app",
        "app.kubernetes.io/managed-by": "torchx.pytorch.org",
        "app.kubernetes.io/instance": "app-x",
    }
    group = create_pod_group(app, app.roles[0], 0, "ns", "app-x")["generictemplate"]
    assert group["metadata"] == {
        "name": "app-x-pg0",
        "namespace": "ns",
        "labels": {**common, "appwrapper.workload.codeflare.dev": "app-x"},
    }
    assert group["spec"] == {"minMember": 2}
    svc = svc_manifest(app, "app-x", "ns", "29500")
    assert svc["metadata"]["labels"] == common and svc["spec"]["selector"] == {"app.kubernetes.io/instance": "app-x"}
    assert svc["spec"]["ports"] == [{"protocol": "TCP", "port": 29500, "targetPort": 29500}]
    labels = pod_labels(app, 0, app.roles[0], 1, None, "app-x")
    assert labels["torchx.pytorch.org/role-index"] == "0" and labels["torchx.pytorch.org/replica-id"] == "1"
    assert labels["torchx.pytorch.org/role-name"] == "r" and labels["torchx.pytorch.org/app-name"] == "app"
