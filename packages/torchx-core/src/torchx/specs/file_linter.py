"""The component linter: checks component functions statically (from source, without importing).

A component function must

1. (should: a warning otherwise) have a google-style docstring (a description, and ``Args:``
   entries for its parameters),
2. annotate every parameter with a supported type (``str``, ``int``, ``float``, ``bool``,
   ``Optional[...]``/``... | None`` of those, ``List[...]``/``list[...]`` and
   ``Dict[..., ...]``/``dict[..., ...]`` of primitives); ``*args`` must be ``str``;
   ``**kwargs`` is not allowed,
3. return ``AppDef`` (``specs.AppDef``, ``torchx.specs.AppDef``).
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Callable
from typing import Any

from torchx.util.help_format import HelpFormatter
from torchx.util.record import record

_PRIMITIVES = {"str", "int", "float", "bool"}
_OPTIONAL = {"Optional", "typing.Optional"}
_LISTS = {"List", "list", "typing.List"}
_DICTS = {"Dict", "dict", "typing.Dict"}
# patterns are compiled on first use (re caches them)
_SECTION = (
    r"^\s*(Args|Arguments|Parameters|Params|Returns|Return|Raises|Yields|Example|Examples|Note|Notes|Usage)\s*:\s*$"
)
_PARAM = r"^\s*\*{0,2}(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*(\([^)]*\))?\s*:\s*(?P<desc>.*)$"


class TorchXArgumentHelpFormatter(HelpFormatter):
    """Help formatter of component arguments (TorchX's name): each argument's help ends with
    ``(required)`` or ``(default: VALUE)``; descriptions are shown as written."""

    def _get_help_string(self, action: Any) -> str:
        import argparse

        text = action.help or ""
        if action.default is argparse.SUPPRESS:  # --help
            return str(text)
        return f"{text} (required)" if action.required else f"{text} (default: {action.default})"


@record
class LinterMessage:
    """One problem the linter found."""

    name: str
    description: str
    line: int
    char: int
    severity: str = "error"

    def __str__(self) -> str:
        return f"{self.line}:{self.char} {self.description}"


@record(frozen=True)
class ParsedDocstring:
    """The parts of a google-style docstring torchx uses."""

    short_description: str
    long_description: str
    params: dict[str, str]


def parse_docstring(doc: str | None) -> ParsedDocstring:
    """Splits a google-style docstring into description and ``Args:`` entries."""
    if not doc:
        return ParsedDocstring("", "", {})
    lines = inspect.cleandoc(doc).splitlines()
    desc: list[str] = []
    params: dict[str, str] = {}
    section = ""
    current = ""
    base_indent: int | None = None
    for line in lines:
        match = re.match(_SECTION, line)
        if match:
            section = match.group(1).lower()
            base_indent = None
            current = ""
            continue
        if not section:
            desc.append(line)
            continue
        if section not in ("args", "arguments", "parameters", "params"):
            continue
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if base_indent is None:
            base_indent = indent
        pm = re.match(_PARAM, line)
        if pm and indent <= base_indent:
            current = pm.group("name")
            params[current] = pm.group("desc").strip()
        elif current:
            params[current] = (params[current] + " " + line.strip()).strip()
    text = "\n".join(desc).strip()
    short, _, long = text.partition("\n\n")
    return ParsedDocstring(" ".join(short.split()), long.strip(), params)


def get_fn_docstring(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """(description, {param: help}) of a component function; missing help gets a generic text."""
    parsed = parse_docstring(fn.__doc__)
    description = parsed.short_description or (
        f"{getattr(fn, '__name__', 'component')} TIP: improve this help string by adding a docstring\n"
        "to your component (see: https://pytorch.org/torchx/latest/component_best_practices.html)"
    )
    if parsed.long_description:
        description += "\n" + parsed.long_description
    params = dict(parsed.params)
    for name in inspect.signature(fn).parameters:
        params.setdefault(name, " ")
    return description, params


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return ""


def _is_none(node: ast.expr) -> bool:
    return (isinstance(node, ast.Constant) and node.value is None) or _dotted(node) == "None"


def annotation_error(node: ast.expr | None, fn: str = "", arg: str = "") -> str | None:
    """Why an annotation is not a supported component argument type (None if it is); the
    texts of TorchX's linter where it reports the same problem."""
    if node is None:
        return f"Arg {arg} missing type annotation"
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value
        try:
            node = ast.parse(text, mode="eval").body
        except SyntaxError:
            return f"Arg {arg} has an unparsable annotation {text!r}"
    if _dotted(node) in _PRIMITIVES:
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        other = node.right if _is_none(node.left) else node.left if _is_none(node.right) else None
        return (
            annotation_error(other, fn, arg) if other is not None else f"Arg {arg} uses a union other than `T | None`"
        )
    if isinstance(node, ast.Subscript):
        head = _dotted(node.value)
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if head in _OPTIONAL and len(args) == 1:
            inner = args[0]
            if isinstance(inner, ast.Subscript) and _dotted(inner.value) in _OPTIONAL:  # refused as TorchX does
                return f"`{fn}` allows only Dict, List as complex types.Argument `{arg}` has: Optional"
            return annotation_error(inner, fn, arg)
        if head in ("Union", "typing.Union") and len(args) == 2 and any(_is_none(a) for a in args):
            return annotation_error(next(a for a in args if not _is_none(a)), fn, arg)
        if head in _LISTS:
            return None if len(args) == 1 and _dotted(args[0]) in _PRIMITIVES else "List can only have primitive types"
        if head in _DICTS:
            ok = len(args) == 2 and all(_dotted(a) in _PRIMITIVES for a in args)
            return None if ok else "Dict can only have primitive types"
        return f"`{fn}` allows only Dict, List as complex types.Argument `{arg}` has: {head.split('.')[-1]}"
    return (
        f"Arg {arg} has unsupported type {ast.unparse(node)!r}"
        " (use str, int, float, bool, Optional, List or Dict of those)"
    )


def returns_appdef(fn: ast.FunctionDef) -> bool:
    """True if the function is annotated to return an AppDef."""
    name = _dotted(fn.returns) if fn.returns is not None else ""
    return name.split(".")[-1] == "AppDef"


#: ``LinterMessage.name`` of problems in a component function (as TorchX names them)
FUNCTION_VALIDATOR = "TorchxFunctionValidator"
#: ``LinterMessage.name`` of problems with the file (as TorchX names them)
FILE_VALIDATOR = "TorchXValidator"


def validate_function(fn: ast.FunctionDef) -> list[LinterMessage]:
    """Lints one parsed function definition.

    Errors: an argument without a supported type annotation, ``**kwargs``, a return type
    other than ``AppDef``. Warnings (the component still works, with generic help): no
    docstring, an argument not documented under ``Args:``.
    """
    msgs: list[LinterMessage] = []

    def report(text: str, line: int, severity: str = "error") -> None:
        msgs.append(LinterMessage(FUNCTION_VALIDATOR, text, line, 0, severity))

    doc = ast.get_docstring(fn)
    parsed = parse_docstring(doc)
    documented = bool(doc and parsed.short_description)
    args = fn.args
    for arg in [*args.posonlyargs, *args.args]:
        reason = annotation_error(arg.annotation, fn.name, arg.arg)
        if reason:
            report(reason, arg.lineno)
    if args.vararg is not None:
        ann = args.vararg.annotation
        if ann is None:
            report(f"Arg {args.vararg.arg} missing type annotation", args.vararg.lineno)
        elif _dotted(ann) != "str":
            report(f"Arg {args.vararg.arg}: *{args.vararg.arg} must be annotated as str", args.vararg.lineno)
    for arg in args.kwonlyargs:
        reason = annotation_error(arg.annotation, fn.name, arg.arg)
        if reason:
            report(reason, arg.lineno)
    if args.kwarg is not None:
        report(f"Function: {fn.name}: **{args.kwarg.arg} is not supported in components", args.kwarg.lineno)
    if fn.returns is None or not _dotted(fn.returns):
        report(
            f"Function: {fn.name} missing return annotation or has unknown annotations."
            " Supported return annotation: AppDef",
            fn.lineno,
        )
    elif not returns_appdef(fn):
        report(f"Function: {fn.name} has incorrect return annotation, supported annotation: AppDef", fn.lineno)
    if not documented:
        report(
            f"Function: {fn.name} has no docstring (google-style, with Args: for each parameter)", fn.lineno, "warning"
        )
    else:
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
            if arg.arg not in parsed.params:
                report(f"Arg {arg.arg} is not documented under Args: in {fn.name}'s docstring", arg.lineno, "warning")
    return msgs


def validate(
    path: str, component_function: str, validators: Any = None, *, include_warnings: bool = False
) -> list[LinterMessage]:
    """Lints ``component_function`` in the python file ``path`` (without importing it).

    Args:
        path: the python source file
        component_function: the function's name
        validators: accepted for compatibility; unused
        include_warnings: also return the warnings (severity ``warning``: no docstring, an
            argument missing from ``Args:``), which do not make the component invalid

    Returns:
        the errors found (and the warnings if asked); without warnings, empty exactly when the
        component is valid (as TorchX: callers test ``if validate(...)``)
    """
    try:
        with open(path, encoding="utf-8") as f:
            source = f.read()
    except (OSError, ValueError) as e:
        return [LinterMessage(FILE_VALIDATOR, f"cannot read {path}: {e}", 0, 0)]
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as e:
        return [LinterMessage(FILE_VALIDATOR, e.msg, e.lineno or 0, e.offset or 0)]
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == component_function:
            return [m for m in validate_function(node) if include_warnings or m.severity == "error"]
    return [LinterMessage(FILE_VALIDATOR, f"Function {component_function} not found", 0, 0)]
