from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Dict, List, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from torchx import specs
from torchx.specs.builders import (
    EMPTY,
    KEYWORD_ONLY,
    POSITIONAL,
    VAR_KEYWORD,
    VAR_POSITIONAL,
    ComponentArgError,
    materialize_appdef,
    parameters,
    parse_args,
    to_dict,
)


def comp(
    *script_args: str,
    name: str,
    n: int = 1,
    ratio: float = 0.5,
    debug: bool = False,
    tag: Optional[str] = None,
    ids: List[int] | None = None,
    env: Dict[str, str] | None = None,
    count: int | None = None,
) -> specs.AppDef:
    """A test component.

    Args:
        script_args: arguments to the script
        name: the name
        n: replicas
        ratio: a ratio
        debug: debug mode
        tag: a tag
        ids: some ids
        env: environment
        count: optional count
    """
    return specs.AppDef(
        name=name,
        roles=[
            specs.Role(
                name="r",
                image="i",
                entrypoint="e",
                args=list(script_args),
                env=env or {},
                num_replicas=n,
                metadata={"ratio": ratio, "debug": debug, "tag": tag, "ids": ids, "count": count},
            )
        ],
    )


def meta(app: specs.AppDef) -> dict:
    return app.roles[0].metadata


def test_types_and_varargs() -> None:
    app = materialize_appdef(
        comp,
        [
            "--name",
            "x",
            "-n",
            "3",
            "--ratio",
            "2.5",
            "--debug",
            "--tag",
            "t",
            "--ids",
            "1,2",
            "--env",
            "A=1,2,B=3",
            "a",
            "--b",
        ],
    )
    assert app.name == "x"
    assert app.roles[0].num_replicas == 3
    assert meta(app) == {"ratio": 2.5, "debug": True, "tag": "t", "ids": [1, 2], "count": None}
    assert app.roles[0].env == {"A": "1,2", "B": "3"}
    assert app.roles[0].args == ["a", "--b"]


def test_bool_forms_and_double_dash() -> None:
    assert meta(materialize_appdef(comp, ["--name", "x", "--debug", "false"]))["debug"] is False
    assert meta(materialize_appdef(comp, ["--name", "x", "--debug", "True"]))["debug"] is True
    app = materialize_appdef(comp, ["--name", "x", "--", "--n", "5"])
    assert app.roles[0].args == ["--n", "5"]
    assert app.roles[0].num_replicas == 1


def test_optional_empty_is_none() -> None:
    assert meta(materialize_appdef(comp, ["--name", "x", "--count", ""]))["count"] is None
    assert meta(materialize_appdef(comp, ["--name", "x", "--count", "4"]))["count"] == 4


def test_defaults_precedence_function_config_cli() -> None:
    assert materialize_appdef(comp, ["--name", "x"], {"n": "2"}).roles[0].num_replicas == 2
    assert materialize_appdef(comp, ["--name", "x", "-n", "5"], {"n": "2"}).roles[0].num_replicas == 5
    app = materialize_appdef(comp, [], config={"name": "cfg", "n": 4, "script_args": "a b"})
    assert app.name == "cfg"
    assert app.roles[0].num_replicas == 4
    assert app.roles[0].args == ["a", "b"]


@pytest.mark.parametrize(
    "args, message",
    [
        ([], "required: --name"),
        (["--name", "x", "-n", "abc"], "argument --n/-n: invalid int value 'abc'$"),
        (["--name", "x", "--debug", "maybe"], "invalid bool value"),
        (["--name", "x", "--ids", "1,x"], "invalid"),
        (["--name", "x", "--env", "novalue"], "expected key=value"),
        (["--nme", "x"], "required: --name"),
    ],
)
def test_errors_are_component_arg_errors(args: list[str], message: str) -> None:
    with pytest.raises(ComponentArgError, match=message):
        materialize_appdef(comp, args)


def no_varargs(name: str = "x") -> specs.AppDef:
    """No varargs.

    Args:
        name: name
    """
    return specs.AppDef(name=name, roles=[specs.Role("r", "i", entrypoint="e")])


def test_unknown_argument() -> None:
    with pytest.raises(ComponentArgError, match="unrecognized arguments: --bogus"):
        materialize_appdef(no_varargs, ["--bogus", "1"])
    with pytest.raises(ComponentArgError, match="unknown argument 'bogus'"):
        materialize_appdef(no_varargs, [], config={"bogus": 1})


def raising(msg: str) -> specs.AppDef:
    """Raises.

    Args:
        msg: message
    """
    raise ValueError(f"bad msg {msg}")


def test_component_value_error_becomes_arg_error() -> None:
    with pytest.raises(ComponentArgError, match="raising: bad msg hi"):
        materialize_appdef(raising, ["--msg", "hi"])


def test_help_text_comes_from_docstring() -> None:
    from torchx.specs.builders import component_parser

    text = component_parser(comp, prog="torchx run comp").format_help()
    assert "A test component." in text
    assert "replicas (int, default: 1)" in text
    assert "--name NAME" in text


def test_to_dict() -> None:
    assert to_dict("") == {}
    assert to_dict("a=1") == {"a": "1"}
    assert to_dict("a=1,b=2;c=3") == {"a": "1", "b": "2", "c": "3"}
    assert to_dict("A=v1,v2,B=v3") == {"A": "v1,v2", "B": "v3"}
    assert to_dict("q='x=1,y';r=2") == {"q": "x=1,y", "r": "2"}
    assert to_dict("A=x=y") == {"A": "x=y"}  # split at the first "="
    assert to_dict("A=x=y,B==z") == {"A": "x=y", "B": "=z"}


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(st.text(), st.sampled_from(["--name", "-n", "--ids", "--env", "--debug", "--count", "--", "--help2"]))
    )
)
def test_parser_never_raises_unexpected(args: list[str]) -> None:
    try:
        parse_args(comp, args)
    except ComponentArgError:
        pass


def _all_kinds(a, b: int = 2, /, c: str = "x", *args: str, d, e: int = 5, **kw): ...


def _no_params() -> None: ...


@pytest.mark.parametrize(
    "fn",
    [
        _all_kinds,
        _no_params,
        materialize_appdef,
        functools.partial(_all_kinds, 1),
        functools.wraps(_all_kinds)(lambda: 0),
    ],
)
def test_parameters_match_inspect(fn: Callable[..., object]) -> None:
    import inspect

    kinds = {inspect.Parameter.VAR_POSITIONAL: VAR_POSITIONAL, inspect.Parameter.KEYWORD_ONLY: KEYWORD_ONLY}
    kinds[inspect.Parameter.VAR_KEYWORD] = VAR_KEYWORD
    expected = [
        (n, kinds.get(p.kind, POSITIONAL), p.default, p.annotation) for n, p in inspect.signature(fn).parameters.items()
    ]
    got = [
        (
            p.name,
            p.kind,
            inspect.Parameter.empty if p.default is EMPTY else p.default,
            inspect.Parameter.empty if p.annotation is EMPTY else p.annotation,
        )
        for p in parameters(fn)
    ]
    assert got == expected
