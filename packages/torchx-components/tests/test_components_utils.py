"""utils.* components materialize to the expected AppDef for each argument form."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from torchx import specs
from torchx.runner import get_runner
from torchx.runner.api import validate_app
from torchx.specs.builders import ComponentArgError, materialize_appdef
from torchx.testing import PASSTHROUGH_ARGS, hostile_value
from torchx.version import TORCHX_IMAGE
from torchx_components import utils


def role_of(app: specs.AppDef) -> specs.Role:
    validate_app(app)
    assert len(app.roles) == 1
    return app.roles[0]


def test_echo_defaults_and_args() -> None:
    app = materialize_appdef(utils.echo, [])
    role = role_of(app)
    assert (app.name, role.entrypoint, role.args, role.image, role.num_replicas) == (
        "echo",
        "echo",
        ["hello world"],
        TORCHX_IMAGE,
        1,
    )
    role = role_of(materialize_appdef(utils.echo, ["--msg", "hi there", "--num_replicas", "3", "--image", "/tmp"]))
    assert (role.args, role.num_replicas, role.image) == (["hi there"], 3, "/tmp")
    assert role.resource.cpu == 1
    assert role.resource.gpu == 0


def test_touch_requires_file() -> None:
    assert role_of(materialize_appdef(utils.touch, ["--file", "out.txt"])).args == ["out.txt"]
    with pytest.raises(ComponentArgError, match="--file"):
        materialize_appdef(utils.touch, [])


def test_sh_quotes_every_argument() -> None:
    role = role_of(materialize_appdef(utils.sh, ["--", "echo", "a b", "$HOME", "; rm -rf /", "it's"]))
    assert role.entrypoint == "sh"
    assert role.args == ["-c", '"$@"', "sh", "echo", "a b", "$HOME", "; rm -rf /", "it's"]


def test_sh_options() -> None:
    role = role_of(
        materialize_appdef(
            utils.sh,
            [
                "--num_replicas",
                "2",
                "-h",
                "cpu.small",
                "--env",
                "A=1,B=x y",
                "--max_retries",
                "3",
                "--mounts",
                "type=bind,src=/data,dst=/mnt/data,readonly",
                "--entrypoint",
                "bash",
                "ls",
            ],
        )
    )
    assert role.entrypoint == "bash"
    assert role.args == ["-c", '"$@"', "sh", "ls"]
    assert role.num_replicas == 2
    assert role.resource.memMB == 2048
    assert role.resource.cpu == 1
    assert role.env == {"A": "1", "B": "x y"}
    assert role.max_retries == 3
    assert role.mounts == [specs.BindMount(src_path="/data", dst_path="/mnt/data", read_only=True)]


def test_sh_without_command_is_a_clear_error() -> None:
    with pytest.raises(ComponentArgError, match="needs a command"):
        materialize_appdef(utils.sh, [])


def test_unknown_named_resource_is_one_clear_error() -> None:
    with pytest.raises(ComponentArgError, match="unknown named resource 'gpu.smal'"):
        materialize_appdef(utils.sh, ["-h", "gpu.smal", "ls"])


def test_bad_mount_is_a_clear_error() -> None:
    with pytest.raises(ComponentArgError, match="type=bind"):
        materialize_appdef(utils.sh, ["--mounts", "src=/a,dst=/b", "ls"])


@pytest.mark.parametrize(
    ("argv", "expected_args"),
    [
        (["-m", "http.server", "8080"], ["-m", "http.server", "8080"]),
        (["-c", "print(1)"], ["-c", "print(1)"]),
        (["--script", "train.py", "--", "--lr", "0.1"], ["train.py", "--lr", "0.1"]),
        (["hello.py", "aptg"], ["hello.py", "aptg"]),  # positional script form (user notes)
        (["dir/hello.py"], ["dir/hello.py"]),
        (["-m", "pkg.main", "x.py"], ["-m", "pkg.main", "x.py"]),  # -m given: x.py is an argument
    ],
)
def test_python_forms(argv: list[str], expected_args: list[str]) -> None:
    app = materialize_appdef(utils.python, argv)
    role = role_of(app)
    assert (app.name, role.name, role.entrypoint) == ("torchx_utils_python", "python", "python")
    assert role.args == expected_args


def test_python_resources_and_name() -> None:
    app = materialize_appdef(
        utils.python,
        [
            "--name",
            "job",
            "--cpu",
            "4",
            "--gpu",
            "1",
            "--memMB",
            "4096",
            "--num_replicas",
            "2",
            "--mounts",
            "type=volume,src=vol,dst=/v",
            "-c",
            "pass",
        ],
    )
    role = role_of(app)
    assert app.name == "job"
    assert (role.resource.cpu, role.resource.gpu, role.resource.memMB, role.num_replicas) == (4, 1, 4096, 2)
    assert role.mounts == [specs.VolumeMount(src="vol", dst_path="/v")]


@pytest.mark.parametrize(
    ("argv", "got"),
    [
        ([], "got none"),
        (["notascript", "x"], "got none"),
        (["-m", "a", "--script", "b.py"], "got -m and --script"),
        (["-m", "a", "-c", "pass"], "got -m and -c"),
        (["-m", "a", "-c", "pass", "--script", "s.py"], "got -m and -c and --script"),
    ],
)
def test_python_needs_exactly_one_program(argv: list[str], got: str) -> None:
    with pytest.raises(ComponentArgError, match=f"exactly one of -m MODULE, -c CODE or --script FILE.*{got}"):
        materialize_appdef(utils.python, argv)


def test_binary() -> None:
    app = materialize_appdef(utils.binary, ["--entrypoint", "/bin/date", "-h", "cpu.nano", "--", "-u", "+%s"])
    role = role_of(app)
    assert (app.name, role.entrypoint, role.args, role.resource.memMB) == (
        "torchx_utils_binary",
        "/bin/date",
        ["-u", "+%s"],
        512,
    )
    with pytest.raises(ComponentArgError, match="--entrypoint"):
        materialize_appdef(utils.binary, ["x"])


def test_copy_runs_the_copy_app() -> None:
    role = role_of(materialize_appdef(utils.copy, ["--src", "s3://b/k", "--dst", "/tmp/out", "--image", "img"]))
    assert role.entrypoint == "python"
    assert role.args == ["-m", "torchx_components.apps.copy", "--src", "s3://b/k", "--dst", "/tmp/out"]
    assert role.image == "img"


def test_booth_runs_the_booth_app() -> None:
    role = role_of(
        materialize_appdef(utils.booth, ["--x1", "1", "--x2", "3.5", "--trial_idx", "7", "--tracker_base", "/r"])
    )
    assert role.args == [
        "-m",
        "torchx_components.apps.booth",
        "--x1",
        "1.0",
        "--x2",
        "3.5",
        "--trial_idx",
        "7",
        "--tracker_base",
        "/r",
    ]
    with pytest.raises(ComponentArgError, match="invalid float value 'abc'"):
        materialize_appdef(utils.booth, ["--x1", "abc", "--x2", "1"])


def test_runner_materializes_by_name_with_dict_args() -> None:
    """The runner finds the builtins through the plugin registry (CLI list and API dict forms)."""
    runner = get_runner()
    app = runner.component_app("utils.echo", {"msg": "from a dict"})
    assert app.roles[0].args == ["from a dict"]
    app = runner.component_app("utils.python", ["hello.py", "aptg"])
    assert app.roles[0].args == ["hello.py", "aptg"]


def test_sh_macro_values_are_data_and_other_text_arrives_as_given(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    hostile = hostile_value(str(marker))
    words = ["printf", "<%s>\\n", "${img_root}/data", "${app_id}-${replica_id}", *PASSTHROUGH_ARGS]
    role = role_of(materialize_appdef(utils.sh, ["--env", "E=$$ ${app_id}", "--", *words]))
    filled = specs.macros.Values(img_root=hostile, app_id=hostile, replica_id="2").apply(role)
    assert filled.env == {"E": f"$$ {hostile}"}
    out = subprocess.run([filled.entrypoint, *filled.args], capture_output=True, text=True, check=True).stdout
    expected = [f"{hostile}/data", f"{hostile}-2", *PASSTHROUGH_ARGS]
    assert out == "".join(f"<{w}>\n" for w in expected)
    assert not marker.exists()


@pytest.mark.parametrize("component", [utils.echo, utils.touch, utils.python, utils.binary, utils.copy])
def test_arguments_without_macros_arrive_byte_identical(component: Any) -> None:
    text = "$$ $HOME ${x} it's ${app_id}"
    argv = {
        utils.echo: ["--msg", text],
        utils.touch: ["--file", text],
        utils.python: ["-c", text, text],
        utils.binary: ["--entrypoint", text, text],
        utils.copy: ["--src", text, "--dst", text],
    }[component]
    role = role_of(materialize_appdef(component, argv))
    filled = specs.macros.Values(img_root="/r", app_id="A", replica_id="0").apply(role)
    want = text.replace("${app_id}", "A")
    assert want in filled.args
    assert text not in filled.args
    if component is utils.binary:
        assert filled.entrypoint == want
