"""A component package registered under the legacy ``torchx.components`` group behaves as
advanced-usage.rst "Registering Custom Components" documents (plugins/legacy_comps)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from torchx.testing import run_torchx

pytest.importorskip("torchx_components")
pytest.importorskip("torchx_sched_local")


def _listed(output: str) -> set[str]:
    names = set()
    for line in output.splitlines()[1:]:
        words = line.split()
        if len(words) >= 2 and words[0].rstrip(".").isdigit():
            names.add(words[1])
    return names


def test_builtins_without_legacy_entries_have_no_prefix() -> None:
    names = _listed(run_torchx("builtins").stdout)
    assert {"dist.ddp", "utils.echo"} <= names
    assert not any(n.startswith("torchx.") for n in names)


def test_registering_components_hides_builtins_and_torchx_entry_adds_them_back(
    use_dist: Callable[[str], Path],
) -> None:
    use_dist("legacy_comps")
    proc = run_torchx("builtins")
    assert proc.returncode == 0, proc.stderr
    names = _listed(proc.stdout)
    # foo = my_project.bar, test = my_project: one module under two names gives two aliases
    assert {"foo.baz.trainer", "test.bar.baz.trainer"} <= names
    # torchx = torchx.components: the builtins, under the torchx.* prefix only
    assert {"torchx.dist.ddp", "torchx.utils.echo"} <= names
    assert "dist.ddp" not in names
    assert "utils.echo" not in names
    # my_project/nsdir has no __init__.py: a namespace sub-package is not searched
    assert not any("hidden" in n for n in names)
    assert "baz.trainer" not in names  # no "_" alias registered


def test_registered_components_run(use_dist: Callable[[str], Path]) -> None:
    use_dist("legacy_comps")
    run = run_torchx("run", "-s", "local_cwd", "foo.baz.trainer", "--name", "test app")
    assert run.returncode == 0, run.stderr
    assert "trained test app for 1 epochs" in run.stdout
    builtin = run_torchx("run", "-s", "local_cwd", "torchx.utils.echo", "--msg", "prefixed builtin")
    assert builtin.returncode == 0, builtin.stderr
    assert "prefixed builtin" in builtin.stdout
    gone = run_torchx("run", "-s", "local_cwd", "utils.echo")
    assert gone.returncode != 0
    assert "unknown component 'utils.echo'" in gone.stderr


def test_runner_sees_the_same_names(use_dist: Callable[[str], Path]) -> None:
    use_dist("legacy_comps")
    from torchx.runner import get_runner
    from torchx.specs.finder import get_components

    names = set(get_components())
    assert {"foo.baz.trainer", "test.bar.baz.trainer", "torchx.dist.ddp"} <= names
    assert "dist.ddp" not in names
    with get_runner() as runner:
        info = runner.dryrun_component("test.bar.baz.trainer", ["--epochs", "3"], "local_cwd")
        assert info._app is not None
        assert "for 3 epochs" in info._app.roles[0].args[1]
