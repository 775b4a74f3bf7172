"""Pure units: GPU assignment and counting, role serialization, app ids, state dir resolution."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from torchx import specs
from torchx_sched_local import gpus, store
from torchx_sched_local.codec import role_from_dict, role_to_dict
from torchx_sched_local.local_scheduler import LocalScheduler


def test_assign_gpus_gives_distinct_devices() -> None:
    assert gpus.assign_gpus([(2, 2), (0, 1), (1, 3)], 8) == [["0,1", "2,3"], [""], ["4", "5", "6"]]
    assert gpus.assign_gpus([(0, 4)], 0) == [["", "", "", ""]]


def test_assign_gpus_refuses_too_many() -> None:
    with pytest.raises(ValueError, match="needs 5 GPUs .* has 4"):
        gpus.assign_gpus([(1, 5)], 4)


def test_count_gpus_uses_nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    smi = tmp_path / "nvidia-smi"
    smi.write_text(
        "#!/bin/sh\n[ \"$1\" = -L ] && printf 'GPU 0: A100 (UUID: a)\\nGPU 1: A100 (UUID: b)\\nGPU 2: A100 (UUID: c)\\n'\n"
    )
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert gpus.count_gpus() == 3


def test_count_gpus_without_any(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(gpus, "_PROC_GPUS", str(tmp_path / "none"))
    assert gpus.count_gpus() == 0


def test_auto_set_cuda_visible_devices_in_the_request(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpus, "_PROC_GPUS", str(tmp_path / "gpus"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    for i in range(4):
        (tmp_path / "gpus" / f"0000:0{i}:00.0").mkdir(parents=True)
    roles = [
        specs.Role("a", image="/tmp", entrypoint="x", num_replicas=2, resource=specs.Resource(cpu=1, gpu=2, memMB=1)),
        specs.Role("b", image="/tmp", entrypoint="x", resource=specs.Resource(cpu=1, gpu=0, memMB=1)),
    ]
    sched = LocalScheduler("t", state_dir=str(tmp_path / "state"))
    req = sched.submit_dryrun(specs.AppDef("g", roles), {"auto_set_cuda_visible_devices": True}).request
    assert [r.env.get("CUDA_VISIBLE_DEVICES") for r in req.replicas] == ["0,1", "2,3", None]
    req = sched.submit_dryrun(specs.AppDef("g", roles), {}).request
    assert [r.env.get("CUDA_VISIBLE_DEVICES") for r in req.replicas] == [None, None, None]
    with pytest.raises(ValueError, match="needs 6 GPUs"):
        roles[0].num_replicas = 3
        sched.submit_dryrun(specs.AppDef("g", roles), {"auto_set_cuda_visible_devices": True})


def test_role_roundtrip() -> None:
    role = specs.Role(
        "r",
        image="img",
        min_replicas=1,
        entrypoint="e",
        args=["a"],
        env={"K": "V"},
        num_replicas=2,
        max_retries=1,
        retry_policy=specs.RetryPolicy.ROLE,
        resource=specs.Resource(1, 2, 3, {"c": 1}, {"d": 1}, {"t": "x"}),
        port_map={"p": 1},
        metadata={"m": {"n": [1]}},
        mounts=[
            specs.BindMount("/a", "/b"),
            specs.VolumeMount("v", "/c", True),
            specs.DeviceMount("/dev/x", "/dev/y", "r"),
        ],
        workspace=specs.Workspace({"src": "dst"}),
    )
    import json

    assert role_from_dict(json.loads(json.dumps(role_to_dict(role)))) == role


def test_state_dir_resolution(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(store.STATE_DIR_ENV, str(tmp_path / "explicit"))
    assert store.default_state_dir() == str(tmp_path / "explicit")
    monkeypatch.delenv(store.STATE_DIR_ENV)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert store.default_state_dir() == str(tmp_path / "xdg" / "torchx" / "local")
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert store.default_state_dir() == str(tmp_path / "home" / ".local" / "state" / "torchx" / "local")


@pytest.mark.parametrize("good", ["echo-abc123", "a", "A_b.c-d", "x" * 200])
def test_valid_app_ids(good: str) -> None:
    assert store.check_app_id(good) == good


@pytest.mark.parametrize("bad", ["", ".", "..", "../x", "a/b", "/abs", ".hidden", "-dash", "a b", "x" * 201, "a\nb"])
def test_invalid_app_ids(bad: str) -> None:
    with pytest.raises(store.InvalidAppIdError):
        store.check_app_id(bad)


def test_the_supervisors_no_error_marker_is_specs_none() -> None:
    from torchx.specs import NONE
    from torchx_sched_local.supervisor import NO_ERROR

    assert NO_ERROR == NONE


def test_the_supervisors_file_primitives_are_cores() -> None:
    """The store's private/atomic/durable file primitives are core's ``torchx.util.files``
    (what the sweep and managed drivers use), carried as a copy because the supervisor cannot
    import torchx: the copy must stay the same text."""
    import torchx.util.files
    from torchx_sched_local import _files

    assert Path(_files.__file__).read_text() == Path(torchx.util.files.__file__).read_text()


def test_the_state_dir_and_an_atomic_write_are_cores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from torchx.util import durable

    monkeypatch.delenv(store.STATE_DIR_ENV, raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert (
        store.default_state_dir()
        == durable.state_root("local", store.STATE_DIR_ENV)
        == str(tmp_path / "xdg/torchx/local")
    )
    old = os.umask(0o000)
    try:
        store.write_json(str(tmp_path / "a.json"), {"k": "v"})
        durable.write_atomic(str(tmp_path / "b.json"), '{"k":"v"}')
    finally:
        os.umask(old)
    assert [(p.name, p.stat().st_mode & 0o777, p.read_text()) for p in sorted(tmp_path.glob("*.json"))] == [
        ("a.json", 0o600, '{"k":"v"}'),
        ("b.json", 0o600, '{"k":"v"}'),
    ]


def test_a_staged_file_is_created_in_place_private_padded_and_never_over_another(tmp_path: Path) -> None:
    (tmp_path / "staged").mkdir()
    path = tmp_path / "staged" / "state.json"
    old = os.umask(0o000)
    try:
        store.create_json(str(path), {"state": "SUBMITTED"}, reserve=store.state_reserve(1))
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o600
    text = path.read_bytes()
    assert len(text) == 4096 and text.startswith(b'{"state":"SUBMITTED"} ') and text.endswith(b"\n")
    assert store.read_json(str(path)) == {"state": "SUBMITTED"}
    assert os.listdir(tmp_path / "staged") == ["state.json"]  # no temporary file, no rename
    with pytest.raises(FileExistsError) as e:
        store.create_json(str(path), {"state": "FAILED"})
    assert e.value.filename == str(path)
    assert store.read_json(str(path)) == {"state": "SUBMITTED"}
