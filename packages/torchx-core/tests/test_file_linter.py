from __future__ import annotations

import textwrap
from pathlib import Path

from torchx.specs.file_linter import LinterMessage, parse_docstring, validate

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


def test_errors_use_torchx_texts(tmp_path: Path) -> None:
    assert lint(tmp_path, "nodoc") == []  # a docstring is recommended (a warning), not required
    assert lint(tmp_path, "untyped")[0] == "Arg a missing type annotation"
    assert "unsupported type 'object'" in lint(tmp_path, "untyped")[1]
    assert any("**kwargs is not supported" in m for m in lint(tmp_path, "kw"))
    assert lint(tmp_path, "noreturn") == [
        "Function: noreturn missing return annotation or has unknown annotations. Supported return annotation: AppDef"
    ]
    path = tmp_path / "comp.py"
    assert validate(str(path), "missing") == [LinterMessage("TorchXValidator", "Function missing not found", 0, 0)]
    path.write_text("def f(:\n")
    assert validate(str(path), "f")[0].name == "TorchXValidator"


def test_complex_type_messages(tmp_path: Path) -> None:
    path = tmp_path / "c.py"
    path.write_text(
        "from typing import Dict, List, Optional, Tuple\n"
        "def f(a: Tuple[int, int], b: List[List[str]], c: Dict[str, List[str]], d: Optional[Optional[str]],"
        " e: Optional[List[str]]) -> AppDef:\n"
        '    """F."""\n'
    )
    errors = [m for m in validate(str(path), "f") if m.severity == "error"]
    assert [m.description for m in errors] == [
        "`f` allows only Dict, List as complex types.Argument `a` has: Tuple",
        "List can only have primitive types",
        "Dict can only have primitive types",
        # Python reads it as Optional[str]; TorchX's linter unwraps one Optional only and refuses it
        "`f` allows only Dict, List as complex types.Argument `d` has: Optional",
    ]
    assert {(m.name, m.line, m.char) for m in errors} == {("TorchxFunctionValidator", 2, 0)}


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


def test_validate_returns_errors_only_unless_warnings_are_asked_for(tmp_path: Path) -> None:
    path = tmp_path / "comp.py"
    path.write_text(textwrap.dedent(GOOD))
    assert validate(str(path), "nodoc") == []  # valid: TorchX callers test `if validate(...)`
    warnings = validate(str(path), "nodoc", include_warnings=True)
    assert warnings and {m.severity for m in warnings} == {"warning"}
    assert "has no docstring" in warnings[0].description
    assert [m.severity for m in validate(str(path), "untyped")] == ["error", "error"]
