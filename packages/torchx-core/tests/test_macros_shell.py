"""Macros reach processes as data: ``macros.escape`` and ``macros.shell_args`` (run through a real ``sh``)."""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path
from string import Template

import pytest
from torchx.schedulers.shell import placeholder, shell_word
from torchx.specs import Role, macros
from torchx.testing import PASSTHROUGH_ARGS, hostile_value, macro_probe, macro_probe_output

MAPPING = {"img_root": "/R", "app_id": "A", "replica_id": "7", "rank0_env": "RK", "base_img_root": "B"}


def fill(template: str) -> str:
    return Template(template).safe_substitute(MAPPING)


@pytest.mark.parametrize(
    ("text", "escaped", "kept"),
    [
        ("plain", "plain", "plain"),
        ("cost $$5", "cost $$$$5", "cost $$$$5"),
        ("${app_id}-$replica_id", "$${app_id}-$$replica_id", "${app_id}-$replica_id"),
        ("$HOME $(id) $@ $1 ${x:-y} ${ $", "$HOME $(id) $@ $1 ${x:-y} ${ $", "$HOME $(id) $@ $1 ${x:-y} ${ $"),
        ("$app_idx ${app_id ${APP_ID}", "$app_idx ${app_id ${APP_ID}", "$app_idx ${app_id ${APP_ID}"),
        ("$${app_id}", "$$$${app_id}", "$$$${app_id}"),
    ],
)
def test_escape(text: str, escaped: str, kept: str) -> None:
    assert macros.escape(text) == escaped
    assert macros.escape(text, keep=macros.NAMES) == kept
    assert fill(escaped) == text


def test_escape_fills_back_to_the_text_for_any_text() -> None:
    rng = random.Random(12)
    pieces = ["$", "$$", "{", "}", "app_id", "replica_id", "img_root", "rank0_env", "x", "_", "1", " ", "'", "ü", "\n"]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        assert fill(macros.escape(text)) == text, text
        kept = macros.escape(text, keep=macros.NAMES)
        # keeping every macro: only the macro references change when filled
        assert fill(kept) == fill(text.replace("$$", "\0")).replace("\0", "$$"), text


def test_shell_args_shape() -> None:
    args = macros.shell_args('exec ls "$@" "${${rank0_env}:-x}" $$', ["${img_root}/d", "$$", "${app_id}"], name="ls$$")
    assert args == ["-c", 'exec ls "$@" "${${rank0_env}:-x}" $$$$', "ls$$$$", "${img_root}/d", "$$$$", "${app_id}"]
    filled = macros.Values(img_root="/R", app_id="A", replica_id="0", rank0_env="RK").apply(Role("r", "i", args=args))
    assert filled.args == ["-c", 'exec ls "$@" "${RK:-x}" $$', "ls$$", "/R/d", "$$", "A"]


def test_shell_args_with_hostile_values_run_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    img_root, app_id = hostile_value(str(marker)), hostile_value(str(marker)) + "${replica_id}"
    role = macro_probe(img_root, str(marker))
    filled = macros.Values(img_root=img_root, app_id=app_id, replica_id="3").apply(role)
    out = subprocess.run(
        [filled.entrypoint, *filled.args], env={**os.environ, **filled.env}, capture_output=True, text=True, check=True
    )
    assert out.stdout == macro_probe_output(img_root, app_id, 3)
    assert not marker.exists()
    assert "<$$>\n" in out.stdout
    assert f"<{PASSTHROUGH_ARGS[5]}>\n" in out.stdout


@pytest.mark.parametrize("text", ["", "@R@", "a@R@b", "@R@@R@", "it's @R@ $(id) `id`\n$$", "no token 'x'"])
def test_shell_word_expands_only_the_placeholder(text: str, tmp_path: Path) -> None:
    token = placeholder("r")
    word = shell_word(text.replace("@R@", token), {token: '"$I"'})
    out = subprocess.run(["sh", "-c", f"printf %s {word}"], env={"I": "$(touch x)'"}, cwd=tmp_path, capture_output=True)
    assert out.stdout.decode() == text.replace("@R@", "$(touch x)'")
    assert not (tmp_path / "x").exists()
