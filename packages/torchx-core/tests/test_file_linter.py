from __future__ import annotations

import textwrap
from pathlib import Path

from torchx.specs.file_linter import parse_docstring, validate

GOOD = '''
import torchx.specs as specs
from typing import Dict, List, Optional

def good(*args: str, name: str, n: int = 1, tags: List[str] | None = None, env: Optional[Dict[str, str]] = None) -> specs.AppDef:
    """Does good.

    Longer text.

    Args:
        args: arguments
        name: the name
        n: how many
        tags: tags
        env: environment
    """
    return specs.AppDef(name=name)

def nodoc(a: str) -> specs.AppDef:
    return specs.AppDef(name=a)

def untyped(a, b: object) -> "AppDef":
    """Untyped.

    Args:
        a: a
        b: b
    """

def kw(**kwargs: str) -> specs.AppDef:
    """Kwargs.
    """

def noreturn(a: str):
    """No return type."""
'''


def lint(tmp_path: Path, fn: str) -> list[str]:
    path = tmp_path / "comp.py"
    path.write_text(textwrap.dedent(GOOD))
    return [m.description for m in validate(str(path), fn) if m.severity == "error"]


def test_valid_component(tmp_path: Path) -> None:
    assert lint(tmp_path, "good") == []


def test_errors(tmp_path: Path) -> None:
    assert any("missing docstring" in m for m in lint(tmp_path, "nodoc"))
    errors = lint(tmp_path, "untyped")
    assert any("'a' is not annotated" in m for m in errors) and any("unsupported type 'object'" in m for m in errors)
    assert any("**kwargs is not supported" in m for m in lint(tmp_path, "kw"))
    assert any("return AppDef" in m for m in lint(tmp_path, "noreturn"))
    assert any("not found" in m for m in lint(tmp_path, "missing"))


def test_parse_docstring() -> None:
    doc = parse_docstring(
        """Short line
        continues.

        Long description.

        Args:
            a (int): first
                more about a
            b: second

        Returns:
            something
        """
    )
    assert doc.short_description == "Short line continues."
    assert doc.long_description == "Long description."
    assert doc.params == {"a": "first more about a", "b": "second"}
