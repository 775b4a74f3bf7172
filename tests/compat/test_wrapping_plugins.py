"""A namespace plugin that wraps a builtin scheduler, importing it through its upstream module
path when it is imported (issue 30's example, ``plugins/wrapping_plugins``), and one that
imports torchx modules of every layer when imported: both load, and the scheduler works with
every verb and the Runner API, installed as a distribution or as a plain PYTHONPATH directory,
with the plugin cache cold and warm."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torchx.plugins
from torchx.testing import run_torchx

pytest.importorskip("torchx_components")
pytest.importorskip("torchx_sched_local")

SOURCE = Path(__file__).parent / "plugins" / "wrapping_plugins"


def _forget_namespace_modules() -> None:
    for key in [k for k in sys.modules if k == "torchx_plugins" or k.startswith("torchx_plugins.")]:
        del sys.modules[key]


@pytest.fixture(params=["installed", "pythonpath"])
def acme(
    request: pytest.FixtureRequest,
    use_dist: Callable[[str], Path],
    isolated: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[str]:
    """The wrapping plugins, installed as a distribution or as a plain directory on PYTHONPATH."""
    if request.param == "installed":
        use_dist("wrapping_plugins")
    else:
        plain = isolated.parent / "plain"
        shutil.copytree(SOURCE / "torchx_plugins", plain / "torchx_plugins")
        monkeypatch.syspath_prepend(str(plain))
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(plain), os.environ.get("PYTHONPATH", "")]).strip(":"))
    _forget_namespace_modules()
    torchx.plugins.reset()
    torchx.plugins.registry.cache_clear()
    yield str(request.param)
    _forget_namespace_modules()
    torchx.plugins.reset()
    torchx.plugins.registry.cache_clear()


def _wait_for(handle: str, state: str) -> str:
    deadline = time.monotonic() + 30
    while True:
        status = json.loads(run_torchx("status", handle, "--json").stdout)
        if status["state"] == state or time.monotonic() > deadline:
            return str(status["state"])
        time.sleep(0.1)


def test_every_verb_with_a_scheduler_wrapping_the_local_one(acme: str, isolated: Path) -> None:
    for _ in ("cold cache", "warm cache"):
        opts = run_torchx("runopts", "acme")
        assert opts.returncode == 0, opts.stderr
        assert opts.stdout.startswith("acme:") and "log_dir" in opts.stdout, opts.stdout
        assert "plugin error" not in opts.stderr, opts.stderr

    dry = run_torchx("run", "--dryrun", "-s", "acme", "utils.echo", "--msg", "hi")
    assert dry.returncode == 0, dry.stderr
    assert "TORCHX_JOB_ID=acme://torchx/" in dry.stdout, dry.stdout

    run = run_torchx("run", "-s", "acme", "utils.sh", "-h", "acme_cpu_3", "--", "sh", "-c", "echo wrapped; touch here")
    assert run.returncode == 0, run.stderr
    handle = run.stdout.strip().splitlines()[0]
    assert handle.startswith("acme://torchx/"), run.stdout
    assert run_torchx("wait", handle).returncode == 0
    assert _wait_for(handle, "SUCCEEDED") == "SUCCEEDED"
    assert (isolated / "here").exists()
    log = run_torchx("log", f"{handle}/sh/0")
    assert "wrapped" in log.stdout, log.stdout + log.stderr
    assert run_torchx("describe", handle).returncode == 0
    listed = run_torchx("list", "-s", "acme", "--json")
    assert handle in {a["app_handle"] for a in json.loads(listed.stdout)}, listed.stdout + listed.stderr

    long = run_torchx("run", "--detach", "-s", "acme", "utils.sh", "sleep", "60")
    long_handle = long.stdout.strip().splitlines()[0]
    assert _wait_for(long_handle, "RUNNING") == "RUNNING"
    cancel = run_torchx("cancel", long_handle)
    assert cancel.returncode == 0, cancel.stderr
    assert _wait_for(long_handle, "CANCELLED") == "CANCELLED"

    plugins = run_torchx("plugins")
    assert plugins.returncode == 0, plugins.stdout + plugins.stderr
    assert "[torchx_plugins.schedulers] torchx_plugins.schedulers.acme" in plugins.stdout
    assert "ERROR" not in plugins.stdout, plugins.stdout


def test_registry_and_runner_api(acme: str, isolated: Path) -> None:
    from torchx import specs
    from torchx.plugins import PluginType, registry
    from torchx.runner import get_runner

    assert "acme" in registry().get(PluginType.SCHEDULER)
    assert registry().get(PluginType.NAMED_RESOURCE)["acme_cpu_3"]().cpu == 3
    assert registry().load_errors() == []
    assert specs.resource(h="acme_cpu_3").memMB == 1536

    app = specs.AppDef(
        "acmeapp",
        roles=[
            specs.Role(
                "trainer",
                image=str(isolated),
                entrypoint="sh",
                args=["-c", "echo replica=$TORCHX_REPLICA_IDX"],
                num_replicas=2,
                resource=specs.resource(h="acme_cpu_3"),
            )
        ],
    )
    with get_runner() as runner:
        handle = runner.run(app, scheduler="acme")
        assert handle.startswith("acme://"), handle
        status = runner.wait(handle, wait_interval=0.1, timeout=30)
        assert status is not None and status.state == specs.AppState.SUCCEEDED, status
        assert "".join(runner.log_lines(handle, "trainer", 1)) == "replica=1\n"
        assert handle in {a.app_handle for a in runner.list("acme")}
