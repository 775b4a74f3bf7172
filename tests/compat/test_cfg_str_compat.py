"""``-cfg`` strings as TorchX 0.7 documents ``runopts.cfg_from_str``: ``,`` or ``;`` between the
pairs, list values delimited the same way, the last delimiter before a ``key=`` ending the value.
One parser for the CLI, ``.torchxconfig`` and the API."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Dict, List

import pytest
from torchx.specs import runopts
from torchx.testing import run_torchx


def docs_opts() -> runopts:
    """The options of the example in TorchX's ``cfg_from_str`` docstring (plus a dict one)."""
    opts = runopts()
    opts.add("FOO", type_=List[str], default=["a"], help="an optional list option")
    opts.add("BAR", type_=str, required=True, help="a required str option")
    opts.add("E", type_=Dict[str, str], help="a dict option")
    return opts


@pytest.mark.parametrize(
    ("literal", "expected"),
    [
        ("", {}),
        ("UNKNOWN=VALUE", {}),
        ("FOO=v1,v2", {"FOO": ["v1", "v2"]}),
        ("FOO=v1;v2", {"FOO": ["v1", "v2"]}),
        ("FOO=v1,v2,BAR=v3", {"FOO": ["v1", "v2"], "BAR": "v3"}),
        ("FOO=v1;v2,BAR=v3", {"FOO": ["v1", "v2"], "BAR": "v3"}),
        ("FOO=v1;v2;BAR=v3", {"FOO": ["v1", "v2"], "BAR": "v3"}),
        ("BAR=v3;FOO=v1,v2,", {"FOO": ["v1", "v2"], "BAR": "v3"}),
        ("E=f:b,F:B", {"E": {"f": "b", "F": "B"}}),
        ("BAR=x;E=a:1;b:2", {"BAR": "x", "E": {"a": "1", "b": "2"}}),
    ],
)
def test_cfg_from_str_as_documented(literal: str, expected: dict[str, object]) -> None:
    assert docs_opts().cfg_from_str(literal) == expected


def test_cfg_from_str_then_resolve_fills_defaults() -> None:
    opts = docs_opts()
    assert opts.resolve(opts.cfg_from_str("BAR=x"))["FOO"] == ["a"]


def test_runner_cfg_from_str_splits_on_semicolons() -> None:
    pytest.importorskip("torchx_sched_local")
    from torchx.runner import get_runner

    with get_runner() as runner:
        cfg = runner.cfg_from_str("local_cwd", "log_dir=/tmp/x;prepend_cwd=true")
    assert cfg == {"log_dir": "/tmp/x", "prepend_cwd": True}


def test_cli_semicolon_between_pairs(isolated: Path) -> None:
    pytest.importorskip("torchx_sched_local")
    pytest.importorskip("torchx_components")
    logs = isolated / "my logs"
    proc = run_torchx("run", "--dryrun", "-s", "local_cwd", "-cfg", f"log_dir={logs};prepend_cwd=true", "utils.echo")
    assert proc.returncode == 0, proc.stderr
    assert re.search(rf"\(logs: {re.escape(str(logs))}/[^/ ]+/echo-", proc.stdout), (
        proc.stdout
    )  # not log_dir="<logs>;prepend_cwd=true"
    assert "PATH=" + str(isolated) + ":" in proc.stdout  # prepend_cwd took effect


def test_torchxconfig_values_parse_as_cfg_from_str(isolated: Path, write: Callable[[Path, str], Path]) -> None:
    pytest.importorskip("torchx_sched_k8s")
    from torchx.runner import config
    from torchx.schedulers import get_scheduler_factories

    write(isolated / ".torchxconfig", "[kubernetes]\nnode_selector = a:1,b:2;c:3\nnamespace = ns\n")
    cfg: dict[str, object] = {}
    with (isolated / ".torchxconfig").open() as f:
        config.load("kubernetes", f, cfg)  # type: ignore[arg-type]
    assert cfg == {"node_selector": {"a": "1", "b": "2", "c": "3"}, "namespace": "ns"}
    opts = get_scheduler_factories()["kubernetes"](session_name="test").run_opts()
    assert opts.cfg_from_str("node_selector=a:1,b:2;c:3;namespace=ns") == cfg
