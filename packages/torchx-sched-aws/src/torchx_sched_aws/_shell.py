"""``sh -c`` scripts for containers that need per-node values: every user word is quoted."""

from __future__ import annotations

import shlex
from collections.abc import Sequence


def quote(text: str, token: str | None = None, expansion: str = "") -> str:
    """One shell word for ``text``, with each ``token`` in it replaced by ``"expansion"``.

    Everything but the expansion is single-quoted (``shlex.quote``), so the shell
    expands nothing the user wrote.

    Example: ``quote("--rank=@R@", "@R@", "${I}")`` -> ``--rank="${I}"``
    """
    if not token or token not in text:
        return shlex.quote(text)
    parts: list[str] = []
    for i, piece in enumerate(text.split(token)):
        if i:
            parts.append(f'"{expansion}"')
        if piece:
            parts.append(shlex.quote(piece))
    return "".join(parts)


def script(exports: Sequence[tuple[str, str]], command: Sequence[str]) -> str:
    """``export NAME=WORD; ...; exec WORD...`` (words already quoted)."""
    lines = [f"export {name}={word}" for name, word in exports]
    lines.append("exec " + " ".join(command))
    return "; ".join(lines)
