"""``controller=kubernetes`` before anything runs: its options refused in one line each, and the
objects it asks the API server for (pure request building; the live test runs them)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from torchx.specs.runopts import InvalidRunConfigException, runopts
from torchx.testing import run_cli
from torchx.testing.procs import use_procs
from torchx_managed.options import ManagedOptions, check, run_opts

INSTALLED = {"kubernetes": None, "slurm": None, "aws_batch": None, "managed": None}
IMAGE = "registry.example/torchx:1"

ECHO = """from torchx.specs import AppDef, Role


def echo() -> AppDef:
    return AppDef("echo", [Role("echo", image=".", entrypoint="echo", args=["hi"])])
"""


def _opts(installed: dict[str, Any] = INSTALLED, **cfg: Any) -> ManagedOptions:
    return check(run_opts().resolve(cfg), installed, lambda _name: runopts())[0]


@pytest.mark.parametrize(
    ("cfg", "match"),
    [
        ({"controller": "aws_batch"}, "controller=aws_batch: neither auto, native, local nor an installed scheduler a"),
        ({"journal": "gs://bucket/journal"}, "journal=gs://bucket/journal: torchx-managed fences drivers on object storage with conditional writes, which it uses on s3://, s3a:// only"),
        ({"controller": "kubernetes", "journal": "{tmp}/j"}, "controller=kubernetes needs controller_image=IMAGE"),
        (
            {"controller": "kubernetes", "journal": "{tmp}/j", "controller_image": IMAGE, "controller_mounts": ["/opt"]},
            "journal={tmp}/j is under none of controller_mounts [(]/opt[)]: the controller's pod would not see it",
        ),
        (
            {"controller": "kubernetes", "journal": "{tmp}/j", "controller_image": IMAGE, "controller_mounts": ["rel"]},
            "controller_mounts: 'rel' is neither an absolute PATH nor CLAIM:PATH",
        ),
        (
            {"controller": "kubernetes", "journal": "{tmp}/j", "controller_image": IMAGE, "controller_mounts": ["Bad_Claim:/x"]},
            "'Bad_Claim:/x' is neither",
        ),
        ({"controller": "slurm", "journal": "{tmp}/j", "controller_image": IMAGE}, "controller_image is an option of controller=kubernetes only"),
        ({"controller_python": "/venv/bin/python"}, "controller_python is an option of controller=kubernetes only"),
    ],
)  # fmt: skip
def test_bad_controller_options_are_one_line(tmp_path: Any, cfg: dict[str, Any], match: str) -> None:
    given = {k: v.format(tmp=tmp_path) if isinstance(v, str) else v for k, v in cfg.items()}
    with pytest.raises(InvalidRunConfigException, match=match.format(tmp=tmp_path)) as e:
        _opts(targets=["kubernetes"], **given)
    assert "\n" not in str(e.value)


def test_an_uninstalled_controller_scheduler_names_its_package() -> None:
    with pytest.raises(InvalidRunConfigException, match=r"controller=slurm: the scheduler slurm is not installed") as e:
        _opts({"kubernetes": None}, targets=["kubernetes"], controller="slurm", journal="/tmp/torchx-j")
    assert "torchx-sched-slurm" in str(e.value)


def test_kubernetes_options_are_kept(tmp_path: Any) -> None:
    opts = _opts(
        targets=["kubernetes"],
        controller="kubernetes",
        journal=str(tmp_path / "shared" / "j"),
        controller_image=IMAGE,
        controller_mounts=[str(tmp_path / "shared"), "venv-claim:/opt/venv"],
        controller_python="/opt/venv/bin/python",
        namespace="training",
    )
    assert (opts.controller, opts.controller_image, opts.controller_python) == (
        "kubernetes",
        IMAGE,
        "/opt/venv/bin/python",
    )
    assert opts.controller_mounts == [str(tmp_path / "shared"), "venv-claim:/opt/venv"]
    assert ManagedOptions.from_json({"targets": ["slurm"]}).controller_mounts == []  # an older journal's spec


@pytest.mark.parametrize("controller", ["auto", "slurm"])  # a controller job's URL journal is checked alike
def test_a_url_journal_without_boto3_is_one_line(monkeypatch: pytest.MonkeyPatch, controller: str) -> None:
    monkeypatch.setitem(sys.modules, "botocore.session", None)  # as if boto3 (and botocore) were not installed
    match = r"^managed: journal=s3://bucket/j needs boto3: pip install 'torchx-managed\[s3\]'$"
    with pytest.raises(InvalidRunConfigException, match=match) as e:
        _opts(targets=["kubernetes"], journal="s3://bucket/j", controller=controller)
    assert "\n" not in str(e.value)


def test_a_file_url_journal_is_a_path(tmp_path: Any) -> None:
    assert _opts(targets=["kubernetes"], journal=f"file://{tmp_path}/j").journal == f"{tmp_path}/j"


def test_cli_a_url_journal_is_one_line_and_submits_nothing(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    target = use_procs(tmp_path, monkeypatch)
    (tmp_path / "echo.py").write_text(ECHO)
    code, out, err = run_cli(
        "run", "-s", "managed", "-cfg", f"targets={target},journal=gs://bucket/journal", "echo.py:echo",
        cwd=tmp_path, env={"TORCHX_MANAGED_STATE_DIR": str(tmp_path / "managed")},
    )  # fmt: skip
    assert code != 0 and "uses on s3://, s3a:// only" in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and not out.strip(), err
    assert not (tmp_path / "managed").exists() or not any((tmp_path / "managed").iterdir())
    assert not (tmp_path / "procs-jobs").exists() or not any((tmp_path / "procs-jobs").iterdir())


def test_managed_imports_without_torchx_sched_k8s() -> None:
    """The Lease module (and the controller that may use it) import with torchx-sched-k8s absent:
    it is imported only where a Lease is written."""
    code = (
        "import sys; sys.modules['torchx_sched_k8s'] = None\n"
        "import torchx_managed.lease, torchx_managed.controller, torchx_managed.scheduler\n"
        "print(sorted(m for m in sys.modules if m.startswith('torchx_sched_k8s')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "['torchx_sched_k8s']", out.stderr
