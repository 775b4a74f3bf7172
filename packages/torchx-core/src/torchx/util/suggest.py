"""Did-you-mean suggestions for error messages."""

from __future__ import annotations

from collections.abc import Iterable


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """Returns ``" Did you mean 'x'?"`` for the closest candidate, or ``""``."""
    import difflib

    matches = difflib.get_close_matches(word, list(candidates), n=3, cutoff=0.6)
    if not matches:
        return ""
    return " Did you mean " + " or ".join(repr(m) for m in matches) + "?"
