"""One submit pipeline: every path to a scheduler (Runner, Scheduler.submit/submit_dryrun, job
arrays) goes through the same validation, capability checks, policy hooks (once per
submission), workspace rule and dry-run fields (torchx.schedulers.submission)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest
from torchx.plugins import SubmissionRejected
from torchx.runner import get_runner
from torchx.schedulers.capabilities import UnsupportedFeatureError
from torchx.specs import AppDef, Role, resource
from torchx.specs.roles import RetryPolicy
from torchx.specs.validation import AppDefError

POLICY = """
from torchx.plugins import hookimpl, SubmissionRejected

PRE = []
POST = []

@hookimpl
def torchx_pre_submit(app, scheduler):
    PRE.append((app.name, scheduler))
    if app.name == "forbidden":
        raise SubmissionRejected("not here")

@hookimpl
def torchx_post_submit(app_handle):
    POST.append(app_handle)
"""


@pytest.fixture
def policy(make_dist: Callable[..., Any], fake_scheduler: str) -> Any:
    make_dist("site-policy", {"torchx": {"policy": "site_policy"}}, {"site_policy.py": POLICY})
    module = __import__("site_policy")
    return module


def _app(name: str = "app", **role: Any) -> AppDef:
    return AppDef(name, roles=[Role("r", "i", entrypoint="echo", resource=resource(cpu=1), **role)])


# every public way to submit, each returning the app id
def _runner_run(runner: Any, app: AppDef) -> str:
    return str(runner.run(app, "fake")).rpartition("/")[2]


def _runner_dryrun_schedule(runner: Any, app: AppDef) -> str:
    return str(runner.schedule(runner.dryrun(app, "fake"))).rpartition("/")[2]


def _scheduler_submit(runner: Any, app: AppDef) -> str:
    return str(runner.get_scheduler("fake").submit(app, {}))


def _scheduler_dryrun_runner_schedule(runner: Any, app: AppDef) -> str:
    return str(runner.schedule(runner.get_scheduler("fake").submit_dryrun(app, {}))).rpartition("/")[2]


PATHS = [_runner_run, _runner_dryrun_schedule, _scheduler_submit, _scheduler_dryrun_runner_schedule]


@pytest.mark.parametrize("submit", PATHS, ids=lambda f: f.__name__)
def test_every_path_runs_the_policy_once_and_checks_the_app(policy: Any, submit: Callable[..., str]) -> None:
    app = _app()
    with get_runner() as runner:
        app_id = submit(runner, app)
        assert policy.PRE == [("app", "fake")]
        assert [f"fake://torchx/{app_id}"] == policy.POST
        with pytest.raises(SubmissionRejected, match="rejected by plugin site-policy:policy: not here"):
            submit(runner, _app("forbidden"))
        with pytest.raises(AppDefError, match="no entrypoint"):
            submit(runner, AppDef("bad", roles=[Role("r", "i")]))
        with pytest.raises(UnsupportedFeatureError, match="does not support retry_policy REPLICA"):
            submit(runner, _app(max_retries=1, retry_policy=RetryPolicy.REPLICA))
        nores = AppDef("nores", roles=[Role("r", "i", entrypoint="echo")])
        if submit in (_runner_run, _runner_dryrun_schedule):
            with pytest.raises(ValueError, match="has no resource"):  # the base Scheduler._validate
                submit(runner, nores)
        else:  # as TorchX, a scheduler called directly does not apply the base _validate
            submit(runner, nores)
    assert len(policy.PRE) == 4  # the malformed app never reached the hooks
    assert len(policy.POST) == (1 if submit in (_runner_run, _runner_dryrun_schedule) else 2)
    # as TorchX: the Runner writes the job's variables into the caller's app, a scheduler called
    # directly does not; a hook's changes never reach it
    runner_path = submit in (_runner_run, _runner_dryrun_schedule)
    assert app.roles[0].env == (
        {"TORCHX_INTERNAL_SESSION_ID": "torchx", "TORCHX_JOB_ID": "fake://torchx/${app_id}"} if runner_path else {}
    )


def test_a_wrong_option_is_reported_before_a_wrong_app(fake_scheduler: str) -> None:
    """As TorchX: ``submit``/``submit_dryrun`` resolve the run options first."""
    from torchx.specs.runopts import InvalidRunConfigException

    with get_runner() as runner:
        sched = runner.get_scheduler("fake")
        for call in (sched.submit_dryrun, sched.submit):
            with pytest.raises(InvalidRunConfigException):
                call(AppDef("bad", roles=[]), {"cluster": 1})


def test_a_scheduler_that_validates_resources_itself_is_asked_on_every_path(fake_scheduler: str) -> None:
    """Only the base ``Scheduler._validate`` is left out of the direct paths: a scheduler's own
    ``_validate`` (which may call the base one) runs on every path."""
    __import__("fake_sched.scheduler")
    from torchx.runner import Runner

    base = type(sys.modules["fake_sched.scheduler"].FakeScheduler("s"))

    class Strict(base):  # type: ignore[misc, valid-type]
        def _validate(self, app: AppDef, scheduler: str, cfg: Any = None) -> None:
            super()._validate(app, scheduler, cfg)

    nores = AppDef("nores", roles=[Role("r", "i", entrypoint="echo")])
    with (
        Runner("s", {"fake": lambda session, **kw: Strict(session)}) as runner,
        pytest.raises(ValueError, match="no resource"),
    ):
        runner.get_scheduler("fake").submit_dryrun(nores, {})


def test_a_scheduler_that_overrides_submit_dryrun_is_called_by_the_runner(fake_scheduler: str) -> None:
    """As TorchX's Runner: a scheduler's own ``submit_dryrun`` makes the request, and its
    ``super().submit_dryrun`` is TorchX's base one (no second trip through the pipeline)."""
    __import__("fake_sched.scheduler")
    from torchx.runner import Runner

    base = type(sys.modules["fake_sched.scheduler"].FakeScheduler("s"))
    calls: list[str] = []

    class Tagging(base):  # type: ignore[misc, valid-type]
        def submit_dryrun(self, app: AppDef, cfg: Any) -> Any:
            calls.append(app.name)
            info = super().submit_dryrun(app, cfg)
            info.request = ("tagged", info.request)
            return info

    with Runner("s", {"fake": lambda session, **kw: Tagging(session)}) as runner:
        info = runner.dryrun(_app(), "fake", {"cluster": "c1"})
        assert info.request[0] == "tagged" and calls == [_app().name]
        assert info.cfg["cluster"] == "c1" and info.scheduler == "fake"
        direct = runner.get_scheduler("fake").submit_dryrun(_app(), {"cluster": "c1"})  # the pipeline once
        assert direct.request[0] == "tagged" and len(calls) == 2


def test_a_scheduler_that_is_no_subclass_makes_its_own_request_through_the_runner(fake_scheduler: str) -> None:
    """A scheduler that is no ``Scheduler`` subclass (here a proxy of one): TorchX's Runner calls
    its ``submit_dryrun``, and so does ours, once (it used to fail on StopIteration)."""
    __import__("fake_sched.scheduler")
    from torchx.runner import Runner

    calls: list[str] = []

    class Proxy:
        def __init__(self, inner: Any) -> None:
            self._inner = inner

        def __getattr__(self, name: str) -> Any:
            calls.append(name)
            return getattr(self._inner, name)

    make = sys.modules["fake_sched.scheduler"].FakeScheduler
    with Runner("s", {"fake": lambda session, **kw: Proxy(make(session))}) as runner:
        info = runner.dryrun(_app(), "fake", {"cluster": "c1"})
    assert calls.count("submit_dryrun") == 1 and "_submit_dryrun" not in calls
    assert info.scheduler == "fake" and info.cfg["cluster"] == "c1"
    with Runner("s", {"fake": lambda session, **kw: make(session)}) as runner:
        assert info.request == runner.dryrun(_app(), "fake", {"cluster": "c1"}).request


def test_scheduler_dryrun_fields_are_those_of_the_runner(policy: Any) -> None:
    with get_runner() as runner:
        direct = runner.get_scheduler("fake").submit_dryrun(_app(), {"cluster": "c1"})
        through = runner.dryrun(_app(), "fake", {"cluster": "c1"}, parent_run_id="p")
    for info in (direct, through):
        assert info.scheduler == "fake"
        assert info.app is not None and info.app.name == "app"
        assert info.cfg["cluster"] == "c1"
    assert (direct._parent_run_id, through._parent_run_id) == (None, "p")


BUILT: list[str] = []


def _workspace_scheduler(session_name: str, **kwargs: object) -> Any:
    from torchx.workspace.api import WorkspaceMixin

    base = type(sys.modules["fake_sched.scheduler"].FakeScheduler(session_name))

    class WorkspaceScheduler(WorkspaceMixin[None], base):  # type: ignore[misc, valid-type]
        def build_workspace_and_update_role(self, role: Role, workspace: str, cfg: Any) -> None:
            BUILT.append(f"{role.name}:{workspace}")
            role.image = f"built-{workspace}"

    return WorkspaceScheduler(session_name)


def test_one_workspace_rule_for_runner_and_scheduler(fake_scheduler: str) -> None:
    """The workspace argument goes to the first role unless it has its own; every role's own
    workspace is built too; the same through the Runner and Scheduler.submit."""
    __import__("fake_sched.scheduler")
    from torchx.runner import Runner

    roles = [
        Role("a", "i", entrypoint="echo", resource=resource(cpu=1)),
        Role("b", "i", entrypoint="echo", resource=resource(cpu=1)),
        Role("c", "i", entrypoint="echo", resource=resource(cpu=1), workspace="own"),  # type: ignore[arg-type]
    ]
    app = AppDef("ws", roles=roles)
    with Runner("s", {"fake": _workspace_scheduler}) as runner:
        BUILT.clear()
        info = runner.dryrun(app, "fake", workspace="given")
        through_runner = sorted(BUILT)
        BUILT.clear()
        runner.get_scheduler("fake").submit(app, {}, workspace="given")
        through_scheduler = sorted(BUILT)
    assert through_runner == through_scheduler == ["a:given", "c:own"]
    assert info.app is not None
    assert [r.image for r in info.app.roles] == ["built-given", "i", "built-own"]
    # as TorchX, the first role of the caller's app runs the image built from the given workspace
    assert [r.image for r in app.roles] == ["built-given", "i", "i"]
    assert app.roles[0].workspace is None


def test_a_workspace_given_again_is_built_again_on_the_image_the_caller_got(fake_scheduler: str) -> None:
    """As TorchX: ``Scheduler.submit(app, cfg, workspace)`` and ``Runner.run`` point the caller's
    first role at the built image, and the next submission of that app builds the workspace
    again (its files may have changed), on that image; a copy of the app keeps its own image."""
    import copy

    __import__("fake_sched.scheduler")
    from torchx.runner import Runner

    app = _app()
    pristine = copy.deepcopy(app)
    with Runner("s", {"fake": _workspace_scheduler}) as runner:
        BUILT.clear()
        runner.get_scheduler("fake").submit(app, {}, workspace="w")
        assert app.roles[0].image == "built-w"
        runner.run(app, "fake", workspace="w")
        runner.run(app, "fake", workspace="w")
        assert BUILT == ["r:w", "r:w", "r:w"]
        info = runner.dryrun(copy.deepcopy(pristine), "fake", workspace="w")
        assert info.app is not None and info.app.roles[0].image == "built-w"
    assert pristine.roles[0].image == "i"


def test_a_dry_run_without_building_describes_the_builds_and_cannot_be_scheduled(fake_scheduler: str) -> None:
    """``build_workspace=False`` (``torchx run --dryrun``): nothing is built, each role with a
    workspace has a line saying what would be, its image names the build, and scheduling that
    dry run is refused (it would run the stand-in)."""
    __import__("fake_sched.scheduler")
    from torchx.runner import Runner

    roles = [
        Role("a", "i", entrypoint="echo", resource=resource(cpu=1)),
        Role("b", "j", entrypoint="echo", resource=resource(cpu=1)),
    ]
    app = AppDef("ws", roles=roles)
    with Runner("s", {"fake": _workspace_scheduler}) as runner:
        BUILT.clear()
        info = runner.dryrun(app, "fake", workspace="given", build_workspace=False)
        assert BUILT == []
        assert info.workspace_builds == ["role 'a': build workspace given on image i"]
        assert info.app is not None
        assert [r.image for r in info.app.roles] == ["<image built from i + workspace given>", "j"]
        with pytest.raises(ValueError, match="did not build its workspaces"):
            runner.schedule(info)
        built = runner.dryrun(app, "fake", workspace="given")
        assert BUILT == ["a:given"]
        assert built.workspace_builds == []


def test_a_job_dir_dry_run_without_building_copies_nothing(tmp_path: Any) -> None:
    """The job-dir workspace (Slurm, LSF) knows its result before copying: the described dry run
    points the role at ``job_dir`` and creates nothing."""
    from torchx.workspace.job_dir import JobDirWorkspaceMixin

    role = Role("a", "i", entrypoint="echo", workspace=str(tmp_path / "src"))  # type: ignore[arg-type]
    job_dir = tmp_path / "job"
    lines = JobDirWorkspaceMixin().describe_workspaces([role], {"job_dir": str(job_dir)})
    assert lines == [f"role 'a': copy workspace {tmp_path / 'src'} into job_dir {job_dir}"]
    assert role.image == str(job_dir)
    assert not job_dir.exists()
    in_place = Role("b", "i", entrypoint="echo", workspace=str(tmp_path / "src"))  # type: ignore[arg-type]
    assert JobDirWorkspaceMixin().describe_workspaces([in_place], {}) == [
        f"role 'b': workspace {tmp_path / 'src'} is used in place (no job_dir)"
    ]
    assert in_place.image == "i"
