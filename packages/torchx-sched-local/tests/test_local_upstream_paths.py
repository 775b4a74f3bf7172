"""Upstream's module paths of the local schedulers and the docker workspace are this package's."""

from __future__ import annotations

import os
from pathlib import Path
from unittest import mock

import pytest


def test_upstream_paths() -> None:
    from torchx.schedulers.docker_scheduler import DockerOpts, DockerScheduler, has_docker
    from torchx.schedulers.local_scheduler import LocalOpts, LocalScheduler, create_scheduler
    from torchx.workspace.docker_workspace import DockerWorkspaceMixin
    from torchx_sched_local import docker_scheduler, docker_workspace, local_scheduler

    assert LocalScheduler is local_scheduler.LocalScheduler
    assert set(LocalOpts.__annotations__) == {k for k, _ in local_scheduler.LocalOpts.as_runopts()}
    assert isinstance(create_scheduler("s"), local_scheduler.LocalScheduler)
    assert DockerScheduler is docker_scheduler.DockerScheduler
    assert set(DockerOpts.__annotations__) == {k for k, _ in docker_scheduler.DockerOpts.as_runopts()}
    assert DockerWorkspaceMixin is docker_workspace.DockerWorkspaceMixin
    assert isinstance(has_docker(), bool)


def test_upstream_local_image_providers_and_records(tmp_path: Path) -> None:
    from torchx.schedulers.local_scheduler import (
        CWDImageProvider,
        ImageProvider,
        LocalDirectoryImageProvider,
        PopenRequest,
        ReplicaParam,
    )
    from torchx.specs import Role

    role = Role(name="r", image="img", entrypoint="run.sh", args=["a"], env={"K": "V"})
    cwd = CWDImageProvider()
    assert isinstance(cwd, ImageProvider)
    assert cwd.fetch("anything") == os.getcwd() == cwd.get_cwd("anything")
    assert cwd.get_entrypoint("/x", role) == "run.sh"
    param = cwd.get_replica_param(cwd.fetch_role(role), role, stdout="o")
    assert param == ReplicaParam(["run.sh", "a"], {"K": "V"}, "o", None, None, os.getcwd())

    local = LocalDirectoryImageProvider()
    d = str(tmp_path)
    assert local.fetch(d) == d == local.get_cwd(d)
    assert local.get_entrypoint(d, role) == "run.sh"
    with pytest.raises(ValueError):
        local.fetch(os.path.join(d, "missing"))

    req = PopenRequest("app", "/logs", {"r": [param]}, {"r": ["/logs/r/0"]})
    assert req.role_params["r"][0].args == ["run.sh", "a"]


def test_the_dry_run_request_reads_as_torchx_s_popen_request(tmp_path: Path) -> None:
    from torchx.schedulers.local_scheduler import LocalScheduler, ReplicaParam
    from torchx.specs import AppDef, Role

    master = Role("master", image="img", entrypoint="master.par", args=["arg1"], env={"ENV_VAR_1": "VAL1"})
    trainer = Role("trainer", image="img", entrypoint="trainer.par", num_replicas=2)
    sched = LocalScheduler("s", state_dir=str(tmp_path / "state"))
    req = sched.submit_dryrun(AppDef("test_app", [master, trainer]), {"log_dir": str(tmp_path / "logs")}).request
    assert req.log_dir == req.log_root == str(tmp_path / "logs" / "s" / req.app_id)  # <log_dir>/<session>/<app_id>
    assert req.role_log_dirs == {
        "master": [os.path.join(req.log_dir, "master", "0")],
        "trainer": [os.path.join(req.log_dir, "trainer", str(k)) for k in (0, 1)],
    }
    params = req.role_params
    assert [len(params[r]) for r in ("master", "trainer")] == [1, 2]
    for name, replicas in params.items():
        for k, p in enumerate(replicas):
            log_dir = req.role_log_dirs[name][k]
            assert isinstance(p, ReplicaParam)
            assert p.args == req.replicas[[r.role for r in req.replicas].index(name) + k].cmd
            assert p.env["TORCHELASTIC_ERROR_FILE"] == os.path.join(log_dir, "error.json")
            assert p.env["PET_LOG_DIR"] == os.path.join(req.log_dir, "torchelastic", name)  # per role
            assert (p.stdout, p.stderr, p.combined) == (f"{log_dir}/stdout.log", f"{log_dir}/stderr.log", None)
            assert p.cwd == os.getcwd()
            assert not os.path.exists(log_dir)  # a dry run makes no directory
    assert params["master"][0].args == ["master.par", "arg1"]
    assert params["master"][0].env["ENV_VAR_1"] == "VAL1"
    # a view: changing it changes nothing that runs
    params["master"][0].env["ENV_VAR_1"] = "changed"
    assert req.role_params["master"][0].env["ENV_VAR_1"] == "VAL1"
    assert "role_params" not in vars(req)  # not stored with the job
    print(req)
    own = Role("own", image="img", entrypoint="x", env={"PET_LOG_DIR": "/foo/bar", "TORCHELASTIC_ERROR_FILE": "f.json"})
    env = sched.submit_dryrun(AppDef("a", [own]), {}).request.role_params["own"][0].env
    assert (env["PET_LOG_DIR"], env["TORCHELASTIC_ERROR_FILE"]) == ("/foo/bar", "f.json")  # the role's own win


def test_upstream_docker_network_names() -> None:
    pytest.importorskip("docker")
    from torchx.schedulers.docker_scheduler import NETWORK, ensure_network

    assert NETWORK == "torchx"
    client = mock.MagicMock()
    other = mock.MagicMock()
    other.name = "torchx-app1"
    client.networks.list.return_value = [other]
    ensure_network(client)
    client.networks.create.assert_called_once_with("torchx", driver="bridge")
    existing = mock.MagicMock()
    existing.name = "torchx"
    client.networks.list.return_value = [existing]
    client.networks.create.reset_mock()
    ensure_network(client)
    client.networks.create.assert_not_called()


@pytest.mark.parametrize("session, level", [("sess-1.a", "sess-1.a"), ("../up", "_session"), (".hidden", "_session")])
def test_the_session_level_of_a_log_dir_is_a_plain_name(tmp_path: Path, session: str, level: str) -> None:
    from torchx.schedulers.local_scheduler import LocalScheduler
    from torchx.specs import AppDef, Role

    sched = LocalScheduler(session, state_dir=str(tmp_path / "state"))
    app = AppDef("a", [Role("r", image="img", entrypoint="x")])
    req = sched.submit_dryrun(app, {"log_dir": str(tmp_path / "logs")}).request
    assert req.log_root == str(tmp_path / "logs" / level / req.app_id)
