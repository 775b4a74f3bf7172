"""Names the nightly (upstream TorchX, 2026-10) added to torchx.specs: CapabilityKey, TORCHX_HOME,
cases, app_metadata, NA, TORCHX_CONTEXT_NAME."""

from __future__ import annotations

from pathlib import Path

import pytest
from torchx import specs


def test_capability_key_stores_under_the_plain_key_and_checks_types() -> None:
    network = specs.CapabilityKey("aws", "network_bandwidth_gbps", int)
    res = specs.Resource(cpu=4, gpu=0, memMB=1024)
    assert network.key == "aws.network_bandwidth_gbps"
    assert network.get(res) is None
    assert network.get(res, 10) == 10
    network.set(res, 400)
    assert res.capabilities == {"aws.network_bandwidth_gbps": 400}
    assert network.get(res) == 400
    res.capabilities["aws.network_bandwidth_gbps"] = True
    with pytest.raises(TypeError, match="should be a int"):
        network.get(res)
    res.capabilities["aws.efa"] = "yes"
    with pytest.raises(TypeError):
        specs.CapabilityKey("aws", "efa", bool).get(res)


def test_torchx_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TORCHX_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert specs.TORCHX_HOME() == tmp_path / ".torchx"
    monkeypatch.setenv("TORCHX_HOME", str(tmp_path / "th"))
    made = specs.TORCHX_HOME("conda-pack-out", "x")
    assert made == tmp_path / "th" / "conda-pack-out" / "x"
    assert made.is_dir()


def test_cases_and_metadata_keys() -> None:
    assert specs.cases.snake_to_camel("max_retries") == "maxRetries"
    assert specs.cases.snake_to_camel("name") == "name"
    assert specs.cases.camel_to_snake("maxRetries") == "max_retries"
    assert specs.cases.camel_to_snake("podIP2Name") == "pod_ip2_name"
    assert specs.app_metadata.SCHEDULER == "torchx/scheduler"
    assert specs.app_metadata.ROLES_PREFIX == "torchx/roles."
    assert (specs.NA, specs.TORCHX_CONTEXT_NAME) == ("<<NA>>", "TORCHX_CONTEXT_NAME")
