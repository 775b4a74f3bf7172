"""Run options spelled as TorchX 0.7's ``lsf``, ``ray`` and ``aws_sagemaker`` schedulers spell
them: a ``.torchxconfig`` or ``-cfg`` written for TorchX works unchanged where the option means
something for our scheduler, and is refused in one line (saying what to do) where it does not.

Pure request building (dry runs): no backend is contacted.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from torchx import specs
from torchx.runner import get_runner
from torchx.specs.runopts import InvalidRunConfigException


def app(image: str = "/tmp", replicas: int = 1) -> specs.AppDef:
    role = specs.Role(
        "trainer", image=image, entrypoint="python", args=["train.py", "--lr", "0.1"],
        num_replicas=replicas, resource=specs.Resource(cpu=1, gpu=0, memMB=512),
    )  # fmt: skip
    return specs.AppDef("names", roles=[role])


def dryrun_request(scheduler: str, cfg_str: str, application: specs.AppDef | None = None) -> object:
    """The native request of a dry run with ``-cfg cfg_str`` (parsed as the CLI parses it)."""
    with get_runner() as runner:
        opts = runner.scheduler_run_opts(scheduler)
        cfg = opts.cfg_from_str(cfg_str)
        return runner.dryrun(application or app(), scheduler, cfg=cfg).request


# ---------------------------------------------------------------- lsf


def test_lsf_upstream_names_reach_bsub(tmp_path: Path) -> None:
    pytest.importorskip("torchx_sched_lsf")
    jobdir = tmp_path / "jobs"
    req = dryrun_request("lsf", f"lsf_queue=normal,jobdir={jobdir},host_network=true")
    args = req.args  # type: ignore[attr-defined]
    assert args[args.index("-q") + 1] == "normal"
    assert req.workdir == str(jobdir)  # type: ignore[attr-defined]


def test_lsf_upstream_torchxconfig_works_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torchx_sched_lsf")
    (tmp_path / ".torchxconfig").write_text(
        textwrap.dedent(f"""\
            [lsf]
            lsf_queue = short
            jobdir = {tmp_path / "out"}
            """)
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TORCHXCONFIG", raising=False)
    with get_runner() as runner:
        req = runner.dryrun(app(), "lsf").request
    assert req.args[req.args.index("-q") + 1] == "short"  # type: ignore[attr-defined]
    assert req.workdir == str(tmp_path / "out")  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("cfg", "says"),
    [
        ("container_workdir=/workspace", "job_dir"),
        ("shm_size=2g", "/dev/shm"),
        ("host_network=false", "host's network"),
    ],
)
def test_lsf_docker_options_are_refused_clearly(cfg: str, says: str) -> None:
    pytest.importorskip("torchx_sched_lsf")
    with pytest.raises(InvalidRunConfigException, match="not supported") as e:
        dryrun_request("lsf", cfg)
    assert says in str(e.value)
    assert "\n" not in str(e.value)


def test_lsf_runopts_lists_upstream_names() -> None:
    pytest.importorskip("torchx_sched_lsf")
    with get_runner() as runner:
        text = repr(runner.scheduler_run_opts("lsf"))
    for name in ("lsf_queue", "jobdir", "container_workdir", "host_network", "shm_size"):
        assert name in text


# ---------------------------------------------------------------- ray


def test_ray_upstream_names_reach_the_job_submission(tmp_path: Path) -> None:
    pytest.importorskip("torchx_sched_ray")
    workdir = tmp_path / "src"
    workdir.mkdir()
    reqs = tmp_path / "requirements.txt"
    reqs.write_text("numpy\n")
    job = dryrun_request("ray", f"dashboard_address=10.1.2.3:8265,working_dir={workdir},requirements={reqs}")
    assert job.address == "http://10.1.2.3:8265"  # type: ignore[attr-defined]
    assert job.app_id.startswith("10.1.2.3:8265-")  # type: ignore[attr-defined]
    assert job.runtime_env["working_dir"] == str(workdir)  # type: ignore[attr-defined]
    assert job.runtime_env["pip"] == ["numpy"]  # type: ignore[attr-defined]


def test_ray_cluster_config_file_is_refused_clearly(tmp_path: Path) -> None:
    pytest.importorskip("torchx_sched_ray")
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("cluster_name: demo\n")
    with pytest.raises(InvalidRunConfigException, match="running cluster's Jobs API") as e:
        dryrun_request("ray", f"cluster_config_file={cluster},cluster_name=demo")
    assert "address=" in str(e.value) and "\n" not in str(e.value)


def test_ray_cluster_name_alone_is_ignored_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    pytest.importorskip("torchx_sched_ray")
    job = dryrun_request("ray", "cluster_name=demo,dashboard_address=127.0.0.1:8265")
    assert job.address == "http://127.0.0.1:8265"  # type: ignore[attr-defined]
    assert any("'cluster_name' (demo) is ignored" in r.getMessage() for r in caplog.records)


def test_ray_runopts_lists_upstream_names() -> None:
    pytest.importorskip("torchx_sched_ray")
    with get_runner() as runner:
        text = repr(runner.scheduler_run_opts("ray"))
    for name in ("cluster_config_file", "cluster_name", "dashboard_address", "working_dir", "requirements"):
        assert name in text
