"""Trials from --param specs (grid, random), from a JSON-lines file, and their command lines."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from torchx_sweep.params import (
    SweepSpecError,
    grid,
    load_trials,
    parse_param,
    random_trials,
    trial_argv,
)


def test_grid_is_every_combination_last_fastest() -> None:
    trials = grid([parse_param("lr=1e-3,1e-4"), parse_param("bs=32,64")])
    assert trials == [
        {"lr": "1e-3", "bs": "32"},
        {"lr": "1e-3", "bs": "64"},
        {"lr": "1e-4", "bs": "32"},
        {"lr": "1e-4", "bs": "64"},
    ]


def test_json_list_values_keep_commas_and_quotes() -> None:
    assert parse_param('msg=["a,b", "it\'s", 3]').values == ("a,b", "it's", "3")


def test_random_is_reproducible_and_in_bounds() -> None:
    params = [
        parse_param("lr=loguniform(1e-5,1e-2)"),
        parse_param("bs=choice(32,64)"),
        parse_param("d=uniform(0,1)"),
        parse_param("k=randint(1,3)"),
    ]
    a, b = random_trials(params, 50, seed=7), random_trials(params, 50, seed=7)
    assert a == b and len(a) == 50
    assert a != random_trials(params, 50, seed=8)
    for t in a:
        assert 1e-5 <= float(t["lr"]) <= 1e-2 * (1 + 1e-5)
        assert t["bs"] in ("32", "64") and 0 <= float(t["d"]) <= 1 and t["k"] in ("1", "2", "3")
    logs = [math.log10(float(t["lr"])) for t in a]
    assert min(logs) < -4 and max(logs) > -3  # spread over the decades, not clustered at the top


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("lr", "expected NAME="),
        ("1x=1", "expected NAME="),
        ("lr=uniform(1)", "two numbers"),
        ("lr=uniform(2,1)", "LOW must be below HIGH"),
        ("lr=loguniform(0,1)", "LOW > 0"),
        ("k=randint(1.5,3)", "integers"),
        ("lr=uniform(a,1)", "not a number"),
        ("lr=1,,2", "a value is empty"),
        ("lr=[1,", "JSON list is malformed"),
    ],
)
def test_bad_param_says_what_is_wrong(spec: str, words: str) -> None:
    with pytest.raises(SweepSpecError, match=words):
        parse_param(spec)


def test_distribution_needs_random_and_names_are_unique() -> None:
    with pytest.raises(SweepSpecError, match="--random N"):
        grid([parse_param("lr=uniform(0,1)")])
    with pytest.raises(SweepSpecError, match="given twice"):
        grid([parse_param("lr=1"), parse_param("lr=2")])
    with pytest.raises(SweepSpecError, match="at least 1"):
        random_trials([parse_param("lr=1")], 0, None)


def test_trials_file(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"msg": "it\'s", "n": 3, "flag": true}\n\n{"msg": "$(id)"}\n')
    assert load_trials(str(path)) == [{"msg": "it's", "n": "3", "flag": "True"}, {"msg": "$(id)"}]
    path.write_text('{"msg": 1}\n[1]\n')
    with pytest.raises(SweepSpecError, match="line 2: expected an object"):
        load_trials(str(path))
    path.write_text("{oops\n")
    with pytest.raises(SweepSpecError, match="line 1: not JSON"):
        load_trials(str(path))
    with pytest.raises(SweepSpecError, match="cannot read"):
        load_trials(str(tmp_path / "missing.jsonl"))


def test_trial_argv_puts_swept_args_first_and_refuses_duplicates() -> None:
    assert trial_argv({"a": "-x y"}, ["--b", "1", "--", "--a"]) == ["--a=-x y", "--b", "1", "--", "--a"]
    with pytest.raises(SweepSpecError, match="--a is swept and also given"):
        trial_argv({"a": "1"}, ["--a=2"])
