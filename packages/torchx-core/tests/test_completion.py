"""Shell completion: candidates from what is installed, and the bash script's word handling."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli
from torchx.cli.completion import candidates, script

COMPONENTS = '''
import torchx.specs as specs

def train(lr: float = 0.1, epochs: int = 1, *extra: str) -> specs.AppDef:
    """Trains.

    Args:
        lr: learning rate
        epochs: how many
        extra: more
    """
    return specs.AppDef(name="t", roles=[specs.Role("r", "i", entrypoint="echo")])
'''


@pytest.fixture
def installed(make_dist, fake_scheduler) -> Path:  # type: ignore[no-untyped-def]
    plugin = "from torchx.plugins import hookimpl, ComponentSource\n\n@hookimpl\ndef torchx_components():\n"
    plugin += "    yield ComponentSource('mine', 'my_comps')\n"
    return make_dist(  # type: ignore[no-any-return]
        "my-comps",
        {"torchx": {"mine": "my_comps_plugin"}},
        {"my_comps_plugin.py": plugin, "my_comps/__init__.py": "", "my_comps/train.py": COMPONENTS},
    )


def test_verbs_flags_and_positional_choices() -> None:
    assert {"run", "status", "completion", "plugins"} <= set(candidates([""]))
    assert "__complete" not in candidates([""])
    assert {"--dryrun", "-cfg", "--scheduler"} <= set(candidates(["run", "--"]))
    assert list(candidates(["completion", ""])) == ["bash", "zsh", "fish"]
    assert list(candidates(["nosuchverb", ""])) == []


def test_schedulers_run_options_components_and_their_arguments(installed: Path) -> None:
    assert "fake" in candidates(["run", "-s", ""])
    assert "fake" in candidates(["runopts", ""])
    assert set(candidates(["run", "-s", "fake", "-cfg", ""])) >= {"cluster="}
    assert "mine.train.train" in candidates(["run", "-s", "fake", "mine."])
    assert list(candidates(["run", "-s", "fake", "mine.train.train", "--"])) == ["--lr", "--epochs", "--help"]


def test_handles_of_the_apps_a_scheduler_lists(installed: Path) -> None:
    from torchx.runner import get_runner
    from torchx.specs import AppDef, Role, resource

    with get_runner() as runner:
        handle = runner.run(AppDef("app", roles=[Role("r", "i", entrypoint="echo", resource=resource(cpu=1))]), "fake")
    assert "fake://" in candidates(["status", ""])
    assert handle in candidates(["log", "fake://"])
    assert list(candidates(["status", handle, ""])) == []  # one handle only


def test_cli_filters_by_prefix_and_never_fails_loudly() -> None:
    code, out, err = run_cli("__complete", "st")
    assert (code, out, err) == (0, "status\n", "")
    code, out, err = run_cli("__complete", "run", "-s", "local_cwd", "--nosuch", "")
    assert code == 0 and "Traceback" not in err


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize(
    ("line", "comp_words", "expected"),
    [
        ("torchx sta", ["torchx", "sta"], ["status"]),
        ("torchx completion ", ["torchx", "completion", ""], ["bash", "zsh", "fish"]),
        # bash splits 'fake:' into 'fake' ':': the reply must replace only the ':'
        ("torchx status fake:", ["torchx", "status", "fake", ":"], ["://"]),
    ],
)
def test_bash_script_completes_words_bash_split(
    installed: Path, line: str, comp_words: list[str], expected: list[str]
) -> None:
    words = " ".join(f"'{w}'" for w in comp_words)
    program = (
        script("bash")
        + f'COMP_LINE="{line}"; COMP_POINT={len(line)}; COMP_WORDS=({words}); COMP_CWORD={len(comp_words) - 1}\n'
        + '_torchx_complete; printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    env = {
        **os.environ,
        "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"],
        "PYTHONPATH": str(installed),
    }
    proc = subprocess.run(["bash", "-c", program], capture_output=True, text=True, env=env, timeout=60)
    assert proc.stdout.split() == expected, proc.stderr


def test_completion_verb_prints_each_script() -> None:
    for shell in ("bash", "zsh", "fish"):
        code, out, _ = run_cli("completion", shell)
        assert code == 0 and "__complete" in out
    code, _, err = run_cli("completion", "tcsh")
    assert code == 2 and "invalid choice" in err
