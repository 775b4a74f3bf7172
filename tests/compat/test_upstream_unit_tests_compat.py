"""What TorchX 0.7's own unit tests expect of its documented API, written as code using it
would (issue 31 point 1; ``scripts/compat/upstream_tests.py`` runs upstream's tests themselves)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from torchx import specs
from torchx.schedulers.api import Scheduler
from torchx.specs import AppDryRunInfo, CfgVal, runopts
from torchx.specs.finder import ComponentValidationException, get_component


def test_an_empty_list_is_the_default_of_a_dict_option_too() -> None:
    opts = runopts()
    opts.add("K", type_=list[str], help="a list", default=[])
    opts.add("E", type_=dict[str, str], help="a dict", default=[])
    opts.add("L", type_=list[str], help="a list", default={})
    assert opts.cfg_from_str("E=f:b,F:B") == {"E": {"f": "b", "F": "B"}}
    assert opts.cfg_from_str("K=a;b") == {"K": ["a", "b"]}
    resolved = opts.resolve({})
    assert (resolved["E"], resolved["K"], resolved["L"]) == ({}, [], [])  # each the empty of its own type
    with pytest.raises(TypeError, match="default \\['a'\\] is not of type"):
        opts.add("bad", type_=dict[str, str], help="", default=["a"])


class BaseValidateScheduler(Scheduler[Mapping[str, CfgVal], None, None]):
    """A scheduler written for TorchX: it keeps the base ``_validate``."""

    def __init__(self) -> None:
        super().__init__("mock", "s")
        self.scheduled: list[specs.AppDef] = []

    def schedule(self, dryrun_info: AppDryRunInfo[None]) -> str:
        assert dryrun_info.app is not None
        self.scheduled.append(dryrun_info.app)
        return dryrun_info.app.name

    def _submit_dryrun(self, app: specs.AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[None]:
        return AppDryRunInfo(None, lambda _: "None")

    def describe(self, app_id: str) -> None:
        return None

    def list(self) -> list[Any]:  # type: ignore[override]
        return []

    def _cancel_existing(self, app_id: str) -> None:
        pass

    def _run_opts(self) -> runopts:
        opts = runopts()
        opts.add("foo", type_=str, required=True, help="required")
        return opts


def test_scheduler_submit_runs_a_role_without_resource() -> None:
    """TorchX's ``Scheduler.submit``/``submit_dryrun`` never call ``_validate``: a role without a
    resource runs there (the Runner still refuses it, see test_submission.py)."""
    sched = BaseValidateScheduler()
    app = specs.AppDef("nores", roles=[specs.Role("sleep", image="", entrypoint="foo.sh")])
    assert sched.submit_dryrun(app, {"foo": "x"}).app is not None
    assert sched.submit(app, {"foo": "x"}) == "nores"
    assert sched.scheduled[0].roles[0].resource == specs.NULL_RESOURCE
    with pytest.raises(specs.InvalidRunConfigException):  # the options are still checked first
        sched.submit(app, {})


def test_slurm_dry_run_of_a_role_without_resource_has_no_sizing() -> None:
    pytest.importorskip("torchx_sched_slurm")
    from torchx.schedulers.slurm_scheduler import create_scheduler

    app = specs.AppDef("nores", roles=[specs.Role("r", image="/tmp", entrypoint="echo", args=["hi"])])
    script = create_scheduler("compat").submit_dryrun(app, {}).request.materialize()
    assert "#SBATCH --job-name=r-0" in script
    assert "--cpus-per-task" not in script and "--mem" not in script


def test_a_component_file_whose_function_fails_the_linter_is_a_validation_error(tmp_path: Path) -> None:
    comp = tmp_path / "comp.py"
    comp.write_text(
        "from torchx.specs import AppDef, Role\n\n"
        "def invalid_component(name, role_name: str = 'worker') -> AppDef:\n"
        "    return AppDef(name, roles=[Role(name=role_name, image='i', entrypoint='main.py')])\n\n"
        "def fine(name: str) -> AppDef:\n"
        '    """A fine component.\n\n    Args:\n        name: the name\n    """\n'
        "    return AppDef(name, roles=[Role(name='r', image='i', entrypoint='main.py')])\n"
    )
    with pytest.raises(ComponentValidationException, match="invalid_component"):
        get_component(f"{comp}:invalid_component")
    assert get_component(f"{comp}:fine").fn_name == "fine"


def test_kubernetes_request_resource_is_the_volcano_job_or_the_appwrapper(isolated: Path) -> None:
    pytest.importorskip("torchx_sched_k8s")
    from torchx.schedulers.kubernetes_mcad_scheduler import create_scheduler as mcad
    from torchx.schedulers.kubernetes_scheduler import create_scheduler as k8s

    app = specs.AppDef("t", roles=[specs.Role("r", image="i", entrypoint="echo", resource=specs.resource(cpu=1))])
    volcano = k8s("s").submit_dryrun(app, {"mode": "volcano", "queue": "q"}).request
    assert volcano.resource is volcano.resource  # one view, read once
    assert volcano.resource["kind"] == "Job" and volcano.resource["spec"]["queue"] == "q"
    assert volcano.resource["metadata"] is volcano.objects[0]["metadata"]  # the Volcano Job, pods as models
    wrapper = mcad("s").submit_dryrun(app, {}).request
    assert wrapper.resource is not None and wrapper.resource["kind"] == "AppWrapper"
    assert k8s("s").submit_dryrun(app, {"mode": "jobs"}).request.resource is None


def test_mcad_task_counts_are_as_the_status_holds_them() -> None:
    pytest.importorskip("torchx_sched_k8s")
    from torchx.schedulers.kubernetes_mcad_scheduler import get_tasks_status_description

    status = {"state": "Running", "running": "1", "pending": 2, "failed": "3", "Succeeded": "4"}
    assert get_tasks_status_description(status) == {"running": "1", "pending": 2, "failed": "3", "Succeeded": "4"}
