"""aws_batch request building (no AWS calls)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from torchx import specs
from torchx.testing import hostile_value, macro_probe, macro_probe_output
from torchx_sched_aws.batch import CANCEL_REASON, job_state, node_ranges
from torchx_sched_aws.batch_request import BatchOpts, build_job, job_name

HOSTILE = ["it's", 'say "hi"', "$HOME", "`id`", "a;b|c&d", "back\\slash", "*", "", "new\nline", "€ ünï"]


def opts(**kw: object) -> BatchOpts:
    return BatchOpts.from_cfg({"queue": "q", "user": "alice", **kw})


def env_of(container: dict) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container["environment"]}


def role(**kw: object) -> specs.Role:
    base: dict = {
        "name": "trainer",
        "image": "img:1",
        "entrypoint": "echo",
        "resource": specs.resource(cpu=2, memMB=1024),
    }
    base.update(kw)
    return specs.Role(**base)


def test_single_replica_is_a_container_job_run_directly() -> None:
    app = specs.AppDef("echo", roles=[role(args=["hi", specs.macros.replica_id, specs.macros.app_id], max_retries=2)])
    job = build_job(app, opts(), "echo-1")
    d = job.job_definition
    assert d["type"] == "container"
    assert "nodeProperties" not in d
    c = d["containerProperties"]
    assert c["command"] == ["echo", "hi", "0", "q:echo-1"]
    assert env_of(c) == {
        "TORCHX_ROLE_IDX": "0",
        "TORCHX_ROLE_NAME": "trainer",
        "TORCHX_REPLICA_IDX": "0",
        "TORCHX_RANK0_HOST": "localhost",
    }
    assert c["resourceRequirements"] == [{"type": "VCPU", "value": "2"}, {"type": "MEMORY", "value": "1024"}]
    assert c["linuxParameters"] == {"devices": [], "sharedMemorySize": 1024}
    assert c["logConfiguration"] == {"logDriver": "awslogs"}
    assert c["privileged"] is False
    assert d["retryStrategy"] == {"attempts": 3}
    assert job.app_id == "q:echo-1"
    assert job.submit == {"jobName": "echo-1", "jobQueue": "q", "tags": d["tags"]}
    assert d["tags"]["torchx.pytorch.org/user"] == "alice"


def test_multinode_has_one_node_range_per_role() -> None:
    app = specs.AppDef(
        "ddp",
        roles=[
            role(name="worker", num_replicas=3, resource=specs.resource(h="aws_p4d.24xlarge")),
            role(name="ps", num_replicas=1, max_retries=4),
        ],
    )
    d = build_job(
        app, opts(privileged=True, job_role_arn="arn:job", execution_role_arn="arn:exec"), "ddp-1"
    ).job_definition
    assert d["type"] == "multinode"
    assert d["retryStrategy"] == {"attempts": 5}
    nodes = d["nodeProperties"]
    assert nodes["numNodes"] == 4
    assert nodes["mainNode"] == 0
    ranges = nodes["nodeRangeProperties"]
    assert [r["targetNodes"] for r in ranges] == ["0:2", "3"]
    worker, ps = (r["container"] for r in ranges)
    assert worker["instanceType"] == "p4d.24xlarge"
    assert "instanceType" not in ps
    assert {"type": "GPU", "value": "8"} in worker["resourceRequirements"]
    assert [d["hostPath"] for d in worker["linuxParameters"]["devices"]] == [
        f"/dev/infiniband/uverbs{i}" for i in range(4)
    ]
    assert worker["privileged"]
    assert worker["jobRoleArn"] == "arn:job"
    assert worker["executionRoleArn"] == "arn:exec"
    assert env_of(ps)["TORCHX_ROLE_IDX"] == "1"
    assert env_of(ps)["TORCHX_ROLE_NAME"] == "ps"
    assert "TORCHX_REPLICA_IDX" not in env_of(ps)  # per node: exported by the wrapper
    assert worker["command"][:2] == ["/bin/sh", "-c"]


def run_wrapper(container: dict, node_index: int, main_addr: str | None) -> str:
    """Runs a node's ``sh -c`` command here, as Batch would on node ``node_index``."""
    env = {"PATH": os.environ["PATH"], "AWS_BATCH_JOB_NODE_INDEX": str(node_index), **env_of(container)}
    if main_addr:
        env["AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS"] = main_addr
    return subprocess.run(container["command"], env=env, capture_output=True, text=True, check=True).stdout


def test_wrapper_quotes_every_user_word_and_expands_replica_id() -> None:
    args = ["%s\n", *HOSTILE, f"--rank={specs.macros.replica_id}", f"{specs.macros.replica_id}'$x'"]
    app = specs.AppDef(
        "q",
        roles=[
            role(name="a", num_replicas=2),
            role(
                name="b",
                entrypoint="printf",
                args=args,
                num_replicas=3,
                env={"MY_RANK": f"r{specs.macros.replica_id}`", "PLAIN": "$HOME"},
            ),
        ],
    )
    ranges = build_job(app, opts(), "q-1").job_definition["nodeProperties"]["nodeRangeProperties"]
    assert ranges[1]["targetNodes"] == "2:4"
    b = ranges[1]["container"]
    assert env_of(b)["PLAIN"] == "$HOME"
    assert "MY_RANK" not in env_of(b)
    out = run_wrapper(b, node_index=3, main_addr="10.0.0.7")
    assert out.split("\n")[:-1] == [*HOSTILE[:8], *HOSTILE[8].split("\n"), HOSTILE[9], "--rank=1", "1'$x'"]

    b_env = {**b, "command": ["/bin/sh", "-c", b["command"][2].rsplit("; exec ", 1)[0] + "; env"]}
    printed = run_wrapper(b_env, node_index=4, main_addr=None)
    assert "TORCHX_REPLICA_IDX=2\n" in printed
    assert "MY_RANK=r2`\n" in printed
    assert "TORCHX_RANK0_HOST=localhost\n" in printed  # the main node has no MAIN_NODE address
    printed = run_wrapper(b_env, node_index=2, main_addr="10.0.0.7")
    assert "TORCHX_REPLICA_IDX=0\n" in printed
    assert "TORCHX_RANK0_HOST=10.0.0.7\n" in printed


def test_mounts_and_devices() -> None:
    mounts = specs.parse_mounts(
        [
            "type=bind,src=/data,dst=/mnt/data,readonly",
            "type=volume,src=fs-123,dst=/efs",
            "type=device,src=/dev/fuse,perm=rw",
        ]
    )
    c = build_job(specs.AppDef("m", roles=[role(mounts=mounts)]), opts(), "m-1").job_definition["containerProperties"]
    assert c["volumes"] == [
        {"name": "mount_0", "host": {"sourcePath": "/data"}},
        {"name": "mount_1", "efsVolumeConfiguration": {"fileSystemId": "fs-123"}},
    ]
    assert c["mountPoints"] == [
        {"containerPath": "/mnt/data", "readOnly": True, "sourceVolume": "mount_0"},
        {"containerPath": "/efs", "readOnly": False, "sourceVolume": "mount_1"},
    ]
    assert c["linuxParameters"]["devices"] == [
        {"hostPath": "/dev/fuse", "containerPath": "/dev/fuse", "permissions": ["READ", "WRITE"]}
    ]


def test_fair_share_and_tags() -> None:
    app = specs.AppDef("my app!", roles=[role()], metadata={"team": "ml/infra", "bad key?": "v#1"})
    job = build_job(app, opts(share_id="teamA", priority=7), "x-1")
    assert job.submit["shareIdentifier"] == "teamA"
    assert job.submit["schedulingPriorityOverride"] == 7
    assert job.job_definition["schedulingPriority"] == 7  # where TorchX puts it
    tags = job.job_definition["tags"]
    assert tags["team"] == "ml/infra"
    assert tags["bad key_"] == "v_1"
    assert tags["torchx.pytorch.org/app-name"] == "my app_"
    assert "torchx.pytorch.org/version" in tags


@pytest.mark.parametrize(
    "app_kw, cfg, message",
    [
        ({"max_retries": 10}, {}, "more than Batch allows"),
        ({"image": ""}, {}, "has no image"),
        ({"resource": specs.Resource(cpu=1, gpu=0, memMB=64, devices={"x.com/fpga": 1})}, {}, "cannot map"),
        ({"num_replicas": 2, "env": {"BAD-NAME": specs.macros.replica_id}}, {}, "BAD-NAME"),
    ],
)
def test_bad_input_gets_one_clear_error(app_kw: dict, cfg: dict, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)) as e:
        build_job(specs.AppDef("x", roles=[role(**app_kw)]), opts(**cfg), "x-1")
    assert "\n" not in str(e.value)


def test_priority_without_share_id_is_ignored_as_torchx() -> None:
    job = build_job(specs.AppDef("x", roles=[role()]), opts(priority=5), "x-1")
    assert "schedulingPriorityOverride" not in job.submit
    assert "schedulingPriority" not in job.job_definition
    assert job.share_id is None


def test_job_name_is_valid_for_batch() -> None:
    for name in ["echo", "My App_v2!", "-" * 3, "x" * 300]:
        jn = job_name(specs.AppDef(name, roles=[role()]))
        assert re.fullmatch(r"[a-z0-9][a-z0-9_\-]{0,127}", jn), jn
    assert job_name(specs.AppDef("a", roles=[role()])) != job_name(specs.AppDef("a", roles=[role()]))


def test_runopts_are_declared() -> None:
    ro = BatchOpts.as_runopts()
    names = {name for name, _ in ro}
    assert names == {
        "queue",
        "user",
        "privileged",
        "share_id",
        "priority",
        "job_role_arn",
        "execution_role_arn",
        "image_repo",
    }
    assert ro.get("queue").is_required  # type: ignore[union-attr]
    assert all(o.help for _, o in ro)


def test_job_states() -> None:
    assert job_state({"status": "RUNNABLE"}) == specs.AppState.PENDING
    assert job_state({"status": "SUCCEEDED"}) == specs.AppState.SUCCEEDED
    assert job_state({"status": "FAILED", "statusReason": "Essential container exited"}) == specs.AppState.FAILED
    assert job_state({"status": "FAILED", "statusReason": CANCEL_REASON}) == specs.AppState.CANCELLED
    assert job_state({"status": "WHAT"}) == specs.AppState.UNKNOWN


def test_node_ranges_of_a_description() -> None:
    container = {"environment": [{"name": "TORCHX_ROLE_NAME", "value": "w"}]}
    job = {
        "nodeProperties": {
            "numNodes": 5,
            "nodeRangeProperties": [
                {"targetNodes": "0:2", "container": container},
                {"targetNodes": "3:", "container": {}},
            ],
        }
    }
    assert [r[:3] for r in node_ranges(job)] == [("w", 0, 2), ("role1", 3, 4)]
    assert [r[:3] for r in node_ranges({"container": container})] == [("w", 0, 0)]


@pytest.mark.parametrize("replicas", [1, 2])
def test_macro_values_are_data_on_every_node(replicas: int, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    name = hostile_value(str(marker))  # part of the app_id macro (a real job name is [a-z0-9_-])
    job = build_job(specs.AppDef("m", [macro_probe("img:1", str(marker), num_replicas=replicas)]), opts(), name)
    d = job.job_definition
    containers = (
        [r["container"] for r in d["nodeProperties"]["nodeRangeProperties"]] * replicas
        if replicas > 1
        else [d["containerProperties"]]
    )
    for k, c in enumerate(containers):
        assert run_wrapper(c, node_index=k, main_addr="10.0.0.7") == macro_probe_output("", job.app_id, k)
    assert job.app_id == f"q:{name}"
    assert not marker.exists()


def test_array_job_runs_each_elements_own_args_and_env() -> None:
    from torchx_sched_aws.batch_request import build_array_job, split_array_element_id

    apps = [
        specs.AppDef(
            f"t{i}",
            roles=[role(entrypoint="printf", args=["%s|", v, f"{specs.macros.app_id}"], env={"V": v, "SAME": "1"})],
        )
        for i, v in enumerate(HOSTILE)
    ]
    job = build_array_job(apps, opts(), "sw-1")
    assert job.submit["arrayProperties"] == {"size": len(HOSTILE)}
    definition = job.job_definition
    assert definition["type"] == "container"
    assert "nodeProperties" not in definition
    container = definition["containerProperties"]
    assert env_of(container)["SAME"] == "1"
    assert "V" not in env_of(container)
    for i, value in enumerate(HOSTILE):
        # real Batch sets AWS_BATCH_JOB_ARRAY_INDEX; moto only AWS_BATCH_JOB_ID=<parent>:<index>
        for extra in ({"AWS_BATCH_JOB_ARRAY_INDEX": str(i)}, {"AWS_BATCH_JOB_ID": f"abc-123:{i}"}):
            env = {"PATH": os.environ["PATH"], **env_of(container), **extra}
            shown = [
                *container["command"][:2],
                container["command"][2].replace("exec printf", "printf '%s|' \"$V\"; exec printf"),
            ]
            out = subprocess.run(shown, env=env, capture_output=True, text=True, check=True).stdout
            assert out == f"{value}|{value}|q:sw-1[{i}]|"
    assert split_array_element_id("q:sw-1[3]") == ("q:sw-1", 3)
    assert split_array_element_id("q:sw-1") == ("q:sw-1", None)


def test_array_job_refusals() -> None:
    from torchx_sched_aws.batch_request import ArrayShapeError, build_array_job

    one = specs.AppDef("a", roles=[role()])
    with pytest.raises(ArrayShapeError, match="2 to 10000"):
        build_array_job([one], opts(), "x")
    with pytest.raises(ArrayShapeError, match="one replica"):
        build_array_job([one, specs.AppDef("b", roles=[role(num_replicas=2)])], opts(), "x")
    with pytest.raises(ArrayShapeError, match="differ only"):
        build_array_job([one, specs.AppDef("b", roles=[role(image="other:2")])], opts(), "x")
