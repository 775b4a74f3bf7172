"""The environment a launched job gets (TorchX sets it in ``Runner.dryrun``)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from torchx.testing import run_torchx

pytest.importorskip("torchx_sched_local")
pytest.importorskip("torchx_components")

PRINT_ENV = """\
import json, os
print("ENV " + json.dumps({k: v for k, v in os.environ.items() if k.startswith("TORCHX_")}))
"""

TRACKER_VARS = ("TORCHX_TRACKERS", "TORCHX_TRACKER_FSSPEC_CONFIG", "TORCHX_TRACKER_MINE_CONFIG", "TORCHX_PARENT_RUN_ID")


@pytest.fixture(autouse=True)
def no_tracker_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in TRACKER_VARS:
        monkeypatch.delenv(var, raising=False)


def job_env(proc_stdout: str) -> dict[str, str]:
    line = next(line for line in proc_stdout.splitlines() if "ENV {" in line)
    return json.loads(line.split("ENV ", 1)[1])  # type: ignore[no-any-return]


def test_job_gets_job_id_trackers_and_parent_from_config(isolated: Path, write: Callable[[Path, str], Path]) -> None:
    write(isolated / "env.py", PRINT_ENV)
    write(isolated / ".torchxconfig", "[torchx:tracker]\nfsspec =\n\n[tracker:fsspec]\nconfig = /tmp/tracking\n")
    proc = run_torchx("run", "-s", "local_cwd", "--parent_run_id", "parent-1", "utils.python", "env.py")
    assert proc.returncode == 0, proc.stderr
    handle = proc.stdout.splitlines()[0]
    env = job_env(proc.stdout)
    assert env["TORCHX_JOB_ID"] == handle
    assert env["TORCHX_TRACKERS"] == "fsspec"
    assert env["TORCHX_TRACKER_FSSPEC_CONFIG"] == "/tmp/tracking"
    assert env["TORCHX_PARENT_RUN_ID"] == "parent-1"


def test_launcher_environment_overrides_config(
    isolated: Path, script: Callable[..., subprocess.CompletedProcess[str]], write: Callable[[Path, str], Path]
) -> None:
    write(isolated / ".torchxconfig", "[torchx:tracker]\nfsspec =\n\n[tracker:fsspec]\nconfig = /tmp/tracking\n")
    proc = script(
        isolated / "launch.py",
        """\
        import os
        import torchx.specs as specs
        from torchx.runner import get_runner

        os.environ["TORCHX_TRACKERS"] = "fsspec,mine"
        os.environ["TORCHX_TRACKER_FSSPEC_CONFIG"] = "/from/env"
        os.environ["TORCHX_TRACKER_MINE_CONFIG"] = "mine-config"
        os.environ["TORCHX_PARENT_RUN_ID"] = "env-parent"
        role = specs.Role("r", image="/tmp", entrypoint="true", resource=specs.Resource(cpu=1, gpu=0, memMB=64),
                          env={"TORCHX_JOB_ID": "mine", "OTHER": "kept"})
        app = specs.AppDef("envtest", roles=[role])
        with get_runner() as runner:
            info = runner.dryrun(app, "local_cwd", parent_run_id="arg-parent")
        env = info._app.roles[0].env
        for key in ("TORCHX_JOB_ID", "TORCHX_TRACKERS", "TORCHX_TRACKER_FSSPEC_CONFIG",
                    "TORCHX_TRACKER_MINE_CONFIG", "TORCHX_PARENT_RUN_ID", "OTHER"):
            print(key, env.get(key))
        print("caller's app has them", app.roles[0].env == env)
        """,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "TORCHX_JOB_ID local_cwd://torchx/${app_id}",  # set by torchx, over the role's own
        "TORCHX_TRACKERS fsspec,mine",
        "TORCHX_TRACKER_FSSPEC_CONFIG /from/env",
        "TORCHX_TRACKER_MINE_CONFIG mine-config",
        "TORCHX_PARENT_RUN_ID env-parent",  # the launcher's variable wins over the argument, as in TorchX
        "OTHER kept",
        "caller's app has them True",  # as TorchX, the AppDef passed in gets them too
    ]


def test_no_tracker_variables_without_trackers(isolated: Path, write: Callable[[Path, str], Path]) -> None:
    write(isolated / "env.py", PRINT_ENV)
    proc = run_torchx("run", "-s", "local_cwd", "utils.python", "env.py")
    env = job_env(proc.stdout)
    assert env["TORCHX_JOB_ID"] == proc.stdout.splitlines()[0]
    assert not {"TORCHX_TRACKERS", "TORCHX_PARENT_RUN_ID"} & set(env)


def test_app_run_in_the_job_records_to_the_configured_tracker(
    isolated: Path, write: Callable[[Path, str], Path]
) -> None:
    pytest.importorskip("torchx_tracker")
    pytest.importorskip("fsspec")
    store = isolated / "tracking"
    write(isolated / ".torchxconfig", f"[torchx:tracker]\nfsspec =\n\n[tracker:fsspec]\nconfig = {store}\n")
    write(
        isolated / "train.py",
        """\
        from torchx.tracker import app_run_from_env
        run = app_run_from_env()
        run.add_metadata(lr=0.1)
        print("RUN", run.job_id())
        """,
    )
    proc = run_torchx("run", "-s", "local_cwd", "--parent_run_id", "exp-7", "utils.python", "train.py")
    assert proc.returncode == 0, proc.stderr
    handle = proc.stdout.splitlines()[0]
    assert f"RUN {handle}" in proc.stdout
    listed = run_torchx("tracker", "list", "jobs", "--parent-run-id", "exp-7")
    assert handle in listed.stdout, listed.stderr


def test_module_function_tracker_names_give_valid_variable_names(
    isolated: Path, script: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    proc = script(
        isolated / "launch.py",
        """\
        import os
        import torchx.specs as specs
        from torchx.runner import get_runner

        os.environ["TORCHX_TRACKERS"] = "my_pkg.tracking:create"
        os.environ["TORCHX_TRACKER_MY_PKG.TRACKING:CREATE_CONFIG"] = "c1"  # TorchX's spelling
        role = specs.Role("r", image="/tmp", entrypoint="true", resource=specs.Resource(cpu=1, gpu=0, memMB=64))
        with get_runner() as runner:
            env = runner.dryrun(specs.AppDef("t", roles=[role]), "local_cwd")._app.roles[0].env
        print(env["TORCHX_TRACKERS"], env["TORCHX_TRACKER_MY_PKG_TRACKING_CREATE_CONFIG"])
        """,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["my_pkg.tracking:create", "c1"]
