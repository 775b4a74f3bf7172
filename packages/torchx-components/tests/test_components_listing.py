"""Discovery: every builtin is listed (from source, importing nothing), lints cleanly and shows typed help."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torchx.plugins
from torchx.cli.main import run_cli
from torchx.runner import get_runner
from torchx.specs.file_linter import validate
from torchx.specs.finder import ComponentLoadError, get_component, get_components

BUILTINS = {
    "dist.ddp",
    "dist.spmd",
    "metrics.tensorboard",
    "serve.torchserve",
    "utils.binary",
    "utils.booth",
    "utils.copy",
    "utils.echo",
    "utils.python",
    "utils.sh",
    "utils.touch",
}
COMPONENT_MODULES = {
    "torchx_components.dist",
    "torchx_components.metrics",
    "torchx_components.serve",
    "torchx_components.utils",
}


def python(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def test_every_builtin_is_listed_with_a_summary() -> None:
    components = get_components()
    assert set(components) >= BUILTINS
    for name in BUILTINS:
        c = components[name]
        assert c.description, name
        assert "\n" not in c.description, name
        assert c.module == "torchx_components." + name.rpartition(".")[0]


@pytest.mark.parametrize("name", sorted(BUILTINS))
def test_builtin_lints_cleanly(name: str) -> None:
    component = get_components()[name]
    assert validate(component.path, component.fn_name, include_warnings=True) == []  # every arg documented


def test_listing_imports_no_component_module() -> None:
    out = python(
        """
        import json, sys
        from torchx.specs.finder import get_components
        names = sorted(get_components())
        loaded = sorted(m for m in sys.modules if m.startswith("torchx_components."))
        heavy = sorted(m for m in ("fsspec", "torch", "urllib.request", "http.server") if m in sys.modules)
        print(json.dumps({"names": names, "loaded": loaded, "heavy": heavy}))
        """,
        env={"TORCHX_NO_PLUGIN_CACHE": "1"},
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert set(result["names"]) >= BUILTINS
    assert result["loaded"] == []
    assert result["heavy"] == []


def test_builtins_cli_lists_one_line_each(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["builtins"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("Found ")
    listed = {line.split()[1]: line for line in lines[1:]}
    assert set(listed) >= BUILTINS
    assert "Distributed data parallel training" in listed["dist.ddp"]
    assert run_cli(["builtins", "--print", "utils.echo"]) == 0
    source = capsys.readouterr().out
    assert "\ndef echo(" in source
    assert "from torchx.version import TORCHX_IMAGE\n" in source  # runs when saved


@pytest.mark.parametrize("name", sorted(BUILTINS))
def test_typed_help(name: str) -> None:
    # `torchx run NAME --help` (via a subprocess: it prints argparse help and needs a scheduler name)
    out = subprocess.run(
        [sys.executable, "-m", "torchx", "run", "-s", "local_cwd", name, "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"usage: torchx run {name}")
    summary = get_components()[name].description
    assert summary[:40] in " ".join(out.stdout.split())
    assert "(str, default:" in out.stdout or "(str, required)" in out.stdout


def test_dist_help_shows_types() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "torchx", "run", "-s", "local_cwd", "dist.ddp", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    text = " ".join(out.stdout.split())
    for piece in ("-j J", "(int, default: 29500)", "(dict[str, str] | None, default: None)", "--debug [DEBUG]"):
        assert piece in text, piece


def test_listing_and_materializing_work_without_fsspec() -> None:
    out = python(
        """
        import sys
        sys.modules["fsspec"] = None  # as if not installed
        from torchx.runner import get_runner
        from torchx.specs.finder import get_components
        assert "utils.copy" in get_components()
        app = get_runner().component_app("utils.copy", ["--src", "s3://b/k", "--dst", "/tmp/x"])
        print(app.roles[0].args)
        """,
        env={"TORCHX_NO_PLUGIN_CACHE": "1"},
    )
    assert out.returncode == 0, out.stderr
    assert "torchx_components.apps.copy" in out.stdout


BROKEN_PLUGIN = """
from torchx.plugins import ComponentSource, hookimpl

@hookimpl
def torchx_components():
    yield ComponentSource(prefix="extra", module="extra_components")
"""

BROKEN_MODULE = '''
import not_installed_dependency_xyz
from torchx import specs


def job(msg: str = "x") -> specs.AppDef:
    """A component whose module cannot be imported.

    Args:
        msg: a message
    """
    return specs.AppDef(name="job")
'''

GOOD_MODULE = '''
from torchx import specs


def fine(msg: str = "x") -> specs.AppDef:
    """A component next to a broken one.

    Args:
        msg: a message
    """
    return specs.AppDef(name="fine", roles=[specs.Role(name="r", image="i", entrypoint="echo", args=[msg])])
'''


def test_broken_component_module_is_reported_and_others_still_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second component package whose module needs a missing dependency: listed, fails alone when run."""
    site = tmp_path / "site"
    (site / "extra_components").mkdir(parents=True)
    (site / "extra_components" / "__init__.py").write_text("")
    (site / "extra_components" / "plugin.py").write_text(BROKEN_PLUGIN)
    (site / "extra_components" / "broken.py").write_text(BROKEN_MODULE)
    (site / "extra_components" / "good.py").write_text(GOOD_MODULE)
    dist_info = site / "extra_components-1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: extra-components\nVersion: 1.0\n")
    (dist_info / "entry_points.txt").write_text("[torchx]\nextra = extra_components.plugin\n")
    monkeypatch.syspath_prepend(str(site))
    torchx.plugins.reset()
    try:
        components = get_components()
        assert {"extra.broken.job", "extra.good.fine"} <= set(components)
        assert set(components) >= BUILTINS
        with pytest.raises(ComponentLoadError, match="extra.broken.job.*not_installed_dependency_xyz"):
            get_component("extra.broken.job").fn  # noqa: B018 - loading is the point
        runner = get_runner()
        assert runner.component_app("extra.good.fine", ["--msg", "ok"]).roles[0].args == ["ok"]
        assert runner.component_app("utils.echo", ["--msg", "still"]).roles[0].args == ["still"]
    finally:
        for mod in [m for m in sys.modules if m == "extra_components" or m.startswith("extra_components.")]:
            del sys.modules[mod]
        torchx.plugins.reset()
