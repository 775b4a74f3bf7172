from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List

import pytest
from torchx.schedulers.api import StructuredOpts
from torchx.specs import InvalidRunConfigException, runopts


def make_opts() -> runopts:
    opts = runopts()
    opts.add("cluster_id", type_=int, help="cluster to submit to", required=True)
    opts.add("priority", type_=float, default=0.5, help="job priority")
    opts.add("preemptible", type_=bool, default=False, help="is the job preemptible")
    opts.add("queues", type_=List[str], help="queues")
    opts.add("labels", type_=Dict[str, str], help="labels")
    opts.add("user", type_=str, help="user", aliases=["username"])
    return opts


def test_resolve_fills_defaults_and_returns_new_dict() -> None:
    cfg = {"cluster_id": 3}
    resolved = make_opts().resolve(cfg)
    assert resolved == {
        "cluster_id": 3,
        "priority": 0.5,
        "preemptible": False,
        "queues": None,
        "labels": None,
        "user": None,
    }
    assert cfg == {"cluster_id": 3}


def test_resolve_casts_strings_from_config_files() -> None:
    resolved = make_opts().resolve(
        {"cluster_id": "7", "preemptible": "True", "queues": "a;b", "labels": "k:v,x:y", "priority": 1}
    )
    assert resolved["cluster_id"] == 7
    assert resolved["preemptible"] is True
    assert resolved["queues"] == ["a", "b"]
    assert resolved["labels"] == {"k": "v", "x": "y"}
    assert resolved["priority"] == 1


@pytest.mark.parametrize(
    "cfg, message",
    [
        ({}, "required run option 'cluster_id' is missing"),
        ({"cluster_id": "x"}, "'cluster_id' expects int"),
        ({"cluster_id": 1, "preemptible": "maybe"}, "expects bool"),
        ({"cluster_id": 1, "queues": 5}, "expects typing.List\\[str\\], got int"),
        ({"cluster_id": True}, "expects int, got bool"),
    ],
)
def test_resolve_errors(cfg: dict, message: str) -> None:
    with pytest.raises(InvalidRunConfigException, match=message):
        make_opts().resolve(cfg)


def test_resolve_passes_unknown_keys_through() -> None:
    assert make_opts().resolve({"cluster_id": 1, "prio": 1.0})["prio"] == 1.0


def test_alias_resolves_to_canonical_key() -> None:
    assert make_opts().resolve({"cluster_id": 1, "username": "me"})["user"] == "me"


def test_cfg_from_str() -> None:
    opts = make_opts()
    assert opts.cfg_from_str("cluster_id=1,queues=a,b,user='x,y=z',labels=k:v;k2:v2") == {
        "cluster_id": 1,
        "queues": ["a", "b"],
        "user": "x,y=z",
        "labels": {"k": "v", "k2": "v2"},
    }
    assert opts.cfg_from_str("") == {}
    assert opts.cfg_from_str("clusterid=1,user=me") == {"user": "me"}  # unknown keys dropped, as in TorchX
    assert opts.parse_cfg_str("clusterid=1") == ({}, ["clusterid"])
    assert "did you mean 'cluster_id'" in opts.unknown_keys_message(["clusterid"])
    with pytest.raises(InvalidRunConfigException, match="expected key=value"):
        opts.cfg_from_str("justaword")
    with pytest.raises(InvalidRunConfigException, match="unterminated quote"):
        opts.cfg_from_str("user='abc")


def test_add_rejects_bad_declarations() -> None:
    opts = runopts()
    with pytest.raises(ValueError, match="must not have a default"):
        opts.add("x", type_=int, help="", default=1, required=True)
    with pytest.raises(TypeError, match="not of type int"):
        opts.add("y", type_=int, help="", default="1")


def test_repr_lists_required_first() -> None:
    text = repr(make_opts())
    assert text.index("cluster_id") < text.index("priority")
    assert "required" in text


def test_merge_with_or() -> None:
    a, b = runopts(), runopts()
    a.add("x", type_=str, help="")
    b.add("y", type_=str, help="")
    assert sorted(k for k, _ in a | b) == ["x", "y"]


@dataclass
class MyOpts(StructuredOpts):
    cluster: str = "default"
    """Cluster to submit to."""
    mail_user: str | None = field(default=None, metadata={"cfg_key": "mail-user"})
    """Who gets mail."""
    max_nodes: int = 4
    """Most nodes."""
    tags: list[str] = field(default_factory=list)
    """Tags."""


def test_structured_opts_as_runopts_and_from_cfg() -> None:
    opts = MyOpts.as_runopts()
    assert opts.get("cluster") is not None
    assert opts.get("cluster").help == "Cluster to submit to."  # type: ignore[union-attr]
    assert opts.get("mail-user") is not None
    assert opts.get("mail_user") is opts.get("mail-user")
    assert opts.get("maxNodes") is opts.get("max_nodes")
    resolved = opts.resolve({"mailUser": "a@b", "max_nodes": "8"})
    parsed = MyOpts.from_cfg(resolved)
    assert parsed.mail_user == "a@b"
    assert parsed.max_nodes == 8
    assert parsed.cluster == "default"
    assert dict(parsed) == {"cluster": "default", "mail-user": "a@b", "max_nodes": 8, "tags": []}


def test_cfg_from_json_repr_drops_unknown_keys_and_stringifies_collections() -> None:
    opts = make_opts()
    parsed = opts.cfg_from_json_repr('{"cluster_id": "3", "queues": [1, "b"], "labels": {"k": 2}, "nope": 1}')
    assert parsed == {"cluster_id": 3, "queues": ["1", "b"], "labels": {"k": "2"}}
