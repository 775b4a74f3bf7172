"""The YAML emitter: what it writes loads back to the same data, whatever the strings hold."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from torchx_sched_k8s.render import dump, dump_all, scalar

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.text(),
    st.sampled_from(["yes", "No", "on", "null", "~", "1e3", "0x1f", "-", "a: b", "#x"]),
)
data = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(data)
def test_round_trip(value: Any) -> None:
    assert yaml.safe_load(dump(value)) == value


@settings(max_examples=100, deadline=None)
@given(st.lists(st.dictionaries(st.text(max_size=5), scalars, min_size=1, max_size=3), min_size=1, max_size=4))
def test_multi_document_round_trip(docs: list[dict[str, Any]]) -> None:
    assert list(yaml.safe_load_all(dump_all(docs))) == docs


def test_plain_only_when_unambiguous() -> None:
    assert scalar("python") == "python"
    assert scalar("/bin/echo") == "/bin/echo"
    assert scalar("yes") == '"yes"'
    assert scalar("0.1.0") == '"0.1.0"'
    assert scalar("\u2028") == '"\\u2028"'
    assert scalar(True) == "true" and scalar(None) == "null" and scalar(3) == "3"


def test_block_layout_like_kubectl() -> None:
    text = dump({"spec": {"containers": [{"name": "c", "args": ["a", "b"]}], "empty": [], "nothing": {}}})
    assert text == "spec:\n  containers:\n  - name: c\n    args:\n    - a\n    - b\n  empty: []\n  nothing: {}\n"


def test_shared_objects_are_written_in_full_each_time() -> None:
    shared = {"cpu": "1", "memory": "1Mi"}
    docs = [{"a": shared, "b": [shared]}, {"c": {"d": shared}}]
    text = dump_all(docs)
    assert "&" not in text and "*" not in text
    assert list(yaml.safe_load_all(text)) == docs
