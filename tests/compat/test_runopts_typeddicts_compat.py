"""Run-option types as TorchX 0.7 declares them: ``TypedDict``s built with a dict or keywords and
passed as ``cfg`` to ``submit_dryrun``."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from torchx import specs

# (module, opts type, options to give it)
CASES = [
    ("torchx.schedulers.local_scheduler", "LocalOpts", {"log_dir": "/tmp/logs", "prepend_cwd": True}),
    ("torchx.schedulers.docker_scheduler", "DockerOpts", {"copy_env": ["HOME"], "privileged": False}),
    ("torchx.schedulers.slurm_scheduler", "SlurmOpts", {"partition": "debug", "time": "1:00:00"}),
    ("torchx.schedulers.kubernetes_scheduler", "KubernetesOpts", {"namespace": "team", "queue": "q"}),
    ("torchx.schedulers.kubernetes_mcad_scheduler", "KubernetesMCADOpts", {"namespace": "team", "priority": 3}),
    ("torchx.schedulers.aws_batch_scheduler", "AWSBatchOpts", {"queue": "q", "share_id": "s", "priority": 2}),
    ("torchx.schedulers.aws_sagemaker_scheduler", "AWSSageMakerOpts", {"role": "arn:aws:iam::1:role/r"}),
    # the option names of these two differ from TorchX's (docs/compatibility.md): only the type is checked
    ("torchx.schedulers.lsf_scheduler", "LsfOpts", {}),
    ("torchx.schedulers.ray_scheduler", "RayOpts", {}),
]


def load(module: str, name: str) -> Any:
    try:
        mod = importlib.import_module(module)
    except ImportError as e:
        pytest.skip(f"{module}: {e}")
    return getattr(mod, name)


def app() -> specs.AppDef:
    return specs.AppDef(
        "a",
        roles=[specs.Role("r", image="python:3.11", entrypoint="echo", args=["hi"], resource=specs.resource(cpu=1))],
    )


@pytest.mark.parametrize(("module", "name", "values"), CASES, ids=[c[1] for c in CASES])
def test_opts_are_typed_dicts(module: str, name: str, values: dict[str, Any]) -> None:
    opts_type = load(module, name)
    assert opts_type.__total__ is False
    assert set(values) <= set(opts_type.__annotations__)
    from_dict = opts_type(values)
    from_kwargs = opts_type(**values)
    assert isinstance(from_dict, dict)
    assert from_dict == from_kwargs == values
    assert opts_type() == {}


@pytest.mark.parametrize(
    ("module", "name", "values"),
    [c for c in CASES if c[1] in ("LocalOpts", "SlurmOpts", "KubernetesOpts", "AWSBatchOpts", "DockerOpts")],
    ids=lambda v: v if isinstance(v, str) and v.endswith("Opts") else "",
)
def test_submit_dryrun_takes_them(module: str, name: str, values: dict[str, Any]) -> None:
    opts_type = load(module, name)
    mod = importlib.import_module(module)
    scheduler = mod.create_scheduler("compat")
    cfg = opts_type(values)
    if name == "KubernetesOpts":
        cfg = opts_type(values, mode="volcano")  # TorchX's manifest without asking a cluster
    info = scheduler.submit_dryrun(app(), cfg)
    assert str(info)
    for key, value in values.items():
        assert info._cfg[key] == value
