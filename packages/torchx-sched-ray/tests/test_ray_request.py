"""The job built for an app (dry run): macros as data, env, resources, options, app ids."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from torchx import specs
from torchx.specs.macros import RANK0_ENV
from torchx.specs.runopts import InvalidRunConfigException
from torchx.testing import hostile_value, macro_probe, macro_probe_output
from torchx_sched_ray.request import make_app_id, role_spec, split_app_id
from torchx_sched_ray.scheduler import RayScheduler, create_scheduler
from torchx_sched_ray.torchx_ray_driver.placeholders import IMG_ROOT, RANK0_HOST, REPLICA_ID
from torchx_sched_ray.torchx_ray_driver.replica import fill


def role(name: str = "trainer", **kw: object) -> specs.Role:
    base: dict[str, object] = {
        "image": "img",
        "entrypoint": "python",
        "args": ["-c", "pass"],
        "resource": specs.Resource(cpu=2, gpu=1, memMB=512, devices={"TPU": 4}),
    }
    base.update(kw)
    return specs.Role(name, **base)  # type: ignore[arg-type]


def dryrun(app: specs.AppDef, **cfg: object) -> tuple[RayScheduler, object]:
    sched = create_scheduler("test")
    return sched, sched.submit_dryrun(app, cfg).request  # type: ignore[arg-type]


def test_role_becomes_argv_env_and_resources_with_macros_filled() -> None:
    args = ["${app_id}", "r=${replica_id}", "${img_root}/x", "$${app_id}", "$(id) `x` 'q' \"d\""]
    app = specs.AppDef("my app", [role(args=args, num_replicas=3, env={"A": "${replica_id}", "B": "$$HOME"})])
    _, job = dryrun(app, address="http://h:1")
    spec = job.spec  # type: ignore[attr-defined]
    assert job.app_id == f"h:1-{job.submission_id}"
    assert job.submission_id.startswith("my-app-")  # type: ignore[attr-defined]
    (r,) = spec["roles"]
    assert r["num_replicas"] == 3
    assert r["argv"] == ["python", job.app_id, f"r={REPLICA_ID}", f"{IMG_ROOT}/x", "${app_id}", args[4]]  # type: ignore[attr-defined]
    assert r["env"] == {
        "TORCHX_ROLE_NAME": "trainer",
        "TORCHX_REPLICA_IDX": REPLICA_ID,
        "TORCHX_NUM_REPLICAS": "3",
        RANK0_ENV: RANK0_HOST,
        "PYTHONUNBUFFERED": "1",
        "A": REPLICA_ID,
        "B": "$HOME",
    }
    assert r["resources"] == {"CPU": 2, "GPU": 1, "memory": 512 * 1024 * 1024, "TPU": 4}
    values = {REPLICA_ID: "2", IMG_ROOT: "/wd", RANK0_HOST: "10.0.0.1"}
    assert [fill(a, values) for a in r["argv"][1:4]] == [job.app_id, "r=2", "/wd/x"]  # type: ignore[attr-defined]
    assert fill(r["env"][RANK0_ENV], values) == "10.0.0.1"


def test_app_level_settings_and_printable_request() -> None:
    app = specs.AppDef("a", [role("x", max_retries=3), role("y", max_retries=1)])
    _, job = dryrun(app, placement_strategy="strict_pack", placement_timeout=5)
    spec = job.spec  # type: ignore[attr-defined]
    assert (spec["max_retries"], spec["placement_strategy"], spec["placement_timeout"]) == (1, "STRICT_PACK", 5)
    assert json.loads(job.metadata["torchx.roles"]) == [["x", 1], ["y", 1]]  # type: ignore[attr-defined]
    shown = json.loads(str(job))
    assert shown["entrypoint"] == "python -m torchx_ray_driver"
    assert shown["app.json"] == spec


def test_working_dir_and_requirements(tmp_path: Path) -> None:
    req = tmp_path / "requirements.txt"
    req.write_text("# pinned\nsix==1.16.0  # tiny\n\nidna\n")
    app = specs.AppDef("a", [role()])
    _, job = dryrun(app, working_dir=str(tmp_path), requirements=str(req))
    assert job.runtime_env == {"working_dir": str(tmp_path), "pip": ["six==1.16.0", "idna"]}  # type: ignore[attr-defined]


def test_workspace_is_staged_and_shipped_then_removed(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "pkg").mkdir(parents=True)
    (ws / "pkg" / "a.py").write_text("x = 1\n")
    (ws / "skip.log").write_text("no\n")
    (ws / ".torchxignore").write_text("*.log\n")
    app = specs.AppDef("a", [role(), role("other")])
    sched = create_scheduler("test")
    for r in app.roles:
        r.workspace = specs.Workspace({str(ws): ""})
    sched.build_workspaces(app.roles, {})
    staged = app.roles[0].image
    assert app.roles[1].image == staged
    assert sched.staged == [staged]
    assert sorted(p.name for p in Path(staged).rglob("*")) == [".torchxignore", "a.py", "pkg"]
    job = sched.submit_dryrun(app, {}).request
    assert job.runtime_env["working_dir"] == staged
    sched.close()
    assert not Path(staged).exists()


@pytest.mark.parametrize(
    ("cfg", "key"),
    [
        ({"address": "ray://h:10001"}, "address"),
        ({"address": "http://h"}, "address"),
        ({"placement_strategy": "RANDOM"}, "placement_strategy"),
        ({"placement_timeout": 0}, "placement_timeout"),
        ({"working_dir": "/no/such/dir"}, "working_dir"),
        ({"requirements": "/no/such/requirements.txt"}, "requirements"),
    ],
)
def test_bad_options_say_which_and_how(cfg: dict[str, object], key: str) -> None:
    with pytest.raises(InvalidRunConfigException, match=key):
        dryrun(specs.AppDef("a", [role()]), **cfg)


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        ({"args": ["a\0b"]}, "NUL"),
        ({"env": {"BAD-NAME": "x"}}, "not a valid variable name"),
        ({"env": {"X": "a\0"}}, "NUL"),
        ({"num_replicas": 0}, "positive"),
    ],
)
def test_app_the_job_cannot_carry(bad: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        dryrun(specs.AppDef("a", [role(**bad)]))


def test_app_ids_carry_the_address(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAY_API_SERVER_ADDRESS", raising=False)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    for address in ("http://127.0.0.1:8265", "http://my-head.example:80", "https://secure-host:8443"):
        app_id = make_app_id(address, "job-abc-123")
        assert "/" not in app_id
        assert split_app_id(app_id) == (address, "job-abc-123")
    assert split_app_id("raysubmit_XyZ") == ("http://127.0.0.1:8265", "raysubmit_XyZ")
    monkeypatch.setenv("RAY_ADDRESS", "http://other:9000/")
    assert split_app_id("raysubmit_XyZ") == ("http://other:9000", "raysubmit_XyZ")


def test_dryrun_of_1000_replicas_is_one_role_entry() -> None:
    _, job = dryrun(specs.AppDef("big", [role(num_replicas=1000)]))
    assert len(job.spec["roles"]) == 1
    assert job.spec["roles"][0]["num_replicas"] == 1000  # type: ignore[attr-defined]


def test_macro_values_are_data_on_the_replicas(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    app_id = hostile_value(str(marker))  # a real id is <host>:<port>-<submission id>: this checks the words
    cwd = tmp_path / hostile_value(str(marker))  # the job's working dir: the img_root macro
    cwd.mkdir(parents=True)
    spec = role_spec(macro_probe("img", str(marker), num_replicas=2), app_id)
    for k in range(2):  # fill the placeholders as the driver does on the cluster, then exec (no shell)
        values = {REPLICA_ID: str(k), IMG_ROOT: str(cwd), RANK0_HOST: "h0"}
        argv = [fill(a, values) for a in spec["argv"]]
        env = {"PATH": os.defpath, **{key: fill(v, values) for key, v in spec["env"].items()}}
        out = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=True)
        assert out.stdout == macro_probe_output(str(cwd), app_id, k)
    assert not marker.exists()
