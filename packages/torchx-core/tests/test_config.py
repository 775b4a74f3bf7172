"""``torchx.runner.config`` behaves as TorchX 0.7's: typed load/apply, dump, sections, file lookup."""

from __future__ import annotations

import io
import logging
from collections.abc import Callable
from pathlib import Path

import pytest
from torchx.runner import config

TYPED_SCHEDULER = """
from typing import Dict, List
from torchx.schedulers.api import Scheduler
from torchx.specs import runopts


class Typed(Scheduler):
    def __init__(self, session_name, **kwargs):
        super().__init__("typed", session_name)

    def _run_opts(self):
        opts = runopts()
        opts.add("queue", type_=str, required=True, help="the queue to submit to, a long help text that gets cut")
        opts.add("nodes", type_=int, default=1, help="nodes")
        opts.add("share", type_=float, default=0.5, help="share")
        opts.add("exclusive", type_=bool, default=False, help="exclusive")
        opts.add("tags", type_=List[str], default=["a", "b"], help="tags")
        opts.add("mounts", type_=List[str], help="mounts")
        opts.add("labels", type_=Dict[str, str], help="labels")
        return opts

    def _submit_dryrun(self, app, cfg):
        raise NotImplementedError

    def schedule(self, dryrun_info):
        raise NotImplementedError

    def describe(self, app_id):
        return None

    def list(self):
        return []

    def _cancel_existing(self, app_id):
        pass


def create_scheduler(session_name, **kwargs):
    return Typed(session_name)
"""

TYPED_PLUGIN = """
from torchx.plugins import hookimpl, SchedulerPlugin

@hookimpl
def torchx_schedulers():
    yield SchedulerPlugin("typed", "typed_sched.scheduler:create_scheduler", "typed options")
"""


@pytest.fixture
def typed(make_dist: Callable[..., Path]) -> str:
    make_dist(
        "torchx-typed-sched",
        {"torchx": {"typed": "typed_sched.plugin"}},
        {
            "typed_sched/__init__.py": "",
            "typed_sched/plugin.py": TYPED_PLUGIN,
            "typed_sched/scheduler.py": TYPED_SCHEDULER,
        },
    )
    return "typed"


CONFIG = """\
[typed]
queue = q1
nodes = 4
share: 0.25
exclusive = yes
tags = x;y,z
mounts = None
labels = team:ml;tier:gold
bogus = 1
"""


def test_load_converts_to_option_types_and_keeps_given_keys(typed: str, caplog: pytest.LogCaptureFixture) -> None:
    cfg: dict = {"nodes": 8, "mounts": ["m"]}
    with caplog.at_level(logging.WARNING):
        config.load(typed, io.StringIO(CONFIG), cfg)
    assert cfg == {
        "nodes": 8,  # given: kept
        "mounts": ["m"],
        "queue": "q1",
        "share": 0.25,  # `key: value` lines are read too
        "exclusive": True,
        "tags": ["x", "y,z"],  # lists are `;`-separated, as TorchX writes them
        "labels": {"team": "ml", "tier": "gold"},
    }
    assert "bogus" in caplog.text
    assert "not a run option" in caplog.text


def test_load_none_and_bad_values(typed: str) -> None:
    cfg: dict = {}
    config.load(typed, io.StringIO("[typed]\nmounts = None\n"), cfg)
    assert cfg == {"mounts": None}
    with pytest.raises(ValueError, match="nodes = many: expected int"):
        config.load(typed, io.StringIO("[typed]\nnodes = many\n"), {})
    with pytest.raises(ValueError, match="not a registered scheduler"):
        config.load("nope", io.StringIO("[nope]\n"), {})


def test_apply_reads_dirs_in_order(typed: str, tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    (first / ".torchxconfig").write_text("[typed]\nnodes = 2\n")
    (second / ".torchxconfig").write_text("[typed]\nnodes = 3\nqueue = from_b\n")
    cfg: dict = {"share": 1.0}
    config.apply(typed, cfg, dirs=[str(first), str(second)])
    assert cfg == {"share": 1.0, "nodes": 2, "queue": "from_b"}
    assert config.find_configs([str(first), str(tmp_path)]) == [str(first / ".torchxconfig")]


def test_find_configs_defaults_and_torchxconfig(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (isolated / ".torchxconfig").write_text("[x]\n")
    assert config.find_configs() == config.find_configs([]) == [str(isolated / ".torchxconfig")]
    monkeypatch.setenv("TORCHXCONFIG", str(isolated / "missing"))
    with pytest.raises(FileNotFoundError, match="TORCHXCONFIG"):
        config.find_configs()
    monkeypatch.setenv("TORCHXCONFIG", "")
    assert config.find_configs() == []


def test_dump_all_required_only_and_round_trip(typed: str) -> None:
    out = io.StringIO()
    config.dump(out, [typed], required_only=True)
    fixme = "#FIXME:(str) the queue to submit to, a long help text that gets cut"[:60] + "..."
    assert out.getvalue() == f"[typed]\nqueue = {fixme}\n\n"  # cut at 60 characters, as TorchX
    out = io.StringIO()
    config.dump(out, [typed])
    text = out.getvalue()
    assert "nodes = 1\nshare = 0.5\nexclusive = False\ntags = a;b\nmounts = None\nlabels = None\n" in text
    cfg: dict = {"queue": "q"}
    config.load(typed, io.StringIO(text), cfg)
    assert cfg == {
        "queue": "q",
        "nodes": 1,
        "share": 0.5,
        "exclusive": False,
        "tags": ["a", "b"],
        "mounts": None,
        "labels": None,
    }
    everything = io.StringIO()
    config.dump(everything)  # no schedulers: every installed one
    assert "[typed]\n" in everything.getvalue()
    assert "[fake]" not in everything.getvalue()
    with pytest.raises(ValueError, match="not a registered scheduler"):
        config.dump(io.StringIO(), ["nope"])


def test_sections(isolated: Path) -> None:
    (isolated / ".torchxconfig").write_text(
        "[component:dist.ddp]\nj = 1x2\n\n[component:empty]\n\n[component:]\nx = 1\n\n[cli:run]\ncomponent = utils.echo\n"
    )
    assert config.load_sections("component") == {"dist.ddp": {"j": "1x2"}, "empty": {}}
    assert config.get_configs("component", "dist.ddp") == {"j": "1x2"}
    assert config.get_configs("component", "nope") == {}
    assert config.get_config("cli", "run", "component") == "utils.echo"
    assert config.get_config("cli", "run", "nope") is None
