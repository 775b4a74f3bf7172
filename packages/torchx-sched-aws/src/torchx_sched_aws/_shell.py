"""``sh -c`` scripts for containers that need per-node values (words quoted by ``torchx.schedulers.shell.shell_word``)."""

from __future__ import annotations

from collections.abc import Sequence


def script(exports: Sequence[tuple[str, str]], command: Sequence[str]) -> str:
    """``export NAME=WORD; ...; exec WORD...`` (words already quoted)."""
    lines = [f"export {name}={word}" for name, word in exports]
    lines.append("exec " + " ".join(command))
    return "; ".join(lines)
