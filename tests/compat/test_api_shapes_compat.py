"""Outputs and shapes TorchX 0.7 users script against (expected values taken from torchx==0.7.0)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Dict, List, Optional

import pytest
import torchx
from packaging.version import parse
from torchx import specs
from torchx.specs import AppState, AppStatus, ReplicaStatus, RoleStatus

DATA = Path(__file__).parent / "data"


def test_version_is_the_torchx_api_level() -> None:
    from importlib.metadata import version

    assert parse(torchx.__version__) >= parse("0.7")
    assert parse(torchx.__version__) < parse("0.8")
    assert parse(version("torchx-core")) < parse("0.7")  # the distribution keeps its own release number


def test_app_state_and_status_text() -> None:
    assert repr(AppState.SUCCEEDED) == "SUCCEEDED (4)"
    assert str(AppState.FAILED) == "FAILED"
    status = AppStatus(
        AppState.FAILED,
        1,
        msg="boom",
        roles=[
            RoleStatus(
                "trainer",
                [
                    ReplicaStatus(1, AppState.RUNNING, "trainer", "h1"),
                    ReplicaStatus(0, AppState.FAILED, "trainer", "h0"),
                ],
            )
        ],
    )
    assert status.format() == (
        "AppStatus:\n    State: FAILED\n    Num Restarts: 1\n    Roles: \n *trainer[0]:FAILED (no reply file)\n"
        "  trainer[1]:RUNNING\n    Msg: boom\n    Structured Error Msg: <NONE>\n    UI URL: None\n    "
    )
    assert status.format(filter_roles=["other"]).startswith(
        "AppStatus:\n    State: FAILED\n    Num Restarts: 1\n    Roles: \n"
    )
    done = AppStatus(AppState.SUCCEEDED, ui_url="http://x", structured_error_msg='{"a": 1}')
    assert repr(done) == (
        "AppStatus:\n  msg: ''\n  num_restarts: 0\n  roles: []\n  state: SUCCEEDED (4)\n"
        "  structured_error_msg:\n    a: 1\n  ui_url: http://x\n"
    )
    assert "  structured_error_msg: not json\n" in repr(AppStatus(AppState.FAILED, structured_error_msg="not json"))
    text = repr(status)
    assert "  roles:\n  - replicas:\n    - hostname: h1\n      id: 1\n      role: trainer\n" in text
    assert "  state: FAILED (5)\n" in text


def test_torchelastic_error_in_format() -> None:
    error = {"message": {"message": "RuntimeError: boom\nException raised from here", "errorCode": 3,
                         "extraInfo": {"timestamp": 1700000000}}}  # fmt: skip
    replica = ReplicaStatus(0, AppState.FAILED, "trainer", "h0", json.dumps(error))
    text = AppStatus(AppState.FAILED, roles=[RoleStatus("trainer", [replica])]).format()
    assert " *trainer[0]:FAILED (exitcode: 3)\n        timestamp: " in text
    assert "        hostname: h0\n        error_msg: RuntimeError: boom\n" in text


def test_get_type_name() -> None:
    assert [specs.get_type_name(t) for t in (int, str, float, bool, List[str], Dict[str, str], Optional[str])] == [
        "int",
        "str",
        "float",
        "bool",
        "typing.List[str]",
        "typing.Dict[str, str]",
        "typing.Optional[str]",
    ]


def test_split_lines_iterator() -> None:
    from torchx.schedulers.api import split_lines, split_lines_iterator

    assert list(split_lines_iterator(["a\nb", "c", "\nd\n", "e"])) == ["a\n", "b", "c", "\n", "d\n", "e"]
    assert list(split_lines_iterator(["", "x\r\ny"])) == ["x\r\n", "y"]
    assert split_lines("a\rb\nc") == ["a\rb\n", "c"]


def test_tracker_api_shapes() -> None:
    from torchx.tracker.api import AppRun, Lineage, TrackerArtifact, TrackerSource

    Lineage()
    assert TrackerSource("run-1", None).source_run_id == "run-1"
    assert TrackerArtifact("model", "/m", None).path == "/m"
    assert AppRun.run_from_env().job_id() == "<UNDEFINED>"


def test_run_from_env_has_torchxs_cache_clear_and_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """TorchX 0.7's ``AppRun.run_from_env`` is an ``lru_cache``: code calls
    ``run_from_env.cache_clear()`` before reading a new environment. That call works here, and
    every call reads the environment (there is nothing to clear)."""
    from torchx.tracker.api import AppRun

    monkeypatch.delenv("TORCHX_JOB_ID", raising=False)
    AppRun.run_from_env.cache_clear()
    assert AppRun.run_from_env().job_id() == "<UNDEFINED>"
    monkeypatch.setenv("TORCHX_JOB_ID", "local_cwd://s/app-1")
    assert AppRun.run_from_env().job_id() == "local_cwd://s/app-1"
    assert AppRun("x", []).run_from_env().job_id() == "local_cwd://s/app-1"  # through an instance too
    assert [f.name for f in __import__("dataclasses").fields(AppRun)] == ["id", "backends"]


def test_docker_workspace_without_image_repo_raises_torchxs_key_error() -> None:
    """TorchX raises ``KeyError`` (matching ``image_repo``) when a built image has no
    ``image_repo``; ours is that ``KeyError``, also a ``ValueError``, reading as one line."""
    from torchx.workspace.docker_workspace import DockerWorkspaceMixin

    app = specs.AppDef("foo", roles=[specs.Role("a", image="sha256:hasha"), specs.Role("c", image="c")])
    with pytest.raises(KeyError, match="image_repo") as caught:
        DockerWorkspaceMixin().dryrun_push_images(app, {})
    assert isinstance(caught.value, ValueError)
    assert str(caught.value) == (
        "role 'a' runs a locally built workspace image; set -cfg image_repo=<registry/repo> so it can be pushed"
        " where the scheduler can pull it"
    )
    assert DockerWorkspaceMixin().dryrun_push_images(app, {"image_repo": "example.com/repo"}) == {
        "sha256:hasha": ("example.com/repo", "hasha")
    }
    assert [r.image for r in app.roles] == ["example.com/repo:hasha", "c"]


def test_file_linter_messages(tmp_path: Path) -> None:
    from torchx.specs.file_linter import validate

    path = tmp_path / "component.py"
    path.write_text(
        textwrap.dedent(
            """\
            from typing import Dict, List, Tuple
            import torchx.specs as specs

            def untyped(a, b: int) -> specs.AppDef:
                pass

            def complex(a: Tuple[int, int], b: List[List[str]], c: Dict[str, List[str]]) -> specs.AppDef:
                pass

            def no_return(a: str):
                pass

            def wrong_return(a: str) -> str:
                pass

            def no_docstring(a: str, b: List[str], c: Dict[str, str]) -> specs.AppDef:
                pass
            """
        )
    )

    def errors(fn: str) -> list[tuple[str, str, int]]:
        return [(m.name, m.description, m.line) for m in validate(str(path), fn) if m.severity == "error"]

    assert errors("untyped") == [("TorchxFunctionValidator", "Arg a missing type annotation", 4)]
    assert [d for _, d, _ in errors("complex")] == [
        "`complex` allows only Dict, List as complex types.Argument `a` has: Tuple",
        "List can only have primitive types",
        "Dict can only have primitive types",
    ]
    assert errors("no_return") == [
        (
            "TorchxFunctionValidator",
            "Function: no_return missing return annotation or has unknown annotations."
            " Supported return annotation: AppDef",
            10,
        )
    ]
    assert [d for _, d, _ in errors("wrong_return")] == [
        "Function: wrong_return has incorrect return annotation, supported annotation: AppDef"
    ]
    assert errors("no_docstring") == []
    assert [(m.name, m.description) for m in validate(str(path), "nope")] == [
        ("TorchXValidator", "Function nope not found")
    ]


def test_component_without_docstring_runs(tmp_path: Path) -> None:
    from torchx.specs.builders import materialize_appdef
    from torchx.specs.finder import get_component

    path = tmp_path / "nodoc.py"
    path.write_text(
        "import torchx.specs as specs\n\n"
        "def hello(name: str = 'you') -> specs.AppDef:\n"
        "    return specs.AppDef('hello', roles=[specs.Role('r', 'img', entrypoint='echo', args=[name])])\n"
    )
    component = get_component(f"{path}:hello")
    assert materialize_appdef(component.fn, ["--name", "me"]).roles[0].args == ["me"]


def test_serve_and_metrics_appdefs() -> None:
    serve = pytest.importorskip("torchx_components.serve")
    metrics = pytest.importorskip("torchx_components.metrics")
    app = serve.torchserve("s3://b/m.mar", "http://ts:8081", params={"initial_workers": "1"}, dryrun=True)
    role = app.roles[0]
    assert (app.name, role.name, role.entrypoint, role.port_map) == (
        "torchx-torchserve",
        "worker",
        "python",
        {"model-download": 8222},
    )
    assert role.args[2:] == [
        "--model_path",
        "s3://b/m.mar",
        "--management_api",
        "http://ts:8081",
        "--initial_workers",
        "1",
        "--dryrun",
    ]
    assert role.args[:2] == ["-m", "torchx.apps.serve.serve"]  # TorchX's module (torchx-core runs ours)
    tb = metrics.tensorboard("/logs")
    role = tb.roles[0]
    assert role.args[:2] == ["-m", "torchx.apps.utils.process_monitor"]
    assert (role.resource.cpu, role.resource.memMB) == (1, 1024)  # TorchX: NULL_RESOURCE
    assert (tb.name, role.name, role.entrypoint, role.port_map) == (
        "tensorboard",
        "tensorboard",
        "python",
        {"http": 6006},
    )
    assert role.args[2:] == [
        "--timeout",
        "3600",
        "--start_on_file",
        "",
        "--exit_on_file",
        "",
        "--",
        "tensorboard",
        "--bind_all",
        "--port",
        "6006",
        "--logdir",
        "/logs",
    ]


def test_aws_named_resources_are_torchx_07s() -> None:
    from torchx.specs import named_resources_aws

    expected = json.loads((DATA / "aws_named_resources_torchx_0.7.0.json").read_text())
    for name, fields in expected.items():
        res = specs.named_resources[name]
        got = {"cpu": res.cpu, "gpu": res.gpu, "memMB": res.memMB, "capabilities": res.capabilities}
        assert {**got, "devices": res.devices} == fields, name
        factory = getattr(named_resources_aws, name.replace(".", "_"))
        assert factory() == res
    extras = {"aws_c5.18xlarge", "aws_g6e.48xlarge", "aws_inf2.xlarge", "aws_p5en.48xlarge"}
    assert extras <= set(named_resources_aws.NAMED_RESOURCES)
    assert len(named_resources_aws.NAMED_RESOURCES) == 40
    assert named_resources_aws.GiB == 983
    assert named_resources_aws.aws_p3_2xlarge().memMB == 61 * 983
    assert specs.resource(h="aws_p3.2xlarge") == named_resources_aws.aws_p3_2xlarge()
    assert named_resources_aws.instance_type_from_resource(named_resources_aws.aws_g5_xlarge()) == "g5.xlarge"
