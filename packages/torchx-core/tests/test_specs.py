from __future__ import annotations

from pathlib import Path

import pytest
from torchx import specs
from torchx.specs import (
    AppDef,
    AppState,
    AppStatus,
    AppStatusError,
    BindMount,
    DeviceMount,
    Resource,
    Role,
    VolumeMount,
    macros,
    parse_mounts,
)
from torchx.specs.mounts import MountParseError
from torchx.specs.named_resources import UnknownNamedResourceError


def test_resource_copy_merges_capabilities_without_touching_original() -> None:
    original = Resource(cpu=1, gpu=0, memMB=64, capabilities={"a": 1, "b": 2})
    copied = Resource.copy(original, b=3, c=4)
    assert copied.capabilities == {"a": 1, "b": 3, "c": 4}
    assert original.capabilities == {"a": 1, "b": 2}
    assert (copied.cpu, copied.gpu, copied.memMB) == (1, 0, 64)


def test_roles_do_not_share_default_resource() -> None:
    a, b = Role("a", "img"), Role("b", "img")
    a.resource.capabilities["x"] = 1
    assert b.resource.capabilities == {}
    assert a.resource == Resource(-1, -1, -1, {"x": 1})
    assert b.resource == specs.NULL_RESOURCE


def test_macros_substitute_entrypoint_args_env_metadata_and_leave_role_unchanged() -> None:
    role = Role(
        "trainer",
        "img",
        entrypoint="${img_root}/bin/train",
        args=["--id", macros.app_id, f"--rank={macros.replica_id}", "$HOME", "${unknown}"],
        env={"RANK0": f"$${{{macros.rank0_env[2:-1]}}}", "ID": macros.app_id},
        metadata={"nested": {"list": [macros.replica_id]}},
    )
    values = macros.Values(img_root="/root", app_id="app-7", replica_id="3", rank0_env="MASTER")
    out = values.apply(role)
    assert out.entrypoint == "/root/bin/train"
    assert out.args == ["--id", "app-7", "--rank=3", "$HOME", "${unknown}"]
    assert out.env["ID"] == "app-7"
    assert out.metadata == {"nested": {"list": ["3"]}}
    assert role.args[1] == "${app_id}"
    assert role.metadata["nested"]["list"] == ["${replica_id}"]
    assert values.substitute("x${replica_id}") == "x3"


def test_rank0_env_macro_expands_to_the_variable_name() -> None:
    role = Role("r", "i", entrypoint="sh", args=["-c", f"echo $${macros.rank0_env}"])
    out = macros.Values(img_root="", app_id="a", replica_id="0", rank0_env="TORCHX_RANK0_HOST").apply(role)
    assert out.args == ["-c", "echo $TORCHX_RANK0_HOST"]


def test_app_status_terminal_and_raise() -> None:
    ok = AppStatus(AppState.SUCCEEDED)
    ok.raise_for_status()
    assert ok.is_terminal()
    failed = AppStatus(AppState.FAILED, msg="exit 3")
    with pytest.raises(AppStatusError, match="FAILED: exit 3"):
        failed.raise_for_status()
    assert not AppStatus(AppState.RUNNING).is_terminal()
    assert specs.is_terminal(AppState.CANCELLED)
    assert not specs.is_terminal(AppState.UNKNOWN)
    assert specs.is_started(AppState.RUNNING)
    assert not specs.is_started(AppState.PENDING)


def test_app_status_json_format_and_repr() -> None:
    status = AppStatus(
        AppState.RUNNING,
        roles=[
            specs.RoleStatus("a", [specs.ReplicaStatus(0, AppState.RUNNING, "a", "host1")]),
            specs.RoleStatus("b", [specs.ReplicaStatus(0, AppState.FAILED, "b", "", '{"x": 1}')]),
        ],
    )
    data = status.to_json(filter_roles=["b"])
    assert data["state"] == "RUNNING"
    assert [r["role"] for r in data["roles"]] == ["b"]
    assert data["roles"][0]["replicas"][0]["state"] == "FAILED"
    text = status.format()
    assert text.startswith("AppStatus:\n    State: RUNNING\n    Num Restarts: 0\n    Roles: \n *a[0]:RUNNING\n")
    assert ' *b[0]:FAILED {"x": 1}' in text  # JSON, but not a torchelastic error: shown as is
    assert "  state: RUNNING (3)\n" in repr(status)
    assert repr(AppState.FAILED) == "FAILED (5)"


def test_parse_mounts_all_kinds_and_aliases() -> None:
    mounts = parse_mounts(
        ["type=bind,src=~/data,dst=/mnt/data,readonly", "type=volume,source=vol,target=/v", "type=device,src=/dev/fuse"]
    )
    assert isinstance(mounts[0], BindMount)
    assert mounts[0].read_only
    assert not mounts[0].src_path.startswith("~")
    assert mounts[1] == VolumeMount(src="vol", dst_path="/v", read_only=False)
    assert mounts[2] == DeviceMount(src_path="/dev/fuse", dst_path="/dev/fuse", permissions="rwm")
    assert parse_mounts(["type=bind", "src=/a", "dst=/b"]) == [BindMount("/a", "/b")]


@pytest.mark.parametrize(
    "opts, message",
    [
        (["src=/a,dst=/b"], "must start with type="),
        (["type=nfs,src=/a,dst=/b"], "invalid mount type 'nfs', must be one of bind, volume, device"),
        (["type=bind,src=/a"], "needs dst="),
        (["type=bind,src=/a,dst=/b,colour=red"], "unknown mount option"),
        (["type=device"], "needs src="),
    ],
)
def test_parse_mounts_errors(opts: list[str], message: str) -> None:
    with pytest.raises(MountParseError, match=message):
        parse_mounts(opts)


def test_named_resources_builtin_tables() -> None:
    assert specs.resource(h="gpu.small") == Resource(8, 1, 32 * 1024)
    assert specs.get_named_resources("cpu.nano").memMB == 512
    p4 = specs.named_resources["aws_p4d.24xlarge"]
    assert (p4.cpu, p4.gpu) == (96, 8)
    assert p4.memMB == 1152 * int(1024 * 0.96)
    assert p4.capabilities["node.kubernetes.io/instance-type"] == "p4d.24xlarge"
    assert p4.devices == {"vpc.amazonaws.com/efa": 4}
    assert "gpu.xlarge" in specs.named_resources
    assert len(specs.named_resources) > 40
    assert specs.resource(cpu=4) == Resource(4, 0, 1024)


def test_named_resource_unknown_suggests() -> None:
    with pytest.raises(UnknownNamedResourceError, match="Did you mean 'gpu.small'"):
        specs.get_named_resources("gpu.smal")


def test_named_resource_factories_set_by_hand_win() -> None:
    specs._named_resource_factories["gpu_x2"] = lambda: Resource(cpu=16, gpu=2, memMB=122_000)
    specs._named_resource_factories["gpu.small"] = lambda: Resource(cpu=1, gpu=1, memMB=1)
    assert specs.get_named_resources("gpu_x2") == Resource(16, 2, 122_000)
    assert specs.get_named_resources("gpu.small").cpu == 1


def test_named_resources_from_plugins(make_dist) -> None:  # type: ignore[no-untyped-def]
    make_dist(
        "my-resources",
        {"torchx.named_resources": {"gpu_x4": "myres:gpu_x4"}},
        {
            "myres.py": "from torchx.specs import Resource\ndef gpu_x4():\n    return Resource(cpu=64, gpu=8, memMB=488_000)\n"
        },
    )
    assert specs.get_named_resources("gpu_x4").gpu == 8


def test_appdef_defaults() -> None:
    app = AppDef("x")
    assert app.roles == []
    assert app.metadata == {}
    role = Role("r", "img")
    assert role.entrypoint == specs.MISSING
    assert role.num_replicas == 1
    assert role.retry_policy == specs.RetryPolicy.APPLICATION


def test_yaml_dump_round_trips_through_json_compatible_parsing() -> None:
    import json

    from torchx.util.yaml import dump

    text = dump({"a": "x\u2028y", "b": ["true", "1", "plain", "with space"], "c": {}, "d": None})
    assert "\u2028" not in text
    assert "\\u2028" in text
    assert 'a: "x\\u2028y"' in text
    assert '- "true"' in text
    assert "- plain" in text
    assert "c: {}" in text
    assert json.loads(text.split("a: ", 1)[1].splitlines()[0]) == "x\u2028y"


def test_testing_helpers_read_env_and_gate_live_backends(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import pytest as _pytest
    from torchx.testing import live_backend_env, read_env_file

    env_file = tmp_path / "env.sh"
    env_file.write_text("export A='x y'\nexport TORCHX_TEST_FOO=1\nexport B=2\nunset B\n# comment\n")
    assert read_env_file(env_file) == {"A": "x y", "TORCHX_TEST_FOO": "1"}
    monkeypatch.setenv("TORCHX_SERVICES_ENV", str(env_file))
    monkeypatch.delenv("TORCHX_TEST_FOO", raising=False)
    assert live_backend_env("TORCHX_TEST_FOO", "foo")["A"] == "x y"
    monkeypatch.setenv("TORCHX_REQUIRE_LIVE", "0")
    with _pytest.raises(_pytest.skip.Exception, match="says bar is down"):
        live_backend_env("TORCHX_TEST_BAR", "bar")
    monkeypatch.setenv("TORCHX_REQUIRE_LIVE", "1")
    with _pytest.raises(_pytest.fail.Exception, match="live backend required"):
        live_backend_env("TORCHX_TEST_BAR", "bar")


def test_install_hints_name_the_clone_when_torchx_runs_from_one(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from torchx.util import distributions

    monkeypatch.setattr(distributions, "_clone_packages_dir", lambda: None)
    assert distributions.pip_install("torchx-sched-slurm") == "pip install torchx-sched-slurm"
    assert distributions.pip_install("torchx-sched-local[docker]") == "pip install 'torchx-sched-local[docker]'"
    monkeypatch.undo()
    for name in ("torchx-core", "torchx-sched-local"):
        (tmp_path / "packages" / name).mkdir(parents=True)
        (tmp_path / "packages" / name / "pyproject.toml").write_text("")
    monkeypatch.chdir(tmp_path)
    assert (
        distributions.pip_install("torchx-sched-local[docker]") == "pip install './packages/torchx-sched-local[docker]'"
    )
    # a distribution the clone does not have comes from PyPI
    assert distributions.pip_install("torchx-sched-nope") == "pip install torchx-sched-nope"


def test_parse_mounts_errors_are_also_key_errors_with_plain_messages() -> None:
    with pytest.raises(KeyError) as info:  # as TorchX
        parse_mounts(["src=foo"])
    assert str(info.value).startswith("type must be specified first: ")
    with pytest.raises(KeyError, match=r"unknown mount option blah, must be one of .*\btype\b"):
        parse_mounts(["blah=foo"])
    with pytest.raises(ValueError, match="needs src="):
        parse_mounts(["type=bind"])


def test_workspace_from_str_takes_file_urls_as_torchx_did(tmp_path: Path) -> None:
    from torchx.specs import Workspace
    from torchx.workspace.files import copy_workspace

    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "train.py").write_text("print(1)\n")
    assert Workspace.from_str(f"file://{tmp_path}/proj") == Workspace({f"{tmp_path}/proj": ""})
    assert Workspace.from_str(f"file://{tmp_path}/proj:src;other:lib") == Workspace(
        {f"{tmp_path}/proj": "src", "other": "lib"}
    )
    ws = Workspace.from_str(f"file://{tmp_path}/proj")
    assert ws is not None
    copy_workspace(ws, str(tmp_path / "out"))
    assert (tmp_path / "out" / "train.py").read_text() == "print(1)\n"


@pytest.mark.parametrize(
    ("text", "projects"),
    [
        ("memory://torchx-workspace/", {"memory://torchx-workspace/": ""}),
        ("s3://bucket/proj:src;lib:lib", {"s3://bucket/proj": "src", "lib": "lib"}),
        ("simplecache::s3://bucket/proj", {"simplecache::s3://bucket/proj": ""}),
    ],
)
def test_workspace_from_str_keeps_fsspec_urls_as_torchx_did(text: str, projects: dict[str, str]) -> None:
    from torchx.specs import Workspace

    assert Workspace.from_str(text) == Workspace(projects)
