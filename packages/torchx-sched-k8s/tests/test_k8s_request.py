"""AppDef -> Kubernetes objects (pure request building, no cluster)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from torchx import specs
from torchx.specs import macros
from torchx.testing import hostile_value, macro_probe, macro_probe_output
from torchx_sched_k8s import names
from torchx_sched_k8s.opts import KubernetesOpts, MCADOpts
from torchx_sched_k8s.pods import RANK0_ENV, PodSpecError, parse_toleration, port_name
from torchx_sched_k8s.request import build_jobs, build_mcad, build_volcano, mode_from_discovery

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def role(**kw: Any) -> specs.Role:
    base: dict[str, Any] = {
        "name": "trainer",
        "image": "localhost/img:1",
        "entrypoint": "python",
        "args": ["-m", "train"],
        "resource": specs.Resource(cpu=2, gpu=0, memMB=4096),
    }
    base.update(kw)
    return specs.Role(**base)


def jobs_of(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == "Job"]


def container(job: dict[str, Any]) -> dict[str, Any]:
    c: dict[str, Any] = job["spec"]["template"]["spec"]["containers"][0]
    return c


def env(c: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in c["env"]}


def test_service_then_one_job_per_replica_with_unique_dns_names() -> None:
    app = specs.AppDef("My_App!", roles=[role(name="Train er", num_replicas=3), role(name="ps", num_replicas=2)])
    req = build_jobs(app, KubernetesOpts(namespace="team"))
    assert req.kind == "jobs"
    assert req.namespace == "team"
    assert req.app_id == f"team:{req.name}"
    assert re.match(r"^[a-z][-a-z0-9]*$", req.name)
    assert len(req.name) <= 39
    svc, *jobs = req.objects
    assert svc["kind"] == "Service"
    assert svc["metadata"]["name"] == req.name
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["publishNotReadyAddresses"] is True
    assert svc["spec"]["selector"] == {names.LABEL_APP_NAME: req.name}
    assert len(jobs) == 5
    job_names = [j["metadata"]["name"] for j in jobs]
    assert len(set(job_names)) == 5
    for j in jobs:
        assert DNS_LABEL.match(j["metadata"]["name"])
        assert len(j["metadata"]["name"]) <= 63
        spec = j["spec"]["template"]["spec"]
        assert DNS_LABEL.match(spec["hostname"])
        assert spec["subdomain"] == req.name
        assert spec["restartPolicy"] == "Never"
        assert j["spec"]["parallelism"] == 1
        assert j["spec"]["completions"] == 1
        assert "completionMode" not in j["spec"]  # no Indexed Jobs: Kubernetes 1.20
        labels = j["metadata"]["labels"]
        assert labels[names.LABEL_APP_NAME] == req.name
        assert labels[names.LABEL_K8S_MANAGED_BY] == "torchx"
        assert j["spec"]["template"]["metadata"]["labels"] == labels
    assert [j["metadata"]["annotations"][names.ANNOTATION_ROLE] for j in jobs] == ["Train er"] * 3 + ["ps"] * 2
    assert [j["metadata"]["labels"][names.LABEL_REPLICA_ID] for j in jobs] == ["0", "1", "2", "0", "1"]
    assert jobs[0]["metadata"]["annotations"][names.ANNOTATION_APP] == "My_App!"


def test_long_and_clashing_role_names_stay_unique_and_short() -> None:
    app = specs.AppDef("x" * 80, roles=[role(name="a_b" * 30, num_replicas=1000), role(name="a-b" * 30)])
    req = build_jobs(app, KubernetesOpts())
    jobs = jobs_of(req.objects)
    assert len({j["metadata"]["name"] for j in jobs}) == 1001
    assert max(len(j["metadata"]["name"]) for j in jobs) <= 63
    hosts = {j["spec"]["template"]["spec"]["hostname"] for j in jobs}
    assert len(hosts) == 1001


def test_app_name_starting_with_digit_is_a_dns1035_label() -> None:
    name = names.app_name("123")
    assert name[0].isalpha()
    assert DNS_LABEL.match(name)


def test_env_macros_and_rank0_per_replica() -> None:
    r = role(
        name="worker",
        num_replicas=2,
        args=[
            "--id",
            macros.replica_id,
            "--app",
            macros.app_id,
            "--lit",
            "$${replica_id}",
            "--host",
            f"$${macros.rank0_env}",
        ],
        env={
            "MY_RANK": "r${replica_id}",
            "IP": "[FIELD_PATH]status.podIP",
            "TORCHX_JOB_ID": "kubernetes://s/${app_id}",
        },
    )
    req = build_jobs(specs.AppDef("app", roles=[role(name="master"), r]), KubernetesOpts(namespace="ns"))
    jobs = jobs_of(req.objects)
    rank0 = f"master-0.{req.name}.ns.svc"
    for k, job in enumerate(jobs[1:]):
        c = container(job)
        lit = ["--lit", "$${replica_id}", "--host", f"$${RANK0_ENV}"]  # "$$": the kubelet's escape for "$"
        # the whole argv is the container's command, as TorchX's pods (no args)
        assert c["command"] == ["python", "--id", str(k), "--app", req.app_id, *lit] and "args" not in c
        e = env(c)
        assert e["TORCHX_REPLICA_IDX"] == str(k)
        assert e["TORCHX_ROLE_NAME"] == "worker"
        assert e[RANK0_ENV] == rank0
        assert e["MY_RANK"] == f"r{k}"
        assert e["IP"] == {"fieldRef": {"fieldPath": "status.podIP"}}
        assert e["TORCHX_JOB_ID"] == f"kubernetes://s/{req.app_id}"
        assert len(c["env"]) == len(e)  # no duplicate names


def test_user_env_overrides_torchx_env_without_duplicates() -> None:
    req = build_jobs(specs.AppDef("a", roles=[role(env={"TORCHX_RANK0_HOST": "mine"})]), KubernetesOpts())
    c = container(jobs_of(req.objects)[0])
    assert [e["value"] for e in c["env"] if e["name"] == RANK0_ENV] == ["mine"]


def test_resources_gpu_devices_and_requests_below_limits() -> None:
    res = specs.Resource(cpu=8, gpu=2, memMB=32768, devices={"vpc.amazonaws.com/efa": 4})
    req = build_jobs(specs.AppDef("a", roles=[role(resource=res)]), KubernetesOpts())
    r = container(jobs_of(req.objects)[0])["resources"]
    assert r["limits"] == {"cpu": "8000m", "memory": "32768M", "nvidia.com/gpu": "2", "vpc.amazonaws.com/efa": "4"}
    assert r["requests"] == {"cpu": "7900m", "memory": "31744M", "nvidia.com/gpu": "2", "vpc.amazonaws.com/efa": "4"}


def test_small_pods_request_their_limits() -> None:
    req = build_jobs(
        specs.AppDef("a", roles=[role(resource=specs.Resource(cpu=1, gpu=0, memMB=256))]), KubernetesOpts()
    )
    r = container(jobs_of(req.objects)[0])["resources"]
    assert r["requests"] == {"cpu": "900m", "memory": "256M"}  # memMB as M, as TorchX
    assert r["limits"]["memory"] == "256M"


def test_instance_type_capability_and_options_place_pods() -> None:
    res = specs.resource(h="aws_p4d.24xlarge")
    res.capabilities["tolerations"] = ["gpu=yes:NoSchedule"]
    opts = KubernetesOpts(node_selector={"pool": "a"}, tolerations=["spot:NoExecute", "dedicated=ml"])
    spec = jobs_of(build_jobs(specs.AppDef("a", roles=[role(resource=res)]), opts).objects)[0]["spec"]["template"][
        "spec"
    ]
    assert spec["nodeSelector"] == {"pool": "a", "node.kubernetes.io/instance-type": "p4d.24xlarge"}
    assert spec["tolerations"] == [
        {"key": "spot", "operator": "Exists", "effect": "NoExecute"},
        {"key": "dedicated", "operator": "Equal", "value": "ml"},
        {"key": "gpu", "operator": "Equal", "value": "yes", "effect": "NoSchedule"},
    ]


@pytest.mark.parametrize("bad", ["=x:NoSchedule", "k:Sometimes"])
def test_bad_toleration_is_one_clear_error(bad: str) -> None:
    with pytest.raises(PodSpecError, match="toleration"):
        parse_toleration(bad)


def test_mounts_become_hostpath_pvc_and_privileged_devices() -> None:
    mounts = specs.parse_mounts(
        [
            "type=bind,src=/data,dst=/mnt/data,readonly",
            "type=volume,src=claim,dst=/ckpt",
            "type=device,src=/dev/fuse,perm=r",
        ]
    )
    job = jobs_of(build_jobs(specs.AppDef("a", roles=[role(mounts=mounts)]), KubernetesOpts()).objects)[0]
    spec = job["spec"]["template"]["spec"]
    vols = {v["name"]: v for v in spec["volumes"]}
    assert vols["dshm"] == {"name": "dshm", "emptyDir": {"medium": "Memory"}}
    assert vols["mount-0"]["hostPath"] == {"path": "/data"}
    assert vols["mount-1"]["persistentVolumeClaim"] == {"claimName": "claim", "readOnly": False}
    assert vols["mount-2"]["hostPath"] == {"path": "/dev/fuse"}
    c = spec["containers"][0]
    vm = {m["name"]: m for m in c["volumeMounts"]}
    assert vm["mount-0"] == {"name": "mount-0", "mountPath": "/mnt/data", "readOnly": True}
    assert vm["mount-1"]["readOnly"] is False
    assert vm["mount-2"]["readOnly"] is True
    assert c["securityContext"] == {"privileged": True}


def test_port_map_to_container_and_service_ports() -> None:
    app = specs.AppDef(
        "a", roles=[role(port_map={"TensorBoard_UI": 6006, "c10d": 29500}), role(name="b", port_map={"x": 29500})]
    )
    req = build_jobs(app, KubernetesOpts())
    c = container(jobs_of(req.objects)[0])
    assert c["ports"] == [{"name": "tensorboard-ui", "containerPort": 6006}, {"name": "c10d", "containerPort": 29500}]
    assert [p["port"] for p in req.objects[0]["spec"]["ports"]] == [6006, 29500]
    assert port_name("9999", 9999) == "p9999"
    with pytest.raises(PodSpecError, match="port"):
        build_jobs(specs.AppDef("a", roles=[role(port_map={"x": 70000})]), KubernetesOpts())


def test_retry_policies_map_to_backoff_limits() -> None:
    app = specs.AppDef(
        "a",
        roles=[
            role(name="rep", max_retries=3, retry_policy=specs.RetryPolicy.REPLICA),
            role(name="app", max_retries=2, retry_policy=specs.RetryPolicy.APPLICATION, num_replicas=4, min_replicas=2),
        ],
    )
    jobs = jobs_of(build_jobs(app, KubernetesOpts()).objects)
    assert jobs[0]["spec"]["backoffLimit"] == 3
    assert jobs[1]["spec"]["backoffLimit"] == 0
    ann = jobs[1]["metadata"]["annotations"]
    assert ann[names.ANNOTATION_MAX_RETRIES] == "2"
    assert ann[names.ANNOTATION_RETRY_POLICY] == "APPLICATION"
    assert ann[names.ANNOTATION_MIN_REPLICAS] == "2"
    assert ann[names.ANNOTATION_NUM_REPLICAS] == "4"


def test_pod_options() -> None:
    opts = KubernetesOpts(
        service_account="sa",
        priority_class="high",
        image_pull_policy="IfNotPresent",
        image_pull_secret="regcred",
        termination_grace_period=1,
        queue="team-q",
    )
    job = jobs_of(build_jobs(specs.AppDef("a", roles=[role()]), opts).objects)[0]
    spec = job["spec"]["template"]["spec"]
    assert spec["serviceAccountName"] == "sa"
    assert spec["priorityClassName"] == "high"
    assert spec["imagePullSecrets"] == [{"name": "regcred"}]
    assert spec["terminationGracePeriodSeconds"] == 1
    assert spec["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert job["metadata"]["labels"][names.LABEL_KUEUE_QUEUE] == "team-q"
    assert names.LABEL_KUEUE_QUEUE not in job["spec"]["template"]["metadata"]["labels"]
    with pytest.raises(PodSpecError, match="image_pull_policy"):
        build_jobs(specs.AppDef("a", roles=[role()]), KubernetesOpts(image_pull_policy="Sometimes"))


def test_volcano_job_has_a_task_per_replica_and_retry_policies() -> None:
    app = specs.AppDef(
        "a",
        roles=[
            role(name="m", max_retries=2),
            role(name="w", num_replicas=3, min_replicas=1, max_retries=5, retry_policy=specs.RetryPolicy.REPLICA),
        ],
    )
    req = build_volcano(app, KubernetesOpts(namespace="ns", queue="q", priority_class="p"))
    (vc,) = req.objects
    assert vc["apiVersion"] == "batch.volcano.sh/v1alpha1"
    assert vc["kind"] == "Job"
    spec = vc["spec"]
    assert spec["schedulerName"] == "volcano"
    assert spec["queue"] == "q"
    assert spec["priorityClassName"] == "p"
    assert "minAvailable" not in spec
    assert spec["maxRetry"] == 2  # the smallest max_retries of the roles
    assert spec["plugins"]["svc"] == ["--publish-not-ready-addresses"]
    assert [t["name"] for t in spec["tasks"]] == ["m-0", "w-0", "w-1", "w-2"]
    assert spec["tasks"][0]["policies"] == [
        {"event": "PodEvicted", "action": "RestartJob"},
        {"event": "PodFailed", "action": "RestartJob"},
    ]
    assert "minAvailable" not in spec["tasks"][0]
    assert spec["tasks"][1]["policies"] == []  # REPLICA: Volcano's own task retry
    assert spec["tasks"][1]["maxRetry"] == 5
    assert [t["minAvailable"] for t in spec["tasks"][1:]] == [1, 0, 0]
    pod = spec["tasks"][2]["template"]["spec"]
    assert pod["subdomain"] == req.name
    assert pod["hostname"] == "w-1"
    assert env(pod["containers"][0])[RANK0_ENV] == f"m-0.{req.name}.ns.svc"


def test_volcano_max_retries_zero_means_no_restart() -> None:
    app = specs.AppDef("a", roles=[role(name="m", max_retries=0), role(name="w", max_retries=3)])
    spec = build_volcano(app, KubernetesOpts()).objects[0]["spec"]
    assert spec["maxRetry"] == 0
    assert spec["queue"] == "default"
    assert "maxRetry" not in spec["tasks"][0] and "policies" not in spec["tasks"][0]
    assert spec["tasks"][1]["maxRetry"] == 3


def test_mode_from_discovery() -> None:
    served = {"kind": "APIResourceList", "groupVersion": "batch.volcano.sh/v1alpha1", "resources": [{"name": "jobs"}]}
    assert mode_from_discovery(served) == "volcano"
    assert mode_from_discovery(None) == "jobs"  # 404: the group version is not served
    assert mode_from_discovery({"resources": [{"name": "jobs/status"}]}) == "jobs"


def test_mcad_appwrapper_wraps_service_and_pods() -> None:
    app = specs.AppDef(
        "a", roles=[role(num_replicas=2, max_retries=3, resource=specs.Resource(cpu=1, gpu=1, memMB=2048))]
    )
    req = build_mcad(app, MCADOpts(namespace="ns", priority=7))
    (aw,) = req.objects
    assert aw["apiVersion"] == "workload.codeflare.dev/v1beta1"
    assert aw["kind"] == "AppWrapper"
    assert aw["spec"]["priority"] == 7
    requeuing = {"timeInSeconds": 300, "maxTimeInSeconds": 0, "growthType": "exponential", "maxNumRequeuings": 3}
    assert aw["spec"]["schedulingSpec"] == {"minAvailable": 2, "requeuing": requeuing}  # as TorchX writes it
    items = aw["spec"]["resources"]["GenericItems"]
    assert [i["generictemplate"]["kind"] for i in items] == ["Pod", "Pod", "Service"]  # TorchX's order
    pod = items[1]["generictemplate"]
    assert pod["metadata"]["name"] == f"{req.name}-trainer-1"
    assert pod["spec"]["hostname"] == "trainer-1"
    assert items[1]["custompodresources"] == [
        {
            "replicas": 1,
            "limits": {"cpu": "1000m", "memory": "2048M", "nvidia.com/gpu": "1"},
            "requests": {"cpu": "900m", "memory": "1024M", "nvidia.com/gpu": "1"},
        }
    ]


def test_mcad_requeues_up_to_the_smallest_max_retries_and_not_at_all_when_a_role_has_none() -> None:
    def spec(*retries: int) -> dict[str, Any]:
        roles = [role(name=f"r{i}", max_retries=n) for i, n in enumerate(retries)]
        (aw,) = build_mcad(specs.AppDef("a", roles=roles), MCADOpts(namespace="ns")).objects
        return dict(aw["spec"])

    assert spec(2, 5)["schedulingSpec"]["requeuing"]["maxNumRequeuings"] == 2  # as TorchX: the smallest
    assert spec(2, 5)["schedulingSpec"]["minAvailable"] == 2
    assert "schedulingSpec" not in spec(0, 5)  # as TorchX: no schedulingSpec without retries
    assert "schedulingSpec" not in spec(0)


HOSTILE = 'it\'s "quoted" `uname` $(id) ; rm -rf / && echo ${x} \\ \n\ttab é 🚀 \u2028 \x85 --flag=--'


@pytest.mark.parametrize("build", [build_jobs, build_volcano])
def test_hostile_text_survives_the_yaml_round_trip(build: Any) -> None:
    app = specs.AppDef("a", roles=[role(entrypoint="echo", args=[HOSTILE], env={"X": HOSTILE})])
    req = build(app, KubernetesOpts())
    text = req.to_yaml()
    docs = list(yaml.safe_load_all(text))
    assert docs == req.objects
    pods = (
        [t["template"]["spec"] for t in docs[0]["spec"]["tasks"]]
        if docs[0]["kind"] == "Job" and "tasks" in docs[0]["spec"]
        else [d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Job"]
    )
    k8s_escaped = HOSTILE.replace("$", "$$")  # the kubelet turns "$$" back into "$" (and reads "$(VAR)")
    assert pods
    assert all(p["containers"][0]["command"] == ["echo", k8s_escaped] for p in pods)
    assert all(env(p["containers"][0])["X"] == k8s_escaped for p in pods)


def test_requests_share_constant_parts_but_yaml_never_uses_aliases() -> None:
    req = build_jobs(specs.AppDef("a", roles=[role(num_replicas=3)]), KubernetesOpts())
    text = req.to_yaml()
    assert "&id" not in text
    assert "*id" not in text
    assert list(yaml.safe_load_all(text)) == req.objects


def kubelet_expand(text: str) -> str:
    """What the kubelet makes of a command, args or env string: ``$$`` is ``$``; ``$(VAR)`` reads a variable.

    Every ``$`` torchx writes is doubled, so a ``$(`` that is not after ``$$`` is a bug here.
    """
    out, i = [], 0
    while (j := text.find("$", i)) >= 0:
        assert text.startswith("$$", j), f"an unescaped $ the kubelet would read: {text!r}"
        out.append(text[i:j] + "$")
        i = j + 2
    return "".join(out) + text[i:]


@pytest.mark.parametrize("build", [build_jobs, build_volcano])
def test_macro_values_are_data_in_the_manifest(build: Any, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    namespace = hostile_value(str(marker))  # part of the app_id macro (a real namespace is a DNS label)
    req = build(specs.AppDef("macros", [macro_probe("img", str(marker), num_replicas=2)]), KubernetesOpts(namespace))
    docs = list(yaml.safe_load_all(req.to_yaml()))
    pods = (
        [t["template"]["spec"] for t in docs[0]["spec"]["tasks"]]
        if "tasks" in docs[0]["spec"]
        else [d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Job"]
    )
    assert len(pods) == 2
    for k, pod in enumerate(pods):
        c = pod["containers"][0]
        values = {e["name"]: kubelet_expand(e["value"]) for e in c["env"] if "value" in e}
        argv = [kubelet_expand(w) for w in c["command"]]
        out = subprocess.run(argv, env=values, capture_output=True, text=True, check=True)
        assert out.stdout == macro_probe_output("", req.app_id, k)
    assert req.app_id.startswith(namespace)
    assert not marker.exists()


def test_pod_overlay_reaches_every_pod_of_every_mode_and_leaves_other_roles_alone() -> None:
    from torchx.specs.overlays import DEL, JOIN, set_overlay

    gpu = role(name="gpu", num_replicas=2)
    set_overlay(gpu, "kubernetes", "V1Pod", {"spec": {"nodeSelector": {"pool": "a100"}}})
    set_overlay(
        gpu,
        "kubernetes",
        "V1Pod",
        {
            "metadata": {"labels": {"team": "ml", names.LABEL_APP_NAME: "hijacked"}},
            "spec": {
                "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
                JOIN("containers", on="name"): [{"name": "gpu", "workingDir": "/w"}],
                DEL("enableServiceLinks"): None,
            },
        },
    )
    app = specs.AppDef("ov", roles=[gpu, role(name="cpu")])
    templates = [j["spec"]["template"] for j in jobs_of(build_jobs(app, KubernetesOpts()).objects)]
    (vc,) = build_volcano(app, KubernetesOpts()).objects
    templates_vc = [t["template"] for t in vc["spec"]["tasks"]]
    for pods in (templates, templates_vc):
        gpu0, gpu1, cpu0 = pods
        for pod in (gpu0, gpu1):
            assert pod["spec"]["nodeSelector"] == {"pool": "a100"}
            assert {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["spec"]["tolerations"]
            assert pod["metadata"]["labels"]["team"] == "ml"
            assert pod["metadata"]["labels"][names.LABEL_APP_NAME] != "hijacked"
            assert pod["spec"]["containers"][0]["workingDir"] == "/w"
            assert pod["spec"]["containers"][0]["image"] == "localhost/img:1"
            assert "enableServiceLinks" not in pod["spec"]
        assert gpu0["spec"]["hostname"] != gpu1["spec"]["hostname"]
        assert "nodeSelector" not in cpu0["spec"]
        assert "team" not in cpu0["metadata"]["labels"]
        assert cpu0["spec"]["enableServiceLinks"] is False
    # the overlay stays what the user stored (applying it twice changes nothing)
    assert len(build_jobs(app, KubernetesOpts()).objects[1]["spec"]["template"]["spec"]["tolerations"]) == len(
        templates[0]["spec"]["tolerations"]
    )


def test_app_job_overlay_reaches_every_job_object_but_not_the_service() -> None:
    from torchx.specs.overlays import set_overlay
    from torchx_sched_k8s.request import apply_job_overlay

    app = specs.AppDef("jo", roles=[role(num_replicas=2)])
    set_overlay(app, "kubernetes", "Job", {"metadata": {"annotations": {"team": "ml"}, "labels": {"x": "y"}}})
    set_overlay(app, "kubernetes", "Job", {"spec": {"ttlSecondsAfterFinished": 600}})
    for build in (build_jobs, build_volcano):
        req = build(app, KubernetesOpts())
        before = [o["metadata"].get("annotations", {}).get("team") for o in req.objects]
        assert set(before) == {None}
        apply_job_overlay(app, req)
        for obj in req.objects:
            if obj["kind"] == "Service":
                assert "team" not in obj["metadata"].get("annotations", {})
                continue
            assert obj["metadata"]["annotations"]["team"] == "ml"
            assert obj["metadata"]["labels"]["x"] == "y"
            assert obj["metadata"]["labels"][names.LABEL_APP_NAME] == req.name
            assert obj["spec"]["ttlSecondsAfterFinished"] == 600
    untouched = build_jobs(specs.AppDef("jo", roles=[role()]), KubernetesOpts())
    apply_job_overlay(specs.AppDef("jo", roles=[role()]), untouched)
    assert "ttlSecondsAfterFinished" not in untouched.objects[1]["spec"]
