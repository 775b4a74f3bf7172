"""Upstream TorchX's ``torchx.util.types``: decoding component arguments by their annotation.

The component argument parser (:mod:`torchx.specs.builders`) is built on the same decoders;
these are the public helpers code written for TorchX imports.
"""

from __future__ import annotations

from torchx.specs.builders import _decoder, to_dict, to_list
from torchx.util.annotations import without_none

TYPE_CHECKING = False
if TYPE_CHECKING:
    import inspect
    from collections.abc import Callable
    from typing import Any, TypeVar

    T = TypeVar("T")

__all__ = [
    "decode",
    "decode_from_string",
    "decode_optional",
    "get_argparse_param_type",
    "is_bool",
    "is_primitive",
    "none_throws",
    "to_dict",
    "to_list",
]

_PRIMITIVES = (int, float, str, bool)


def none_throws(optional: T | None, message: str = "Unexpected `None`") -> T:
    """``optional`` itself, or ``AssertionError(message)`` if it is None."""
    if optional is None:
        raise AssertionError(message)
    return optional


def is_bool(hint: Any) -> bool:
    """True if the annotation is ``bool``."""
    return hint is bool


def is_primitive(param: Any) -> bool:
    """True for ``int``, ``float``, ``str`` and ``bool``."""
    return param in _PRIMITIVES


def decode_optional(param_type: Any) -> Any:
    """``T`` for ``Optional[T]`` / ``T | None``; the type itself otherwise."""
    return without_none(param_type)[0]


def decode_from_string(encoded_value: str, annotation: Any) -> Any:
    """Converts a command-line string to ``annotation``: ``"a,b"`` -> ``list``, ``"k=v,k2=v2"`` ->
    ``dict``, ``"true"`` -> ``bool``, numbers to ``int``/``float``; an empty string for an
    optional type is None."""
    return _decoder(annotation)(encoded_value)


def decode(encoded_value: Any, annotation: Any) -> Any:
    """``encoded_value`` converted to ``annotation`` when it is a string (see
    :func:`decode_from_string`); any other value is returned as is."""
    if isinstance(encoded_value, str) and annotation is not str:
        return decode_from_string(encoded_value, annotation)
    return encoded_value


def get_argparse_param_type(parameter: inspect.Parameter) -> Callable[[str], Any]:
    """The ``type=`` argparse uses for a component parameter: its annotation for ``int``,
    ``float`` and ``str``; ``str`` for everything else (decoded afterwards)."""
    annotation = parameter.annotation
    return annotation if annotation in (int, float, str) else str  # type: ignore[no-any-return]
