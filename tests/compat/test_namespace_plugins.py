"""Plugins written the way upstream TorchX's current docs teach (plugins/nightly_plugins: a
scheduler, a tracker and fractional named resources in ``torchx_plugins.*`` namespace packages,
no entry point) work with every verb and the Runner API, installed as a distribution or as a
plain directory on ``PYTHONPATH``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torchx.plugins
from torchx.testing import run_torchx

PLUGINS = Path(__file__).parent / "plugins"

pytest.importorskip("torchx_components")

SOURCE = PLUGINS / "nightly_plugins"


def _forget_namespace_modules() -> None:
    for key in [k for k in sys.modules if k == "torchx_plugins" or k.startswith("torchx_plugins.")]:
        del sys.modules[key]


@pytest.fixture
def on_path(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., None]]:
    """``on_path(dir)`` puts a plain directory first on ``sys.path`` and ``PYTHONPATH``
    (last with ``last=True``)."""

    def add(path: Path, last: bool = False) -> None:
        if last:
            monkeypatch.setattr(sys, "path", [*sys.path, str(path)])
        else:
            monkeypatch.syspath_prepend(str(path))
        parts = [str(path), os.environ.get("PYTHONPATH", "")]
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join(parts[::-1] if last else parts).strip(os.pathsep))
        _forget_namespace_modules()
        torchx.plugins.reset()
        torchx.plugins.registry.cache_clear()

    yield add
    _forget_namespace_modules()
    torchx.plugins.reset()
    torchx.plugins.registry.cache_clear()


@pytest.fixture(params=["installed", "pythonpath"])
def nightly(
    request: pytest.FixtureRequest,
    use_dist: Callable[[str], Path],
    on_path: Callable[..., None],
    isolated: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> str:
    """The nightly plugins, installed as a distribution or as a plain directory on PYTHONPATH."""
    if request.param == "installed":
        use_dist("nightly_plugins")
        _forget_namespace_modules()
    else:  # only the namespace directories: no metadata of any distribution next to them
        plain = isolated.parent / "plain"
        shutil.copytree(SOURCE / "torchx_plugins", plain / "torchx_plugins")
        on_path(plain)
    monkeypatch.setenv("NIGHTLY_PROC_STATE", str(isolated.parent / "nightly-state"))
    return str(request.param)


def _wait_for(handle: str, state: str) -> str:
    deadline = time.monotonic() + 30
    while True:
        status = json.loads(run_torchx("status", handle, "--json").stdout)
        if status["state"] == state or time.monotonic() > deadline:
            return str(status["state"])
        time.sleep(0.1)


def test_every_verb_with_the_namespace_scheduler_and_a_fractional_resource(nightly: str, isolated: Path) -> None:
    opts = run_torchx("runopts", "nightly_proc")
    assert opts.returncode == 0, opts.stderr
    assert "max_gpus" in opts.stdout

    dry = run_torchx("run", "--dryrun", "-s", "nightly_proc", "utils.echo", "--msg", "hi")
    assert dry.returncode == 0, dry.stderr
    assert "NightlyRequest" in dry.stdout

    script = 'echo "res=$NIGHTLY_RESOURCE"; touch made-here'
    run = run_torchx("run", "-s", "nightly_proc", "utils.sh", "-h", "nightly_gpu_2", "--", "sh", "-c", script)
    assert run.returncode == 0, run.stderr
    handle = run.stdout.strip().splitlines()[0]
    assert handle.startswith("nightly_proc://torchx/"), run.stdout
    assert run_torchx("wait", handle).returncode == 0
    assert _wait_for(handle, "SUCCEEDED") == "SUCCEEDED"
    assert (isolated / "made-here").exists()
    log = run_torchx("log", f"{handle}/sh/0")
    assert "res=nightly_gpu_2" in log.stdout, log.stdout + log.stderr
    assert run_torchx("describe", handle).returncode == 0
    listed = run_torchx("list", "-s", "nightly_proc", "--json")
    assert handle in {a["app_handle"] for a in json.loads(listed.stdout)}, listed.stdout + listed.stderr

    too_big = run_torchx("run", "-s", "nightly_proc", "-cfg", "max_gpus=1", "utils.sh", "-h", "nightly_big", "true")
    assert too_big.returncode != 0
    assert "max_gpus is 1" in too_big.stderr and "Traceback" not in too_big.stderr

    long = run_torchx("run", "-s", "nightly_proc", "utils.sh", "sleep", "60")
    long_handle = long.stdout.strip().splitlines()[0]
    assert _wait_for(long_handle, "RUNNING") == "RUNNING"
    assert run_torchx("cancel", long_handle).returncode == 0
    assert _wait_for(long_handle, "CANCELLED") == "CANCELLED"

    plugins = run_torchx("plugins")
    assert plugins.returncode == 0, plugins.stdout + plugins.stderr
    assert "[torchx_plugins.schedulers] torchx_plugins.schedulers.nightly_proc" in plugins.stdout
    if nightly == "installed":
        assert "nightly-plugins 2026.10.1" in plugins.stdout
    else:
        assert "(not installed)" in plugins.stdout


def test_runner_api_and_named_resources(nightly: str, isolated: Path) -> None:
    from torchx import specs
    from torchx.plugins import PluginType, registry, resource_tags
    from torchx.runner import get_runner

    half = specs.resource(h="nightly_gpu_4")
    assert (half.gpu, half.cpu, half.is_fractional(), half.get_resource_name()) == (4, 48, True, "nightly_gpu_4")
    whole = specs.resource(h="nightly_gpu_8")
    assert (whole.gpu, whole.is_fractional(), whole.get_resource_name()) == (8, False, "nightly_gpu_8")
    alias = specs.resource(h="nightly_big")
    assert (alias.gpu, alias.tags[resource_tags.RESOURCE_NAME], alias.is_fractional()) == (8, "nightly_gpu", False)
    assert specs.resource(h="nightly.cpu_16").memMB == 16 * 1024
    assert {"nightly_gpu", "nightly_gpu_1", "nightly.cpu", "nightly.cpu_32"} <= set(specs.named_resources)
    named = registry().get(PluginType.NAMED_RESOURCE)
    assert named["nightly_gpu_2"]().gpu == 2
    assert "nightly_proc" in registry().get(PluginType.SCHEDULER)
    assert registry().load_errors() == []

    app = specs.AppDef(
        "nsapp",
        roles=[
            specs.Role(
                "trainer",
                image=str(isolated),
                entrypoint="sh",
                args=["-c", "echo rank0=$NIGHTLY_RANK0 res=$NIGHTLY_RESOURCE"],
                num_replicas=2,
                resource=specs.resource(h="nightly_gpu_1"),
            )
        ],
    )
    with get_runner() as runner:
        handle = runner.run(app, "nightly_proc")
        status = runner.wait(handle, wait_interval=0.1, timeout=30)
        assert status is not None and status.state == specs.AppState.SUCCEEDED, status
        assert "".join(runner.log_lines(handle, "trainer", 1)) == "rank0=localhost res=nightly_gpu_1\n"
        assert handle in {a.app_handle for a in runner.list("nightly_proc")}


def test_tracker_records_what_the_job_reports(nightly: str, isolated: Path) -> None:
    store = isolated.parent / "runs.jsonl"
    (isolated / ".torchxconfig").write_text(
        f"[torchx:tracker]\nnightly_jsonl =\n\n[tracker:nightly_jsonl]\nconfig = {store}\n"
    )
    job = "from torchx.tracker import app_run_from_env; app_run_from_env().add_metadata(loss=0.5)"
    run = run_torchx("run", "-s", "nightly_proc", "utils.sh", "--", sys.executable, "-c", job)
    assert run.returncode == 0, run.stderr
    handle = run.stdout.strip().splitlines()[0]
    assert _wait_for(handle, "SUCCEEDED") == "SUCCEEDED", run_torchx("log", handle).stdout
    records = [json.loads(line) for line in store.read_text().splitlines()]
    assert [(r["run_id"], r["values"]) for r in records if r["kind"] == "metadata"] == [(handle, {"loss": 0.5})]

    from torchx.tracker.api import build_trackers

    (tracker,) = build_trackers({"nightly_jsonl": str(store)})
    assert tracker.metadata(handle) == {"loss": 0.5}


BROKEN = {
    "schedulers/broken.py": "raise RuntimeError('broken on purpose')\n",
    "schedulers/wrong_kind.py": """
        from torchx.plugins import register
        from torchx.specs import Resource

        @register.named_resource()
        def misplaced() -> Resource:
            return Resource(cpu=1, gpu=0, memMB=1)
    """,
    "schedulers/zz_clash.py": """
        from torchx.plugins import register

        @register.scheduler()
        def nightly_proc(session_name, **kwargs):
            raise AssertionError("the first registration wins")
    """,
    "named_resources/deep/nested.py": """
        from torchx.plugins import register
        from torchx.specs import Resource

        @register.named_resource()
        def deep_res() -> Resource:
            return Resource(cpu=3, gpu=0, memMB=3)
    """,
    "named_resources/_private.py": "raise RuntimeError('private modules are not imported')\n",
    "named_resources/lookup_at_import.py": """
        from torchx.plugins import register
        from torchx.specs import Resource, named_resources

        NULL = named_resources["NULL"]  # a lookup while discovery imports this module: it works

        @register.named_resource()
        def registered_after_lookup() -> Resource:
            return Resource(cpu=1, gpu=0, memMB=1)
    """,
}


def test_a_broken_namespace_module_breaks_nothing_and_is_reported(
    nightly: str, on_path: Callable[..., None], tmp_path: Path
) -> None:
    extra = tmp_path / "extra"
    for rel, text in BROKEN.items():
        path = extra / "torchx_plugins" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    on_path(extra, last=True)  # after the nightly plugins: theirs are found first

    from torchx import specs
    from torchx.plugins import PluginType, registry

    assert specs.resource(h="deep_res").cpu == 3  # implicit namespace sub-directory
    errors = registry().load_errors()
    by_module = {e.module: e for e in errors}
    assert "RuntimeError: broken on purpose" in by_module["torchx_plugins.schedulers.broken"].error
    assert "is a named_resource but is under torchx_plugins.schedulers" in (
        by_module["torchx_plugins.schedulers.wrong_kind"].error
    )
    clash = by_module["torchx_plugins.schedulers.zz_clash"]
    assert (clash.name, clash.plugin_type) == ("nightly_proc", "scheduler")
    assert not any("_private" in e.module for e in errors)
    assert "torchx_plugins.named_resources.lookup_at_import" not in by_module  # no reentrancy error
    assert specs.resource(h="registered_after_lookup").cpu == 1
    assert specs.resource(h="nightly_gpu_2").gpu == 2  # the lookup did not leave half a table behind
    assert "misplaced" not in registry().get(PluginType.NAMED_RESOURCE)
    assert registry().load_errors(PluginType.TRACKER) == []

    listing = run_torchx("plugins")
    assert listing.returncode == 1
    assert "broken on purpose" in listing.stdout and "Traceback" not in listing.stdout + listing.stderr
    run = run_torchx("run", "-s", "nightly_proc", "utils.echo", "--msg", "still-works")
    assert run.returncode == 0, run.stderr
    handle = run.stdout.strip().splitlines()[0]
    assert _wait_for(handle, "SUCCEEDED") == "SUCCEEDED"


def test_entry_points_win_over_namespace_plugins(
    use_dist: Callable[[str], Path], on_path: Callable[..., None], tmp_path: Path
) -> None:
    use_dist("legacy_sched")  # registers scheduler legacy_proc and resource gpu_x2 through entry points
    ns = tmp_path / "ns" / "torchx_plugins" / "named_resources"
    ns.mkdir(parents=True)
    (ns / "shadow.py").write_text(
        "from torchx.plugins import register\nfrom torchx.specs import Resource\n\n"
        "@register.named_resource()\ndef gpu_x2() -> Resource:\n    return Resource(cpu=99, gpu=0, memMB=1)\n"
    )
    on_path(tmp_path / "ns")
    from torchx import specs
    from torchx.plugins import registry

    assert specs.resource(h="gpu_x2").cpu != 99
    (error,) = registry().load_errors()
    assert (error.module, error.name, error.plugin_type) == (
        "torchx_plugins.named_resources.shadow",
        "gpu_x2",
        "named_resource",
    )
    assert "legacy-sched" in error.error


def test_plugins_source_selects_the_channels(
    use_dist: Callable[[str], Path], on_path: Callable[..., None], monkeypatch: pytest.MonkeyPatch
) -> None:
    use_dist("legacy_sched")
    on_path(SOURCE)  # the source tree (its build metadata makes it look installed; either way)
    from torchx.plugins import get_registry, registry

    def schedulers(source: str) -> set[str]:
        monkeypatch.setenv("TORCHX_PLUGINS_SOURCE", source)
        torchx.plugins.reset()
        return set(get_registry().schedulers)

    assert {"nightly_proc", "legacy_proc", "local_cwd"} <= schedulers("3")
    assert {"nightly_proc", "local_cwd"} <= schedulers("1") and "legacy_proc" not in schedulers("1")
    assert {"legacy_proc", "local_cwd"} <= schedulers("2") and "nightly_proc" not in schedulers("2")
    assert "local_cwd" in schedulers("0") and not {"nightly_proc", "legacy_proc"} & schedulers("0")
    monkeypatch.setenv("TORCHX_PLUGINS_SOURCE", "7")
    registry.cache_clear()
    with pytest.raises(ValueError, match="TORCHX_PLUGINS_SOURCE"):
        registry()


WARM = """
import sys, torchx.plugins
from torchx.plugins import get_registry
reg = get_registry()
loaded = sorted(m for m in sys.modules if m.startswith("torchx_plugins.") and m.count(".") > 1)
from torchx import specs
print(loaded, "nightly_proc" in reg.schedulers, specs.resource(h=sys.argv[1]).cpu, sorted(m for m in sys.modules if m.startswith("torchx_plugins.") and m.count(".") > 1))
"""


def test_warm_start_imports_no_namespace_module_and_the_cache_notices_changes(tmp_path: Path, isolated: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(SOURCE / "torchx_plugins", src / "torchx_plugins")
    env = {**os.environ, "PYTHONPATH": str(src)}

    def warm(resource: str) -> str:
        proc = subprocess.run([sys.executable, "-c", WARM, resource], capture_output=True, text=True, env=env)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()

    cold = warm("nightly_gpu_1")
    assert cold.startswith("['torchx_plugins.named_resources.nightly_hosts'"), cold  # discovery imported them
    assert warm("nightly_gpu_1") == "[] True 12 ['torchx_plugins.named_resources.nightly_hosts']"

    hosts = src / "torchx_plugins" / "named_resources" / "nightly_hosts.py"
    hosts.write_text(hosts.read_text().replace("cpu=int(96 * fractional)", "cpu=int(96 * fractional) + 1"))
    os.utime(hosts, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    warm("nightly_gpu_1")
    assert warm("nightly_gpu_1").startswith("[] True 13")  # changed module, same names: still lazy

    new = src / "torchx_plugins" / "named_resources" / "added_later.py"
    new.write_text(
        "from torchx.plugins import register\nfrom torchx.specs import Resource\n\n"
        "@register.named_resource()\ndef later() -> Resource:\n    return Resource(cpu=7, gpu=0, memMB=1)\n"
    )
    assert " 7 " in warm("later")  # a new module is found without clearing any cache
    assert warm("later").startswith("[] True 7")

    empty = src / "torchx_plugins" / "tracker"  # a namespace that exists but holds no module yet
    for module in empty.glob("*.py"):
        module.unlink()
    warm("later")
    (empty / "first.py").write_text(
        "from torchx.plugins import register\n\n@register.tracker()\ndef first(config):\n    return None\n"
    )
    probe = "from torchx.plugins import get_registry; print(sorted(get_registry().trackers))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env)
    assert "'first'" in out.stdout, out.stdout + out.stderr
