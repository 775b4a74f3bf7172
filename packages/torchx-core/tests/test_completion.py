"""Shell completion: candidates from what is installed, and the bash script's word handling."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from torchx.cli.completion import candidates, script
from torchx.testing import run_cli

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
    assert code == 0
    assert "Traceback" not in err


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize(
    ("line", "comp_words", "expected"),
    [
        ("torchx sta", ["torchx", "sta"], ["status"]),
        ("torchx completion ", ["torchx", "completion", ""], ["bash", "zsh", "fish"]),
        # bash splits 'fake:' into 'fake' ':': the reply must replace only the ':'
        ("torchx status fake:", ["torchx", "status", "fake", ":"], ["://"]),
        # a word typed with quotes is read without them
        ("torchx run -s 'fake' -cfg cl", ["torchx", "run", "-s", "'fake'", "-cfg", "cl"], ["cluster="]),
    ],
)
def test_bash_script_completes_words_bash_split(
    installed: Path, line: str, comp_words: list[str], expected: list[str]
) -> None:
    words = " ".join(shlex.quote(w) for w in comp_words)
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
        assert code == 0
        assert "__complete" in out
    code, _, err = run_cli("completion", "tcsh")
    assert code == 2
    assert "invalid choice" in err


# ---------------------------------------------------------------- zsh and fish, in the real shells
#: zsh ZPTY_DRIVER OUT LINE PRE POST: starts an interactive ``zsh -f`` in a pseudo-terminal, runs
#: PRE, compinit, POST; types LINE and TAB, then ^X. Each compadd call appends the matches zsh kept
#: (``HIT word``), ^X the edited line (``BUFFER line``) and ``DONE`` to OUT.
ZPTY_DRIVER = r"""
zmodload zsh/zpty || exit 3
out=$1 line=$2
: > $out
zpty z zsh -f -i
zpty -w z "PS1=; RPS1=; unsetopt beep; LISTMAX=100000; $3"
zpty -w z "autoload -Uz compinit; compinit -u -D; $4"
zpty -w z "compadd() { local -a __hits; builtin compadd -O __hits \"\$@\"; (( \$#__hits )) && print -rl -- \"\${(@)__hits/#/HIT }\" >> ${(q)out}; builtin compadd \"\$@\"; }"
zpty -w z "__dump() { print -r -- \"BUFFER \$BUFFER\" >> ${(q)out}; print DONE >> ${(q)out}; }; zle -N __dump; bindkey '^X' __dump"
zpty -w -n z "$line"$'\t\C-x'
for i in {1..600}; do
    grep -qx DONE $out 2>/dev/null && break
    sleep 0.1
done
zpty -d z
"""


def shell_program(name: str) -> str:
    """The path of shell ``name``; a missing shell skips, but fails in CI (``CI=true``) and under
    ``TORCHX_REQUIRE_LIVE=1``, where scripts/test-all.sh installs it."""
    path = shutil.which(name)
    if path is None:
        reason = f"{name} is not installed (apt-get install {name})"
        if os.environ.get("CI") == "true" or os.environ.get("TORCHX_REQUIRE_LIVE") == "1":
            pytest.fail(f"{reason}; CI needs it")
        pytest.skip(reason)
    return path


def shell_env(installed: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"],
        "PYTHONPATH": str(installed),
    }


JOBS_SCHEDULER = """
import os
from fake_sched.scheduler import FakeScheduler
from torchx.schedulers.api import ListAppResponse
from torchx.specs import AppState


class JobsScheduler(FakeScheduler):
    def list(self, cfg=None):
        return [ListAppResponse(app_id=a, state=AppState.RUNNING, name=a) for a in os.environ["JOBS"].split()]


def create_scheduler(session_name, **kwargs):
    return JobsScheduler(session_name, **kwargs)
"""


@pytest.fixture
def jobs(installed: Path, make_dist, monkeypatch: pytest.MonkeyPatch) -> list[str]:  # type: ignore[no-untyped-def]
    """The handles the scheduler ``jobs`` lists (in every process: from ``$JOBS``)."""
    plugin = "from torchx.plugins import hookimpl, SchedulerPlugin\n\n@hookimpl\ndef torchx_schedulers():\n"
    plugin += "    yield SchedulerPlugin('jobs', 'jobs_sched:create_scheduler', 'lists $JOBS')\n"
    make_dist(
        "torchx-jobs", {"torchx": {"jobs": "jobs_plugin"}}, {"jobs_plugin.py": plugin, "jobs_sched.py": JOBS_SCHEDULER}
    )
    monkeypatch.setenv("JOBS", "train-1 train-2 eval-1")
    return ["jobs://torchx/train-1", "jobs://torchx/train-2", "jobs://torchx/eval-1"]


def zsh_complete(installed: Path, tmp_path: Path, line: str, pre: str = "", post: str = "") -> tuple[set[str], str]:
    """(the matches zsh offers, the line after TAB) for ``line`` typed in an interactive zsh."""
    driver = tmp_path / "driver.zsh"
    driver.write_text(ZPTY_DRIVER)
    out = tmp_path / "zsh.out"
    if not pre and not post:
        post = f"source {tmp_path / 'torchx.zsh'}"
        (tmp_path / "torchx.zsh").write_text(script("zsh"))
    proc = subprocess.run(
        [shell_program("zsh"), "-f", str(driver), str(out), line, pre, post],
        capture_output=True,
        text=True,
        env=shell_env(installed),
        timeout=120,
    )
    lines = out.read_text().splitlines() if out.exists() else []
    assert proc.returncode == 0, (proc.returncode, proc.stderr, lines)
    assert lines[-1:] == ["DONE"], (proc.returncode, proc.stderr, lines)
    buffer = next(x for x in lines if x.startswith("BUFFER "))[len("BUFFER ") :]
    return {x[len("HIT ") :] for x in lines if x.startswith("HIT ")}, buffer


def fish_complete(installed: Path, line: str) -> set[str]:
    """The words fish's own completion engine offers for ``line`` (``complete -C``)."""
    program = f"torchx completion fish | source; complete -C {fish_quote(line)}"
    proc = subprocess.run(
        [shell_program("fish"), "--no-config", "-c", program],
        capture_output=True,
        text=True,
        env=shell_env(installed),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return {x.split("\t", 1)[0] for x in proc.stdout.splitlines()}


def fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


#: (line typed, what must be offered): verbs, flags, schedulers, run options, components, their
#: arguments, a word typed with quotes before the cursor
SHELL_CASES = [
    ("torchx ru", {"run", "runopts"}),
    ("torchx completion ", {"bash", "zsh", "fish"}),
    ("torchx run --dry", {"--dryrun"}),
    ("torchx run -s ", {"fake"}),
    ("torchx run -s fake -cfg ", {"cluster="}),
    ("torchx run -s 'fake' -cfg cl", {"cluster="}),
    ("torchx run -s fake mine.", {"mine.train.train"}),
    ("torchx run -s fake mine.train.train --", {"--lr", "--epochs", "--help"}),
    ("torchx runopts f", {"fake"}),
]


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_each_script_parses_in_its_shell(shell: str, tmp_path: Path) -> None:
    path = tmp_path / f"torchx.{shell}"
    path.write_text(script(shell))
    check = [shell_program(shell), "-n" if shell == "zsh" else "--no-execute", str(path)]
    proc = subprocess.run(check, capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stderr) == (0, "")


@pytest.mark.parametrize(("line", "expected"), SHELL_CASES)
def test_zsh_completes(installed: Path, tmp_path: Path, line: str, expected: set[str]) -> None:
    hits, _ = zsh_complete(installed, tmp_path, line)
    assert hits >= expected, hits


@pytest.mark.parametrize(("line", "expected"), SHELL_CASES)
def test_fish_completes(installed: Path, line: str, expected: set[str]) -> None:
    found = fish_complete(installed, line)
    assert found >= expected, found


def test_zsh_inserts_words_and_keeps_the_cursor_after_key_equals(installed: Path, tmp_path: Path) -> None:
    assert zsh_complete(installed, tmp_path, "torchx completion z") == ({"zsh"}, "torchx completion zsh ")
    assert zsh_complete(installed, tmp_path, "torchx run -s fake -cfg cl") == (
        {"cluster="},
        "torchx run -s fake -cfg cluster=",  # no space: the value comes next
    )


def test_zsh_and_fish_complete_handles(installed: Path, tmp_path: Path, jobs: list[str]) -> None:
    assert {"fake://", "jobs://"} <= zsh_complete(installed, tmp_path, "torchx status ")[0]
    assert zsh_complete(installed, tmp_path, "torchx log jobs://") == (set(jobs), "torchx log jobs://torchx/")
    assert zsh_complete(installed, tmp_path, "torchx log jobs://torchx/e") == ({jobs[2]}, f"torchx log {jobs[2]} ")
    assert {"fake://", "jobs://"} <= fish_complete(installed, "torchx status ")
    assert fish_complete(installed, "torchx cancel jobs://") == set(jobs)


def test_zsh_and_fish_fall_back_to_files(installed: Path, tmp_path: Path) -> None:
    (tmp_path / "src_dir").mkdir()
    zsh_hits, buffer = zsh_complete(installed, tmp_path, f"torchx run --workspace {tmp_path}/src_")
    assert "src_dir" in zsh_hits, (zsh_hits, buffer)
    assert buffer == f"torchx run --workspace {tmp_path}/src_dir/", (zsh_hits, buffer)
    assert fish_complete(installed, f"torchx run --workspace {tmp_path}/src_") == {f"{tmp_path}/src_dir/"}


def test_zsh_script_works_from_fpath(installed: Path, tmp_path: Path) -> None:
    """Saved as ``_torchx`` in a directory of ``$fpath``, compinit autoloads it on first TAB."""
    functions = tmp_path / "functions"
    functions.mkdir()
    (functions / "_torchx").write_text(script("zsh"))
    hits, buffer = zsh_complete(installed, tmp_path, "torchx completion z", pre=f"fpath=({functions} $fpath)")
    assert (hits, buffer) == ({"zsh"}, "torchx completion zsh ")


def test_zsh_script_without_compinit_says_what_to_do(tmp_path: Path) -> None:
    proc = subprocess.run([shell_program("zsh"), "-fc", script("zsh")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "autoload -Uz compinit && compinit" in proc.stderr, proc.stderr


def fish_tab(installed: Path, tmp_path: Path, line: str) -> str:
    """The command line after typing ``line`` and TAB in an interactive fish (in a pseudo-terminal)."""
    import pty
    import select
    import signal
    import time

    fish, out = shell_program("fish"), tmp_path / "fish.out"
    out.unlink(missing_ok=True)
    env = shell_env(installed)
    pid, fd = pty.fork()
    if pid == 0:  # the child: becomes fish
        os.execve(fish, [fish, "--no-config", "-i"], env)
    try:
        setup = f"torchx completion fish | source; bind \\cx 'commandline > {out}; echo DONE >> {out}'\r"
        os.write(fd, setup.encode() + line.encode() + b"\t\x18")
        deadline = time.monotonic() + 60
        while not (out.exists() and out.read_text().endswith("DONE\n")) and time.monotonic() < deadline:
            if select.select([fd], [], [], 0.1)[0]:
                os.read(fd, 65536)  # keep the terminal drained
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)
    text = out.read_text() if out.exists() else ""
    assert text.endswith("DONE\n"), text
    return text.removesuffix("DONE\n").removesuffix("\n")


def test_fish_inserts_words_and_keeps_the_cursor_after_key_equals(installed: Path, tmp_path: Path) -> None:
    assert fish_tab(installed, tmp_path, "torchx completion z") == "torchx completion zsh "
    assert fish_tab(installed, tmp_path, "torchx run -s fake -cfg cl") == "torchx run -s fake -cfg cluster="
