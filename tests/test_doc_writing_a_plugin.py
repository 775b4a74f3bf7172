"""docs/writing-a-plugin.md works as written: its files are extracted, installed as a real
distribution, its tests run, and its console example gives the output it shows."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from torchx.testing import install_distribution

pytest.importorskip("torchx_components")  # the doc's tests run utils.sh and utils.echo

DOC = Path(__file__).parents[1] / "docs" / "writing-a-plugin.md"
#: a fenced block whose first line is a comment naming the file it is
FILE_BLOCK = re.compile(r"^```(?:python|toml)\n# ([\w./-]+\.(?:py|toml))\n(.*?)^```$", re.M | re.S)


def doc_files() -> dict[str, str]:
    return {path: body for path, body in FILE_BLOCK.findall(DOC.read_text())}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("torchx-sched-bg")
    for path, body in doc_files().items():
        (src / path).parent.mkdir(parents=True, exist_ok=True)
        (src / path).write_text(body)
    return install_distribution(src, tmp_path_factory.mktemp("site"))


def test_the_doc_holds_a_whole_distribution() -> None:
    files = doc_files()
    assert {"pyproject.toml", "src/torchx_sched_bg/scheduler.py", "src/torchx_sched_bg/policy.py"} <= set(files)
    assert "[project.entry-points.torchx]" in files["pyproject.toml"]
    assert not any(path.endswith("plugin.py") for path in files)  # the native way needs no hook module
    scheduler_lines = files["src/torchx_sched_bg/scheduler.py"].splitlines()
    assert len(scheduler_lines) <= 60, f"the minimal scheduler has {len(scheduler_lines)} lines"
    assert "## The scheduler (60 lines)" in DOC.read_text()


def test_the_native_way_is_taught_first_in_at_most_six_concepts() -> None:
    text = DOC.read_text()
    intro = text[: text.index("## Layout")]
    concepts = re.findall(r"^(\d)\. [^\n]*\*\*", intro, re.M)
    assert concepts == [str(i) for i in range(1, len(concepts) + 1)] and 0 < len(concepts) <= 6
    assert "[project.entry-points.torchx]" in intro and text.index("group `torchx`") < text.index("torchx_plugins")
    assert 'entry-points."torchx.plugins"' not in text  # one group: the native way and the older hook modules


def test_discovering_the_docs_plugin_imports_none_of_it(installed: Path) -> None:
    """What the page claims: registrations are read from the metadata, nothing is imported."""
    probe = (
        "import sys\n"
        "from torchx.plugins import get_registry\n"
        "reg = get_registry(refresh=True)\n"
        "print(reg.schedulers['bg'].summary, reg.schedulers['bg_nice'].factory, [c.prefix for c in reg.components])\n"
        "print([m for m in sys.modules if m.startswith('torchx_sched_bg')])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(installed)}
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.splitlines()
    assert first.startswith("background processes here torchx_sched_bg.nice:create_scheduler") and "'bg'" in first
    assert second == "[]"


def test_the_docs_own_tests_pass(installed: Path, tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_bg.py").write_text(doc_files()["tests/test_bg.py"])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(installed), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tests)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "6 passed" in proc.stdout


def test_the_console_example(installed: Path, isolated: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(installed)}
    exe = Path(sys.executable).with_name("torchx")

    def torchx(*args: str) -> str:
        proc = subprocess.run([str(exe), *args], capture_output=True, text=True, env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    handle = torchx("run", "-s", "bg", "bg.greet", "--name", "doc", "--replicas", "2").strip()
    assert re.fullmatch(r"bg://torchx/greet-[0-9a-f]{8}", handle)
    torchx("wait", "--quiet", handle)
    assert sorted(torchx("log", handle).splitlines()) == ["greet/0 hello doc from 0", "greet/1 hello doc from 1"]


#: a fenced block of the namespace section, first line ``# in <path>.py``
NAMESPACE_BLOCK = re.compile(r"^```python\n# in (torchx_plugins/[\w./-]+\.py)\n(.*?)^```$", re.M | re.S)


def test_the_namespace_way_to_publish(installed: Path, tmp_path: Path, isolated: Path) -> None:
    """The doc's ``torchx_plugins`` modules, as a plain directory on PYTHONPATH next to the
    installed bg distribution, register what the doc says."""
    blocks = NAMESPACE_BLOCK.findall(DOC.read_text())
    assert {p for p, _ in blocks} == {
        "torchx_plugins/schedulers/bg_ns.py",
        "torchx_plugins/named_resources/bg_hosts.py",
    }
    plain = tmp_path / "plain"
    for path, body in blocks:
        (plain / path).parent.mkdir(parents=True, exist_ok=True)
        (plain / path).write_text(body)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plain), str(installed)])}
    probe = (
        "from torchx import specs, plugins\n"
        "r = specs.resource(h='bg_host_2')\n"
        "print(r.gpu, r.is_fractional(), r.get_resource_name(), specs.resource(h='bg_big').gpu)\n"
        "print(sorted(n for n in specs.named_resources if n.startswith('bg_')))\n"
        "print('bg_ns' in plugins.registry().get(plugins.PluginType.SCHEDULER))\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "2 True bg_host_2 8",
        "['bg_big', 'bg_host', 'bg_host_1', 'bg_host_2', 'bg_host_4', 'bg_host_8']",
        "True",
    ]
    exe = Path(sys.executable).with_name("torchx")
    run = subprocess.run(
        [str(exe), "run", "-s", "bg_ns", "utils.echo", "--msg", "ns"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    handle = run.stdout.strip().splitlines()[0]
    assert handle.startswith("bg_ns://"), run.stdout
