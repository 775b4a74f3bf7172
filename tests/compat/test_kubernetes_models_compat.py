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


def test_app_to_resource_does_not_import_the_kubernetes_client() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from torchx.schedulers.kubernetes_scheduler import app_to_resource\n"
        "from torchx import specs\n"
        "app_to_resource(specs.AppDef('a', roles=[specs.Role('r', image='i', entrypoint='e')]), 'q', None)\n"
        "print('kubernetes' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


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
