"""dist.ddp / dist.spmd: AppDef shape, -j forms, rendezvous, errors, and the shell command run for real."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
from pathlib import Path

import pytest
from torchx import specs
from torchx.runner.api import validate_app
from torchx.specs.builders import ComponentArgError, materialize_appdef
from torchx.testing import PASSTHROUGH_ARGS, hostile_value
from torchx_components import dist
from torchx_components.torchrun_args import TORCHRUN_CHECK, Shape, parse_j


def ddp(*argv: str) -> specs.AppDef:
    app = materialize_appdef(dist.ddp, list(argv))
    validate_app(app)
    return app


def torchrun_argv(
    role: specs.Role,
    replica_id: int = 0,
    env: dict[str, str] | None = None,
    tmp: Path | None = None,
    app_id: str = "myapp-42",
) -> list[str]:
    """Runs the role's ``bash -c`` command, macros filled, with a fake torchrun that prints its argv."""
    assert tmp is not None
    fake_bin = tmp / "fakebin"
    fake_bin.mkdir(exist_ok=True)
    fake = fake_bin / "torchrun"
    fake.write_text("#!/usr/bin/env python3\nimport json, sys\nprint(json.dumps(sys.argv[1:]))\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    filled = specs.macros.Values(
        img_root="", app_id=app_id, replica_id=str(replica_id), rank0_env="TORCHX_RANK0_HOST"
    ).apply(role)
    run_env = {k: v for k, v in os.environ.items() if k != "TORCHX_RANK0_HOST"}
    run_env.update(filled.env)
    run_env.update(env or {})
    run_env["PATH"] = f"{fake_bin}{os.pathsep}{os.environ['PATH']}"
    out = subprocess.run([filled.entrypoint, *filled.args], env=run_env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("j", "shape"),
    [
        ("1x2", Shape(1, 1, 2)),
        ("2x4", Shape(2, 2, 4)),
        (" 1:4x8 ", Shape(1, 4, 8)),
        ("3:3x1", Shape(3, 3, 1)),
    ],
)
def test_parse_j(j: str, shape: Shape) -> None:
    assert parse_j(j) == shape


@pytest.mark.parametrize(
    ("j", "why"),
    [
        ("2", "expected NNODESxNPROC"),
        ("2x", "expected NNODESxNPROC"),
        ("x2", "expected NNODESxNPROC"),
        ("2y4", "expected NNODESxNPROC"),
        ("1:2:3x4", "expected NNODESxNPROC"),
        ("-1x2", "expected NNODESxNPROC"),
        ("0x2", "at least 1"),
        ("2x0", "at least 1"),
        ("4:2x1", "minimum number of nodes \\(4\\) exceeds the maximum \\(2\\)"),
    ],
)
def test_bad_j_is_a_clear_error(j: str, why: str) -> None:
    with pytest.raises(ComponentArgError, match=f"^ddp: invalid -j '{re.escape(j)}': .*{why}"):
        materialize_appdef(dist.ddp, [f"--j={j}", "--script", "t.py"])


def test_spmd_j_may_omit_nproc() -> None:
    assert parse_j("3", default_nproc=4) == Shape(3, 3, 4)
    assert parse_j("1:3", default_nproc=2) == Shape(1, 3, 2)


def test_ddp_single_node_defaults() -> None:
    app = ddp("--script", "train.py", "--", "--lr", "0.1")
    role = app.roles[0]
    assert (app.name, role.name) == ("train", "train")
    assert role.entrypoint == "bash"
    assert role.args[0] == "-c"
    assert (role.num_replicas, role.min_replicas) == (1, 1)
    assert (role.resource.cpu, role.resource.gpu, role.resource.memMB) == (2, 0, 1024)
    assert role.port_map == {"c10d": 29500}
    assert role.env["LOGLEVEL"] == "WARNING"
    assert role.env["TORCHX_TRACKING_EXPERIMENT_NAME"] == "default-experiment"
    assert role.env["TORCHX_TRACKING_RUN_NAME"] == "train"
    assert role.args == [
        "-c",
        TORCHRUN_CHECK + 'exec torchrun --rdzv_backend c10d --rdzv_endpoint localhost:0 "$@"',
        "torchrun",
        "--rdzv_id",
        "${app_id}",
        *("--nnodes", "1", "--nproc_per_node", "2", "--tee", "3", "train.py", "--lr", "0.1"),
    ]


def test_ddp_single_node_command_runs(tmp_path: Path) -> None:
    role = ddp("-j", "1x3", "-m", "pkg.trainer", "--", "--data", "a b", "$HOME", "it's").roles[0]
    assert role.name == "trainer"
    assert torchrun_argv(role, tmp=tmp_path) == [
        "--rdzv_backend",
        "c10d",
        "--rdzv_endpoint",
        "localhost:0",
        "--rdzv_id",
        "myapp-42",
        "--nnodes",
        "1",
        "--nproc_per_node",
        "3",
        "--tee",
        "3",
        "-m",
        "pkg.trainer",
        "--data",
        "a b",
        "$HOME",
        "it's",
    ]


def test_ddp_multi_node_reads_rank0_host_from_the_shell(tmp_path: Path) -> None:
    role = ddp("-j", "2x4", "--rdzv_port", "29999", "--script", "t.py", "--", "--x", "${replica_id}").roles[0]
    assert (role.num_replicas, role.min_replicas) == (2, 2)
    assert role.port_map == {"c10d": 29999}
    assert role.args[1] == TORCHRUN_CHECK + (
        'exec torchrun --rdzv_backend c10d --rdzv_endpoint "${${rank0_env}:-localhost}:29999" "$@"'
    )
    argv = torchrun_argv(role, replica_id=1, env={"TORCHX_RANK0_HOST": "node-0.cluster"}, tmp=tmp_path)
    assert argv == [
        "--rdzv_backend",
        "c10d",
        "--rdzv_endpoint",
        "node-0.cluster:29999",
        "--rdzv_id",
        "myapp-42",
        "--nnodes",
        "2",
        "--nproc_per_node",
        "4",
        "--tee",
        "3",
        "t.py",
        "--x",
        "1",
    ]
    # schedulers that leave the variable unset on the rank-0 node get localhost
    assert torchrun_argv(role, tmp=tmp_path)[3] == "localhost:29999"


def test_ddp_elastic(tmp_path: Path) -> None:
    role = ddp("-j", "1:4x8", "--script", "t.py").roles[0]
    assert (role.num_replicas, role.min_replicas) == (4, 1)
    argv = torchrun_argv(role, env={"TORCHX_RANK0_HOST": "h0"}, tmp=tmp_path)
    assert argv[argv.index("--nnodes") + 1] == "1:4"
    assert argv[argv.index("--rdzv_endpoint") + 1] == "h0:29500"


def test_ddp_static_backend_passes_node_rank(tmp_path: Path) -> None:
    role = ddp("-j", "3x1", "--rdzv_backend", "static", "--script", "t.py").roles[0]
    # as TorchX's bash -c string, the script names the backend and --node_rank; the rank is a word
    assert "--rdzv_backend static" in role.args[1]
    assert '--node_rank "$node_rank"' in role.args[1]
    assert role.args[2:4] == ["torchrun", "${replica_id}"]
    argv = torchrun_argv(role, replica_id=2, env={"TORCHX_RANK0_HOST": "h0"}, tmp=tmp_path)
    assert argv[:4] == ["--rdzv_backend", "static", "--rdzv_endpoint", "h0:29500"]
    assert argv[argv.index("--node_rank") + 1] == "2"
    single = ddp("-j", "1x2", "--rdzv_backend", "static", "--rdzv_port", "1234", "--script", "t.py").roles[0]
    argv = torchrun_argv(single, tmp=tmp_path)
    assert argv[3] == "localhost:1234"
    assert argv[argv.index("--node_rank") + 1] == "0"


def test_ddp_options() -> None:
    app = ddp(
        "-m",
        "trainer.main",
        "--name",
        "exp1/run7",
        "-h",
        "gpu.medium",
        "--env",
        "LOGLEVEL=INFO,FOO=bar",
        "--max_retries",
        "2",
        "--mounts",
        "type=bind,src=/d,dst=/data",
        "--debug",
        "--tee",
        "1",
        "--image",
        "img:1",
    )
    role = app.roles[0]
    assert app.name == "run7"
    assert role.name == "main"
    assert role.image == "img:1"
    assert (role.resource.cpu, role.resource.gpu) == (16, 2)
    assert role.env["LOGLEVEL"] == "INFO"
    assert role.env["FOO"] == "bar"
    assert role.env["TORCH_DISTRIBUTED_DEBUG"] == "DETAIL"
    assert role.env["TORCHX_TRACKING_EXPERIMENT_NAME"] == "exp1"
    assert role.max_retries == 2
    assert role.mounts == [specs.BindMount(src_path="/d", dst_path="/data")]
    assert role.args[role.args.index("--tee") + 1] == "1"
    assert ddp("--script", "a/b/c.py", "--name", "exp2/").name == "c"
    assert ddp("--script", "c.py", "--name", "myrun").name == "myrun"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--script", "t.py", "-m", "mod"], "exactly one of --script FILE or -m MODULE; got both --script and -m"),
        ([], "exactly one of --script FILE or -m MODULE; got neither --script nor -m"),
        (["--script", "t.py", "--rdzv_backend", "etcd"], "unknown --rdzv_backend 'etcd': use one of c10d, static"),
        (
            ["--script", "t.py", "--rdzv_backend", "static", "-j", "1:2x1"],
            "is elastic, which needs --rdzv_backend c10d",
        ),
        (["--script", "t.py", "-h", "nope"], "unknown named resource 'nope'"),
        (["--script", "t.py", "--mounts", "type=tmpfs,dst=/x"], "invalid mount type 'tmpfs'"),
    ],
)
def test_ddp_errors(argv: list[str], message: str) -> None:
    with pytest.raises(ComponentArgError) as info:
        materialize_appdef(dist.ddp, argv)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_spmd_takes_nproc_from_the_named_resource() -> None:
    app = materialize_appdef(dist.spmd, ["--script", "t.py", "-h", "gpu.large", "-j", "2"])
    role = app.roles[0]
    assert (role.num_replicas, role.resource.gpu) == (2, 4)
    assert "--nnodes 2 --nproc_per_node 4 " in " ".join(role.args)
    role = materialize_appdef(dist.spmd, ["-m", "m", "-j", "1:3"]).roles[0]  # default gpu.small: 1 GPU
    assert (role.num_replicas, role.min_replicas) == (3, 1)
    assert "--nnodes 1:3 --nproc_per_node 1 " in " ".join(role.args)
    role = materialize_appdef(dist.spmd, ["-m", "m", "-h", "cpu.large"]).roles[0]  # no GPU: one process
    assert "--nproc_per_node 1 " in " ".join(role.args)
    role = materialize_appdef(dist.spmd, ["-m", "m", "-h", "gpu.xlarge", "-j", "1x4"]).roles[0]
    assert "--nproc_per_node 4 " in " ".join(role.args)


def test_spmd_refuses_more_processes_than_gpus() -> None:
    with pytest.raises(ComponentArgError, match="starts 2 processes per node but gpu.small has 1 GPU"):
        materialize_appdef(dist.spmd, ["-m", "m", "-j", "1x2"])
    with pytest.raises(ComponentArgError, match="invalid -j 'abc': expected NNODES, MIN:MAX, NNODESxNPROC"):
        materialize_appdef(dist.spmd, ["-m", "m", "-j", "abc"])


@pytest.mark.parametrize("j", ["1x1", "2x1"])
def test_ddp_macro_values_are_data_and_script_args_arrive_as_given(j: str, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    app_id = hostile_value(str(marker))
    user = [*PASSTHROUGH_ARGS, "--id=${app_id}"]
    role = ddp("-j", j, "--rdzv_backend", "static", "--env", "E=$$", "--script", "t $$.py", "--", *user).roles[0]
    assert role.env["E"] == "$$$$"  # fills back to "$$"
    argv = torchrun_argv(role, replica_id=0, env={"TORCHX_RANK0_HOST": "h0"}, tmp=tmp_path, app_id=app_id)
    assert argv[argv.index("--rdzv_id") + 1] == app_id
    assert argv[argv.index("t $$.py") + 1 :] == [*PASSTHROUGH_ARGS, f"--id={app_id}"]
    assert not marker.exists()


def test_a_node_without_torchrun_is_told_what_to_install(tmp_path: Path) -> None:
    role = dist.ddp(script="train.py", j="1x1").roles[0]
    env = {"PATH": str(tmp_path)}  # neither torchrun nor nvidia-smi
    for tool in ("sh", "bash"):
        (tmp_path / tool).symlink_to(subprocess.run(["which", tool], capture_output=True, text=True).stdout.strip())
    proc = subprocess.run([role.entrypoint, *role.args], capture_output=True, text=True, env=env, timeout=30)
    assert proc.returncode == 127
    assert "torchrun is not on PATH" in proc.stderr
    assert "CPU wheel: pip install torch --index-url" in proc.stderr
    (tmp_path / "nvidia-smi").write_text("#!/bin/sh\n")
    (tmp_path / "nvidia-smi").chmod(0o755)
    proc = subprocess.run([role.entrypoint, *role.args], capture_output=True, text=True, env=env, timeout=30)
    assert proc.returncode == 127
    assert proc.stderr.strip().endswith("environment: pip install torch")
