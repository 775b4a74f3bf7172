"""Unique prefixes of a verb's long options (``run --dry`` for ``--dryrun``), as argparse
accepts them, except after the point where a verb's free-form arguments begin: nothing after
a component name is ever read as a torchx option (``run utils.sh cmd --w`` passes ``--w``)."""

from __future__ import annotations

import argparse


def expand_abbreviations(parser: argparse.ArgumentParser, args: list[str]) -> list[str]:
    """``args`` with each unique prefix of one of ``parser``'s long options spelled out, up to
    the first positional argument when ``parser`` takes the rest as-is (``REMAINDER``)."""
    actions = {s: a for a in parser._actions for s in a.option_strings}
    longs = [s for s in actions if s.startswith("--")]
    remainder = any(a.nargs == argparse.REMAINDER for a in parser._actions)
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--" or (remainder and not arg.startswith("-")):
            return out + args[i:]
        name, eq, value = arg.partition("=")
        if name.startswith("--") and name not in actions:
            matches = [s for s in longs if s.startswith(name)]
            if len(matches) == 1:  # an ambiguous or unknown one is left for argparse to report
                name = matches[0]
        out.append(name + eq + value)
        action = actions.get(name)
        if action is not None and action.nargs != 0 and not eq and i + 1 < len(args):
            out.append(args[i + 1])  # the option's value, whatever it looks like
            i += 1
        i += 1
    return out
