"""Test isolation: every test gets its own HOME, cwd, caches and a fresh plugin registry."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torchx.plugins
from torchx.testing import isolate


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    work = isolate(tmp_path, monkeypatch)
    monkeypatch.delenv("TORCHX_NO_PLUGIN_CACHE", raising=False)
    from torchx.specs import _named_resource_factories

    saved = dict(_named_resource_factories)
    loaded = _named_resource_factories._loaded
    _named_resource_factories.clear()
    _named_resource_factories._loaded = False
    yield work
    _named_resource_factories.clear()
    _named_resource_factories.update(saved)
    _named_resource_factories._loaded = loaded


@pytest.fixture
def make_dist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Path]]:
    """Installs a fake distribution into a fresh site dir on sys.path.

    ``make_dist("name", {"group": {"ep": "value"}}, {"module.py": "source"})``
    """
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    monkeypatch.syspath_prepend(str(site))
    created: list[str] = []

    def make(
        name: str, entry_points: dict[str, dict[str, str]], modules: dict[str, str] | None = None, version: str = "1.0"
    ) -> Path:
        dist_info = site / f"{name.replace('-', '_')}-{version}.dist-info"
        dist_info.mkdir()
        (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        lines = []
        for group, eps in entry_points.items():
            lines.append(f"[{group}]")
            lines += [f"{k} = {v}" for k, v in eps.items()]
        (dist_info / "entry_points.txt").write_text("\n".join(lines) + "\n")
        for rel, source in (modules or {}).items():
            path = site / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(source))
            created.append(rel)
        torchx.plugins.reset()
        return site

    yield make
    for rel in created:
        mod = rel[:-3].replace("/", ".").removesuffix(".__init__")
        for key in [k for k in sys.modules if k == mod or k.startswith(mod + ".")]:
            del sys.modules[key]


FAKE_SCHEDULER = '''
from __future__ import annotations

from dataclasses import dataclass
from torchx.schedulers.api import DescribeAppResponse, ListAppResponse, Scheduler, SchedulerCapabilities, StructuredOpts
from torchx.specs import AppDryRunInfo, AppState, RetryPolicy, RoleStatus, ReplicaStatus, runopts, macros


@dataclass
class FakeOpts(StructuredOpts):
    cluster: str = "default"
    """Cluster to submit to."""
    retries: int = 0
    """How often to retry."""
    mail_user: str | None = None
    """Who gets mail."""


APPS: dict = {}


class FakeScheduler(Scheduler):
    capabilities = SchedulerCapabilities(
        log_since_until=False, log_streams=frozenset({"combined", "stdout"}), mounts=frozenset({"bind"}),
        retry_policies=frozenset({RetryPolicy.APPLICATION}),
    )

    def __init__(self, session_name: str, **kwargs: object) -> None:
        super().__init__("fake", session_name)
        self.kwargs = kwargs

    def _run_opts(self) -> runopts:
        return FakeOpts.as_runopts()

    def _submit_dryrun(self, app, cfg):
        opts = FakeOpts.from_cfg(cfg)
        request = {
            "name": app.name,
            "cluster": opts.cluster,
            "replicas": [
                macros.Values(img_root="", app_id="fake-1", replica_id=str(i)).apply(role).args
                for role in app.roles for i in range(role.num_replicas)
            ],
            "env": [role.env for role in app.roles],
        }
        return AppDryRunInfo(request, lambda r: f"FAKE {r['name']} on {r['cluster']}")

    def schedule(self, dryrun_info):
        app_id = f"{dryrun_info.request['name']}-{len(APPS)}"
        APPS[app_id] = {"state": AppState.SUCCEEDED, "app": dryrun_info.app, "lines": ["a\\n", "b\\n", "ab\\n"]}
        return app_id

    def describe(self, app_id):
        rec = APPS.get(app_id)
        if rec is None:
            return None
        roles = rec["app"].roles
        return DescribeAppResponse(
            app_id=app_id, state=rec["state"], num_restarts=0, roles=roles,
            roles_statuses=[RoleStatus(r.name, [ReplicaStatus(0, rec["state"], r.name, "h")]) for r in roles],
        )

    def list(self, cfg=None):
        return [ListAppResponse(app_id=k, state=v["state"], name=k) for k, v in APPS.items()]

    def _cancel_existing(self, app_id):
        APPS[app_id]["state"] = AppState.CANCELLED

    def _delete_existing(self, app_id):
        del APPS[app_id]

    def log_iter(self, app_id, role_name, k=0, regex=None, since=None, until=None, should_tail=False, streams=None):
        import re
        return [line for line in APPS[app_id]["lines"] if not regex or re.search(regex, line)]


def create_scheduler(session_name: str, **kwargs: object) -> FakeScheduler:
    return FakeScheduler(session_name, **kwargs)
'''

FAKE_PLUGIN = """
from torchx.plugins import hookimpl, SchedulerPlugin

@hookimpl
def torchx_schedulers():
    yield SchedulerPlugin("fake", "fake_sched.scheduler:create_scheduler", "a fake scheduler for tests")
"""


@pytest.fixture
def fake_scheduler(make_dist: Callable[..., Path]) -> str:
    """Installs a plugin distribution providing the scheduler ``fake``; returns its name."""
    make_dist(
        "torchx-fake-sched",
        {"torchx": {"fake": "fake_sched.plugin"}},
        {"fake_sched/__init__.py": "", "fake_sched/plugin.py": FAKE_PLUGIN, "fake_sched/scheduler.py": FAKE_SCHEDULER},
    )
    return "fake"
