from __future__ import annotations

import copy
import importlib.util
from pathlib import Path

import pytest
from torchx.runner import get_runner
from torchx.runner.api import AppDefError
from torchx.schedulers import UnsupportedFeatureError
from torchx.specs import (
    AppDef,
    AppState,
    BindMount,
    InvalidRunConfigException,
    RetryPolicy,
    Role,
    UnknownAppException,
    UnknownSchedulerException,
    VolumeMount,
    macros,
    resource,
)


def app(**role_kwargs: object) -> AppDef:
    role = Role(
        "trainer",
        "img",
        entrypoint="python",
        args=["-c", "print(1)", macros.replica_id],
        resource=resource(cpu=1),
        **role_kwargs,  # type: ignore[arg-type]
    )
    return AppDef("job", roles=[role])


def test_dryrun_writes_the_job_variables_into_the_callers_app_as_torchx(fake_scheduler: str) -> None:
    """As TorchX 0.7's ``Runner.dryrun``: the roles of the AppDef passed in get the job's
    variables (upstream's tests read them there); nothing else of it changes."""
    original = app(num_replicas=2)
    snapshot = copy.deepcopy(original)
    with get_runner() as runner:
        info = runner.dryrun(original, fake_scheduler, cfg={"cluster": "c1"}, parent_run_id="p1")
    assert info.app is not None and info.app is not original
    assert (
        original.roles[0].env
        == info.app.roles[0].env
        == {
            "TORCHX_INTERNAL_SESSION_ID": "torchx",
            "TORCHX_JOB_ID": "fake://torchx/${app_id}",
            "TORCHX_PARENT_RUN_ID": "p1",
        }
    )
    original.roles[0].env = {}
    assert original == snapshot
    assert info.request["cluster"] == "c1"
    assert info.request["replicas"] == [
        ["-c", "print(1)", "0"],
        ["-c", "print(1)", "1"],
    ]
    env = info.request["env"][0]
    assert env["TORCHX_JOB_ID"] == "fake://torchx/${app_id}"
    assert env["TORCHX_INTERNAL_SESSION_ID"] == "torchx"
    assert str(info) == "FAKE job on c1"
    assert info.scheduler == fake_scheduler
    assert info.cfg["retries"] == 0


def test_run_status_wait_list_cancel_delete_logs(fake_scheduler: str) -> None:
    with get_runner() as runner:
        handle = runner.run(app(), fake_scheduler)
        assert handle.startswith("fake://torchx/job-")
        status = runner.status(handle)
        assert status is not None
        assert status.state == AppState.SUCCEEDED
        assert status.roles[0].role == "trainer"
        assert runner.wait(handle, wait_interval=0.01).state == AppState.SUCCEEDED  # type: ignore[union-attr]
        assert handle in {a.app_handle for a in runner.list(fake_scheduler)}
        assert runner.describe(handle).roles[0].name == "trainer"  # type: ignore[union-attr]
        assert list(runner.log_lines(handle, "trainer", regex="^a")) == ["a\n", "ab\n"]
        runner.cancel(handle)
        assert runner.status(handle).state == AppState.CANCELLED  # type: ignore[union-attr]
        runner.delete(handle)
        assert runner.status(handle) is None
        with pytest.raises(UnknownAppException):
            list(runner.log_lines(handle, "trainer"))


def test_log_capability_checks(fake_scheduler: str, caplog: pytest.LogCaptureFixture) -> None:
    from datetime import datetime

    from torchx.schedulers.streams import Stream

    with get_runner() as runner:
        handle = runner.run(app(), fake_scheduler)
        runner.wait(handle, wait_interval=0.01)
        # as TorchX's schedulers without timestamps: since/until are ignored, here with a warning
        assert list(runner.log_lines(handle, "trainer", since=datetime.now())) == list(
            runner.log_lines(handle, "trainer")
        )
        assert "cannot filter logs by time" in caplog.text and "since/until are ignored" in caplog.text
        with pytest.raises(UnsupportedFeatureError, match="has no stderr stream"):
            runner.log_lines(handle, "trainer", streams=Stream.STDERR)
        assert list(runner.log_lines(handle, "trainer", streams=Stream.STDOUT))


@pytest.mark.parametrize(
    "bad, message",
    [
        (AppDef("", roles=[Role("r", "i", entrypoint="e")]), "no name"),
        (AppDef("x"), "has no roles"),
        (AppDef("x", roles=[Role("r", "i")]), "no entrypoint"),
        (AppDef("x", roles=[Role("r", "i", entrypoint="e", num_replicas=0)]), "num_replicas must be a positive int"),
        (AppDef("x", roles=[Role("r", "i", entrypoint="e", num_replicas=2, min_replicas=3)]), "min_replicas=3"),
        (AppDef("x", roles=[Role("r", "i", entrypoint="e", args=["a", 1])]), "args must be a list of str"),  # type: ignore[list-item]
        (AppDef("x", roles=[Role("r", "i", entrypoint="e", env={"A": 1})]), "env must map str to str"),  # type: ignore[dict-item]
    ],
)
def test_malformed_appdefs(fake_scheduler: str, bad: AppDef, message: str) -> None:
    with get_runner() as runner, pytest.raises(AppDefError, match=message):
        runner.dryrun(bad, fake_scheduler)


def test_two_roles_of_one_name_dry_run_as_torchx_but_are_not_submitted(fake_scheduler: str) -> None:
    """TorchX dry-runs and submits such an app; a submission is refused here (status, logs and
    ``describe`` could not tell the two roles apart), its dry run still shows the request."""
    roles = [Role("r", "i", entrypoint="e", resource=resource(cpu=1)) for _ in range(2)]
    twice = AppDef("x", roles=roles)
    with get_runner() as runner:
        info = runner.dryrun(twice, fake_scheduler)
        assert info.app is not None and [r.name for r in info.app.roles] == ["r", "r"]
        with pytest.raises(AppDefError, match="two roles named 'r'; role names must be unique"):
            runner.schedule(info)
        with pytest.raises(AppDefError, match="two roles named 'r'"):
            runner.run(twice, fake_scheduler)
        assert runner.list(fake_scheduler) == []


def test_capability_checks(fake_scheduler: str) -> None:
    with get_runner() as runner:
        with pytest.raises(UnsupportedFeatureError, match="retry_policy REPLICA"):
            runner.dryrun(app(max_retries=2, retry_policy=RetryPolicy.REPLICA), fake_scheduler)
        runner.dryrun(app(max_retries=2), fake_scheduler)
        with pytest.raises(UnsupportedFeatureError, match="does not support volume mounts"):
            runner.dryrun(app(mounts=[VolumeMount("v", "/v")]), fake_scheduler)
        runner.dryrun(app(mounts=[BindMount("/a", "/b")]), fake_scheduler)


def test_unknown_scheduler_and_bad_cfg(fake_scheduler: str) -> None:
    with get_runner() as runner:
        with pytest.raises(UnknownSchedulerException, match="Did you mean 'fake'"):
            runner.run(app(), "fak")
        # unknown keys pass through (one cfg may serve several schedulers); wrong types fail
        assert runner.dryrun(app(), fake_scheduler, cfg={"clster": "x"})._cfg["clster"] == "x"
        with pytest.raises(InvalidRunConfigException, match="'retries' expects int"):
            runner.dryrun(app(), fake_scheduler, cfg={"retries": "x"})


@pytest.mark.skipif(
    importlib.util.find_spec("torchx_sched_slurm") is not None,
    reason="the install hint needs torchx-sched-slurm absent (nox -s \"tests(package='torchx-core')\")",
)
def test_known_scheduler_not_installed_names_its_package() -> None:
    with get_runner() as runner, pytest.raises(UnknownSchedulerException, match=r"pip install \S*torchx-sched-slurm"):
        runner.run(app(), "slurm")


def test_torchxconfig_precedence(
    fake_scheduler: str, isolated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = Path(tmp_path / "home")
    (isolated / ".torchxconfig").write_text("[fake]\ncluster = from_cwd\nretries = 3\n")
    with get_runner() as runner:
        assert runner.dryrun(app(), fake_scheduler).request["cluster"] == "from_cwd"
    (home / ".torchxconfig").write_text("[fake]\ncluster = from_home\n")
    with get_runner() as runner:
        info = runner.dryrun(app(), fake_scheduler)
        assert info.request["cluster"] == "from_home"
        assert info.cfg["retries"] == 3
        assert runner.dryrun(app(), fake_scheduler, cfg={"cluster": "explicit"}).request["cluster"] == "explicit"
    other = tmp_path / "other.ini"
    other.write_text("[fake]\ncluster = from_env\n")
    monkeypatch.setenv("TORCHXCONFIG", str(other))
    with get_runner() as runner:
        info = runner.dryrun(app(), fake_scheduler)
        assert info.request["cluster"] == "from_env"
        assert info.cfg["retries"] == 0
    monkeypatch.setenv("TORCHXCONFIG", "")
    with get_runner() as runner:
        assert runner.dryrun(app(), fake_scheduler).request["cluster"] == "default"


def test_malformed_torchxconfig_is_one_clear_error(fake_scheduler: str, isolated: Path) -> None:
    from torchx.runner.config import ConfigError

    (isolated / ".torchxconfig").write_text("[fake\ncluster = x\n")
    with get_runner() as runner, pytest.raises(ConfigError, match="malformed .*\\.torchxconfig"):
        runner.dryrun(app(), fake_scheduler)


def test_tracker_env_from_config(fake_scheduler: str, isolated: Path) -> None:
    (isolated / ".torchxconfig").write_text("[torchx:tracker]\nfsspec =\n\n[tracker:fsspec]\nconfig = /tmp/tracking\n")
    with get_runner() as runner:
        env = runner.dryrun(app(), fake_scheduler, parent_run_id="parent-1").request["env"][0]
    assert env["TORCHX_TRACKERS"] == "fsspec"
    assert env["TORCHX_TRACKER_FSSPEC_CONFIG"] == "/tmp/tracking"
    assert env["TORCHX_PARENT_RUN_ID"] == "parent-1"


def test_scheduler_params_reach_factory(fake_scheduler: str) -> None:
    with get_runner(cluster_hint="x") as runner:
        assert runner.get_scheduler(fake_scheduler).kwargs == {"cluster_hint": "x"}  # type: ignore[attr-defined]


def test_default_validate_requires_a_resource(fake_scheduler: str) -> None:
    with get_runner() as runner, pytest.raises(ValueError, match="role 'r' has no resource"):
        runner.dryrun(AppDef("x", roles=[Role("r", "i", entrypoint="e")]), fake_scheduler)


def test_bad_torchxconfig_values_name_the_file_and_line(
    fake_scheduler: str, isolated: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from torchx.runner.config import ConfigError, apply

    (isolated / ".torchxconfig").write_text("[other]\ncluster = x\n\n[fake]\nclustr = a\n# comment\nretries = many\n")
    cfg: dict[str, object] = {}
    with pytest.raises(ConfigError, match=r"\.torchxconfig:7 \[fake\] retries = many: expected int"):
        apply("fake", cfg)  # type: ignore[arg-type]
    assert ".torchxconfig:5 is not a run option of scheduler `fake`. Did you mean 'cluster'?" in caplog.text


def test_runner_calls_log_usage_events_when_someone_listens(fake_scheduler: str) -> None:
    import json
    import logging

    from torchx.runner.events import TorchxEvent

    class Collect(logging.Handler):
        def __init__(self) -> None:
            super().__init__()
            self.events: list[TorchxEvent] = []

        def emit(self, record: logging.LogRecord) -> None:
            self.events.append(TorchxEvent.deserialize(record.getMessage()))

    logger = logging.getLogger("torchx.runner.events")
    root, handler = Collect(), Collect()
    logging.getLogger().addHandler(root)  # what --verbose / basicConfig(level=INFO) set up
    old_level = logging.getLogger().level
    logging.getLogger().setLevel(logging.INFO)
    try:
        with get_runner() as runner:
            handle = runner.run(app(), fake_scheduler)  # no handler on the events logger yet: no event
            logger.addHandler(handler)
            handle = runner.run(app(), fake_scheduler)
            runner.status(handle)
            list(runner.log_lines(handle, "trainer"))
            runner.cancel(handle)
            with pytest.raises(UnknownAppException):
                runner.log_lines(handle.replace("/job-", "/nope-"), "trainer")
    finally:
        logger.removeHandler(handler)
        logging.getLogger().removeHandler(root)
        logging.getLogger().setLevel(old_level)
    assert root.events == []  # events are not passed on to the root logger, as TorchX's
    seen = handler.events
    app_id = handle.rpartition("/")[2]
    assert [(e.api, e.scheduler) for e in seen] == [
        ("dryrun", "fake"),
        ("schedule", "fake"),
        ("status", "fake"),
        ("log_lines", "fake"),
        ("cancel", "fake"),
        ("log_lines", "fake"),
    ]
    assert [e.app_id for e in seen[1:5]] == [app_id] * 4
    assert all(e.wall_time_usec is not None and e.wall_time_usec >= 0 for e in seen)
    assert seen[-1].raw_exception is not None and seen[-1].raw_exception.startswith("UnknownAppException")
    assert json.loads(seen[0].serialize())["source"] == "UNKNOWN"
