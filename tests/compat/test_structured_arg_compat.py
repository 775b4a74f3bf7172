"""``torchx.components.structured_arg`` as TorchX 0.7 documents it (the examples of its docs)."""

from __future__ import annotations

import pytest

pytest.importorskip("torchx_components")

from torchx.components.structured_arg import StructuredJArgument, StructuredNameArgument


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"name": "foo/bar", "script": "bar/baz.py"}, ("foo", "bar")),
        ({"name": "foo/", "script": "bar/baz.py"}, ("foo", "baz")),
        ({"name": "/bar", "script": "bar/baz.py"}, ("default-experiment", "bar")),
        ({"name": "foobar", "m": "foo.bar"}, ("default-experiment", "foobar")),
        ({"name": "foo/bar", "m": "foo.bar.baz"}, ("foo", "bar")),
        ({"name": "foo/", "m": "foo.bar.baz"}, ("foo", "baz")),
        ({"name": "/bar", "m": "foo.bar.baz"}, ("default-experiment", "bar")),
    ],
)
def test_name_argument(kwargs: dict[str, str], expected: tuple[str, str]) -> None:
    assert StructuredNameArgument.parse_from(**kwargs) == StructuredNameArgument(*expected)


def test_name_argument_needs_exactly_one_of_m_and_script() -> None:
    with pytest.raises(ValueError, match="No main module or script specified"):
        StructuredNameArgument.parse_from(name="foo/bar")
    with pytest.raises(ValueError):
        StructuredNameArgument.parse_from(name="foo/bar", m="a.b", script="c.py")
    assert str(StructuredNameArgument("exp", "run")) == "exp/run"


def test_j_argument() -> None:
    assert str(StructuredJArgument.parse_from(h="aws_p4d.24xlarge", j="2")) == "2x8"
    with pytest.warns(UserWarning):
        assert str(StructuredJArgument.parse_from(h="aws_p4d.24xlarge", j="2x4")) == "2x4"
    with pytest.raises(ValueError, match="nproc_per_node cannot be inferred from GPU count"):
        StructuredJArgument.parse_from(h="aws_trn1.32xlarge", j="2")
    with pytest.warns(UserWarning):  # 16 processes, no GPU: TorchX warns too
        assert str(StructuredJArgument.parse_from(h="aws_trn1.32xlarge", j="2x16")) == "2x16"
    with pytest.raises(ValueError, match="Invalid format"):
        StructuredJArgument.parse_from(h="aws_p4d.24xlarge", j="1x2x3")
