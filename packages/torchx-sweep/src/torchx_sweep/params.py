"""The trials of a sweep: ``--param`` specs as a grid or random samples, or a JSON-lines file.

A trial is a dict of component arguments (``{"lr": "0.001", "bs": "32"}``); ``--param NAME=...``
sets the component argument ``--NAME``.

Specs::

    lr=1e-3,1e-4              # values (a grid axis; sampled uniformly under --random)
    msg=["a,b", "it's"]       # values as a JSON list (when a value has a comma)
    lr=loguniform(1e-5,1e-2)  # distributions: --random only
    lr=uniform(0,1)  bs=randint(16,128)  bs=choice(32,64)
"""

from __future__ import annotations

import itertools
import json
import math
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

Trial = dict[str, str]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")
_DIST = re.compile(r"(uniform|loguniform|randint|choice)\((.*)\)", re.DOTALL)


class SweepSpecError(ValueError):
    """A ``--param``, ``--random`` or trials-file problem; the message says how to fix it."""


@dataclass(frozen=True)
class Param:
    """One ``--param``: a component argument and its values or distribution.

    Attributes:
        name: the component argument (``--NAME``)
        values: the values to try (a grid axis, or ``choice``)
        dist: ``uniform``/``loguniform``/``randint`` (then ``bounds``), or ``""`` for values
        bounds: (low, high) of the distribution
    """

    name: str
    values: tuple[str, ...] = ()
    dist: str = ""
    bounds: tuple[float, float] = (0.0, 0.0)

    def sample(self, rng: random.Random) -> str:
        """One value drawn with ``rng``."""
        low, high = self.bounds
        if self.dist == "uniform":
            return format_number(rng.uniform(low, high))
        if self.dist == "loguniform":
            return format_number(math.exp(rng.uniform(math.log(low), math.log(high))))
        if self.dist == "randint":
            return str(rng.randint(int(low), int(high)))
        return rng.choice(self.values)


def format_number(value: float) -> str:
    """A float as a short exact-enough string (6 significant digits)."""
    return f"{value:.6g}"


def _number(text: str, spec: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise SweepSpecError(f"--param {spec!r}: {text.strip()!r} is not a number") from None


def parse_param(spec: str) -> Param:
    """Parses one ``--param`` spec (see the module docstring).

    Raises:
        SweepSpecError: the spec is malformed (the message shows the accepted forms)
    """
    name, sep, rhs = spec.partition("=")
    name = name.strip().lstrip("-")
    if not sep or not _NAME.fullmatch(name):
        raise SweepSpecError(
            f"--param {spec!r}: expected NAME=v1,v2,... or NAME=uniform|loguniform|randint|choice(...),"
            " e.g. --param lr=1e-3,1e-4"
        )
    rhs = rhs.strip()
    match = _DIST.fullmatch(rhs)
    if match:
        kind, inner = match.groups()
        if kind == "choice":
            return Param(name, _values(inner, spec))
        parts = inner.split(",")
        if len(parts) != 2:
            raise SweepSpecError(f"--param {spec!r}: {kind}(LOW,HIGH) takes two numbers")
        low, high = (_number(p, spec) for p in parts)
        if not low < high:
            raise SweepSpecError(f"--param {spec!r}: LOW must be below HIGH")
        if kind == "loguniform" and low <= 0:
            raise SweepSpecError(f"--param {spec!r}: loguniform needs LOW > 0")
        if kind == "randint" and not (low.is_integer() and high.is_integer()):
            raise SweepSpecError(f"--param {spec!r}: randint takes integers")
        return Param(name, dist=kind, bounds=(low, high))
    return Param(name, _values(rhs, spec))


def _values(text: str, spec: str) -> tuple[str, ...]:
    text = text.strip()
    if text.startswith("["):
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError as e:
            raise SweepSpecError(f"--param {spec!r}: the JSON list is malformed: {e}") from None
        if not isinstance(loaded, list):
            raise SweepSpecError(f"--param {spec!r}: expected a JSON list")
        values = tuple(arg_text(v) for v in loaded)
    else:
        values = tuple(v.strip() for v in text.split(","))
    if not values or (any(v == "" for v in values) and not text.startswith("[")):
        raise SweepSpecError(f"--param {spec!r}: a value is empty; list values as v1,v2 (or a JSON list)")
    return values


def arg_text(value: object) -> str:
    """A trial value as the component's command line sees it (JSON for non-strings)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, list):
        return ",".join(arg_text(v) for v in value)
    return json.dumps(value)


def _check_unique(params: Sequence[Param]) -> None:
    seen: set[str] = set()
    for p in params:
        if p.name in seen:
            raise SweepSpecError(f"--param {p.name} is given twice; give each argument once")
        seen.add(p.name)


def grid(params: Sequence[Param]) -> list[Trial]:
    """Every combination of the params' values, the last param varying fastest.

    Raises:
        SweepSpecError: a param is a continuous distribution (that needs ``--random N``)
    """
    _check_unique(params)
    for p in params:
        if p.dist:
            raise SweepSpecError(f"--param {p.name}={p.dist}(...) is a distribution: sample it with --random N")
    names = [p.name for p in params]
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*(p.values for p in params))]


def random_trials(params: Sequence[Param], n: int, seed: int | None) -> list[Trial]:
    """``n`` trials, each param drawn independently (values lists uniformly) from ``random.Random(seed)``."""
    _check_unique(params)
    if n < 1:
        raise SweepSpecError(f"--random {n}: the number of trials must be at least 1")
    rng = random.Random(seed)
    return [{p.name: p.sample(rng) for p in params} for _ in range(n)]


def load_trials(path: str) -> list[Trial]:
    """The trials of a JSON-lines file: one object of component arguments per line (blank lines skipped).

    Raises:
        SweepSpecError: the file cannot be read, or a line is not a JSON object
    """
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise SweepSpecError(f"--trials {path}: cannot read it: {e.strerror or e}") from None
    trials: list[Trial] = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise SweepSpecError(f"--trials {path}, line {n}: not JSON ({e.msg}); write one object per line") from None
        if not isinstance(obj, dict) or not all(isinstance(k, str) and _NAME.fullmatch(k) for k in obj):
            raise SweepSpecError(
                f'--trials {path}, line {n}: expected an object of component arguments, e.g. {{"lr": 0.1}}'
            )
        trials.append({k: arg_text(v) for k, v in obj.items()})
    if not trials:
        raise SweepSpecError(f"--trials {path}: the file has no trials")
    return trials


def trial_argv(trial: Trial, base_args: Sequence[str]) -> list[str]:
    """The component's command line for ``trial``: ``--NAME=VALUE`` words, then ``base_args``.

    Raises:
        SweepSpecError: ``base_args`` also sets a swept argument
    """
    head = list(base_args[: base_args.index("--")]) if "--" in base_args else list(base_args)
    for name in trial:
        flag = f"--{name}"
        if any(w == flag or w.startswith(flag + "=") for w in head):
            raise SweepSpecError(f"{flag} is swept and also given as a component argument; give it once")
    return [*(f"--{k}={v}" for k, v in trial.items()), *base_args]
