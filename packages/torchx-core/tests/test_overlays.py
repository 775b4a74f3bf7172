"""torchx.specs.overlays: storing overlays on roles and merging them into requests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from torchx.specs import Role
from torchx.specs.overlays import (
    DEL,
    JOIN,
    PUT,
    OverlaySpec,
    apply_overlay,
    get_overlay,
    set_overlay,
    validate_overlay,
)


def _role() -> Role:
    return Role(name="trainer", image="img", entrypoint="train.py")


def test_default_rules_merge_dicts_append_lists_replace_scalars() -> None:
    base = {"spec": {"cpu": "1"}, "tags": ["a"], "replicas": 1, "untouched": True}
    apply_overlay(base, {"spec": {"mem": "1Gi"}, "tags": ["b"], "replicas": 3, "new": {"x": [1]}})
    assert base == {
        "spec": {"cpu": "1", "mem": "1Gi"},
        "tags": ["a", "b"],
        "replicas": 3,
        "untouched": True,
        "new": {"x": [1]},
    }


def test_tuple_replaces_a_list() -> None:
    base = {"volumes": [{"name": "a"}]}
    apply_overlay(base, {"volumes": ({"name": "b"},)})
    assert base == {"volumes": [{"name": "b"}]}


def test_structural_type_mismatch_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="tags"):
        apply_overlay({"tags": ["a"]}, {"tags": "b"})
    with pytest.raises(TypeError):
        apply_overlay({"spec": {}}, {"spec": [1]})


def test_put_join_del() -> None:
    base = {
        "containers": [{"name": "main", "image": "v1"}, {"name": "side", "image": "s"}],
        "hostNetwork": True,
        "volumes": [{"name": "x"}],
    }
    apply_overlay(
        base,
        {
            JOIN("containers", on="name"): [{"name": "main", "image": "v2"}, {"name": "new", "image": "n"}],
            DEL("hostNetwork"): None,
            PUT("volumes"): [{"name": "only"}],
        },
    )
    assert base == {
        "containers": [{"name": "main", "image": "v2"}, {"name": "side", "image": "s"}, {"name": "new", "image": "n"}],
        "volumes": [{"name": "only"}],
    }


def test_join_refuses_non_dict_items() -> None:
    with pytest.raises(TypeError, match="list of dicts"):
        apply_overlay({"args": ["a"]}, {JOIN("args", on="name"): [{"name": "x"}]})
    with pytest.raises(TypeError, match="list of dicts"):
        apply_overlay({}, {JOIN("args", on="name"): ["x"]})


def test_none_sets_null_but_del_removes() -> None:
    base = {"a": 1, "b": 2}
    apply_overlay(base, {"a": None, DEL("b"): None})
    assert base == {"a": None}


def test_set_overlay_accumulates_and_get_returns_per_kind() -> None:
    role = _role()
    set_overlay(role, "kubernetes", "V1Pod", {"spec": {"nodeSelector": {"pool": "gpu"}}})
    set_overlay(role, "kubernetes", "V1Pod", {"spec": {"tolerations": [{"key": "gpu", "operator": "Exists"}]}})
    set_overlay(role, "kubernetes", "V1Pod", {"spec": {"tolerations": [{"key": "spot", "operator": "Exists"}]}})
    assert get_overlay(role, "kubernetes", "V1Pod") == {
        "spec": {
            "nodeSelector": {"pool": "gpu"},
            "tolerations": [{"key": "gpu", "operator": "Exists"}, {"key": "spot", "operator": "Exists"}],
        }
    }
    assert get_overlay(role, "kubernetes", "V1Job") == {}
    assert get_overlay(role, "slurm", "V1Pod") == {}


def test_operators_are_kept_until_applied_and_last_operator_wins() -> None:
    role = _role()
    set_overlay(role, "k", "Pod", {"spec": {"volumes": [{"name": "a"}]}})
    set_overlay(role, "k", "Pod", {"spec": {PUT("volumes"): [{"name": "b"}]}})
    stored = get_overlay(role, "k", "Pod")
    assert stored == {"spec": {PUT("volumes"): [{"name": "b"}]}}
    base = {"spec": {"volumes": [{"name": "generated"}]}}
    apply_overlay(base, stored)
    assert base == {"spec": {"volumes": [{"name": "b"}]}}


def test_flat_fallback_for_hand_written_metadata() -> None:
    role = _role()
    role.metadata["kubernetes"] = {"spec": {"nodeSelector": {"a": "b"}}}
    assert get_overlay(role, "kubernetes", "V1Pod") == {"spec": {"nodeSelector": {"a": "b"}}}
    assert get_overlay(role, "kubernetes", "V1Pod", flat_fallback=False) == {}


def test_overlay_file(tmp_path: Path) -> None:
    path = tmp_path / "pod.json"
    path.write_text(json.dumps({"spec": {"nodeSelector": {"pool": "gpu"}}}))
    role = _role()
    role.metadata["kubernetes"] = f"file://{path}"
    assert get_overlay(role, "kubernetes", "V1Pod") == {"spec": {"nodeSelector": {"pool": "gpu"}}}
    yaml_file = tmp_path / "pod.yaml"
    yaml_file.write_text("V1Pod:\n  spec:\n    volumes: !!python/tuple\n      - name: v\n")
    role.metadata["kubernetes"] = str(yaml_file)
    overlay = get_overlay(role, "kubernetes", "V1Pod")
    base = {"spec": {"volumes": [{"name": "generated"}]}}
    apply_overlay(base, overlay)
    assert base == {"spec": {"volumes": [{"name": "v"}]}}


def test_reserved_kind() -> None:
    with pytest.raises(ValueError, match="reserved"):
        set_overlay(_role(), "k", "__torchx_overlays__", {})


def test_validate_overlay() -> None:
    validate_overlay({"nodeSelector": {}}, blocklist=["env"])
    with pytest.raises(ValueError, match="PodSpec.env"):
        validate_overlay({PUT("env"): {}}, blocklist=["env"], overlay_name="PodSpec")
    with pytest.raises(ValueError, match="use the pod overlay"):
        validate_overlay({"spec": {}}, forbidden_keys={"spec"}, suggestion="use the pod overlay")


def test_overlay_spec() -> None:
    pod = OverlaySpec("kubernetes", "V1Pod", blocklist=("command",))
    role = _role()
    pod.set(role, {"spec": {"nodeSelector": {"a": "b"}}})
    assert pod.get(role) == {"spec": {"nodeSelector": {"a": "b"}}}
    with pytest.raises(ValueError):
        pod.set(role, {"command": ["x"]})
