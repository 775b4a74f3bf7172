"""``kubernetes_mcad`` run options as TorchX 0.7 documents them (``KubernetesMCADOpts``)."""

from __future__ import annotations

from typing import Any

import pytest
from torchx import specs

pytest.importorskip("torchx_sched_k8s")

from torchx.schedulers.kubernetes_mcad_scheduler import KubernetesMCADOpts, create_scheduler


def pods(cfg: Any) -> list[dict[str, Any]]:
    app = specs.AppDef(
        "trainer",
        roles=[specs.Role("r", image="img", entrypoint="python", num_replicas=2, resource=specs.resource(cpu=1))],
    )
    info = create_scheduler("compat").submit_dryrun(app, cfg)
    items = info.request.objects[0]["spec"]["resources"]["GenericItems"]
    return [i["generictemplate"] for i in items if i["generictemplate"]["kind"] == "Pod"]


def test_documented_options_are_run_options() -> None:
    opts = create_scheduler("compat").run_opts()
    for key in ("namespace", "image_repo", "service_account", "priority", "priority_class_name", "image_secret",
                "coscheduler_name", "network"):  # fmt: skip
        assert opts.get(key) is not None, key
    assert {"priority_class_name", "image_secret"} <= set(opts._opts)  # TorchX's names are the options' own


def test_the_kubernetes_names_of_the_pod_options_still_work() -> None:
    for pod in pods({"priority_class": "high", "image_pull_secret": "regcred"}):
        assert pod["spec"]["priorityClassName"] == "high"
        assert pod["spec"]["imagePullSecrets"] == [{"name": "regcred"}]


def test_documented_options_reach_the_pods() -> None:
    cfg = KubernetesMCADOpts(
        namespace="team",
        priority=5,
        priority_class_name="high",
        image_secret="regcred",
        coscheduler_name="scheduler-plugins-scheduler",
        network="macvlan-conf",
    )
    for pod in pods(cfg):
        assert pod["metadata"]["namespace"] == "team"
        assert pod["spec"]["priorityClassName"] == "high"
        assert pod["spec"]["imagePullSecrets"] == [{"name": "regcred"}]
        assert pod["spec"]["schedulerName"] == "scheduler-plugins-scheduler"
        assert pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] == "macvlan-conf"


def test_cli_takes_the_documented_names(isolated: Any) -> None:
    from torchx.testing import run_torchx

    pytest.importorskip("torchx_components")
    proc = run_torchx(
        "run", "--dryrun", "--workspace", "", "-s", "kubernetes_mcad",
        "-cfg", "priority_class_name=high,image_secret=regcred,network=net1", "utils.echo",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "unknown" not in proc.stderr
    assert "priorityClassName: high" in proc.stdout
    assert "k8s.v1.cni.cncf.io/networks: net1" in proc.stdout
