"""torchx.util.yaml: what it writes, PyYAML's safe loader reads back as the same data."""

from __future__ import annotations

import math
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from torchx.util.yaml import dump, dump_all, scalar

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(),
    st.text(st.characters(max_codepoint=0x9F)),  # control characters
    st.sampled_from(
        [
            "yes",
            "No",
            "on",
            "null",
            "~",
            "1e3",
            "0x1f",
            "-",
            "a: b",
            "#x",
            ".inf",
            "NaN",
            "-.5",
            "1_000",
            "<<",
            "= ",
            "!tag",
            "&a",
            "*a",
            "%x",
            "@x",
            "`x",
        ]
    ),
)


def same(loaded: Any, expected: Any) -> bool:
    """Equality where NaN equals NaN (PyYAML reads `.nan` back as a float NaN)."""
    if isinstance(expected, float) and math.isnan(expected):
        return isinstance(loaded, float) and math.isnan(loaded)
    if isinstance(expected, dict):
        return (
            isinstance(loaded, dict)
            and loaded.keys() == expected.keys()
            and all(same(loaded[k], v) for k, v in expected.items())
        )
    if isinstance(expected, list):
        return isinstance(loaded, list) and len(loaded) == len(expected) and all(map(same, loaded, expected))
    return bool(loaded == expected) and type(loaded) is type(expected)


data = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(data)
def test_round_trip(value: Any) -> None:
    assert same(yaml.safe_load(dump(value)), value)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.dictionaries(st.text(max_size=5), scalars, min_size=1, max_size=3), min_size=1, max_size=4))
def test_multi_document_round_trip(docs: list[dict[str, Any]]) -> None:
    assert same(list(yaml.safe_load_all(dump_all(docs))), docs)


def test_nan_and_infinities() -> None:
    assert dump([math.nan, math.inf, -math.inf, 1.5]) == "- .nan\n- .inf\n- -.inf\n- 1.5\n"


def test_plain_only_when_unambiguous() -> None:
    assert scalar("python") == "python"
    assert scalar("/bin/echo") == "/bin/echo"
    assert scalar("yes") == '"yes"'
    assert scalar("0.1.0") == '"0.1.0"'
    assert scalar("\u2028") == '"\\u2028"'
    assert scalar(True) == "true"
    assert scalar(None) == "null"
    assert scalar(3) == "3"


def test_block_layout_like_kubectl() -> None:
    text = dump({"spec": {"containers": [{"name": "c", "args": ["a", "b"]}], "empty": [], "nothing": {}}})
    assert text == "spec:\n  containers:\n  - name: c\n    args:\n    - a\n    - b\n  empty: []\n  nothing: {}\n"


def test_shared_objects_are_written_in_full_each_time() -> None:
    shared = {"cpu": "1", "memory": "1Mi"}
    docs = [{"a": shared, "b": [shared]}, {"c": {"d": shared}}]
    text = dump_all(docs)
    assert "&" not in text
    assert "*" not in text
    assert list(yaml.safe_load_all(text)) == docs
