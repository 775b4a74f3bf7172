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
    wrapper = app_to_resource(app(), namespace="team", priority_class_name="high", network="net1", priority=3)
    assert wrapper["kind"] == "AppWrapper"
    assert wrapper["spec"]["priority"] == 3
    roles = get_role_information(wrapper["spec"]["resources"]["GenericItems"])
    worker = roles["worker"]
    assert worker.num_replicas == 3
    assert worker.image == "img:1"
    assert [worker.entrypoint, *worker.args] == ["python", "-m", "train"]
    assert worker.env["A"] == "1"
    assert (worker.resource.cpu, worker.resource.gpu, worker.resource.memMB) == (2, 1, 4096)


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
    assert get_tasks_status_description({"running": 2, "pending": 1, "state": "Running"}) == {
        "running": 2,
        "pending": 1,
    }
