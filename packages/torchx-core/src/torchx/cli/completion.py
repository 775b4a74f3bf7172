"""Shell completion: ``torchx completion bash|zsh|fish`` prints a script; the script asks
``torchx __complete WORD...`` for candidates, computed from what is installed now.

Candidates: verbs; each verb's flags; scheduler names after ``-s``; run options as
``key=`` after ``-cfg``; component names after ``run``; the chosen component's
``--arguments``; app handles (``SCHEDULER://``, and the jobs ``local_cwd`` (or the
scheduler the word names) lists) for the verbs that take one.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterable

#: verbs whose positional argument is an app handle
HANDLE_VERBS = frozenset({"status", "describe", "wait", "log", "cancel", "delete"})
#: verbs whose positional argument is a scheduler name
SCHEDULER_VERBS = frozenset({"runopts"})
COMPLETE_VERB = "__complete"

_SCRIPTS = {
    "bash": """\
# torchx completion for bash: eval "$(torchx completion bash)"
_torchx_complete() {
    local line="${COMP_LINE:0:COMP_POINT}" IFS=$' \\t\\n'
    local -a words
    read -ra words <<< "$line"
    [[ -z "$line" || "$line" == *[[:space:]] ]] && words+=("")
    # bash splits the current word at ':' and '=': drop what it already holds
    local cur="${words[-1]}" strip
    strip="${cur%"${COMP_WORDS[COMP_CWORD]}"}"
    IFS=$'\\n'
    COMPREPLY=($(torchx __complete "${words[@]:1}" 2>/dev/null))
    COMPREPLY=("${COMPREPLY[@]#"$strip"}")
    case "${COMPREPLY[0]}" in *= | *://) compopt -o nospace 2>/dev/null ;; esac
}
complete -o default -F _torchx_complete torchx
""",
    "zsh": """\
#compdef torchx
# torchx completion for zsh: eval "$(torchx completion zsh)" after compinit, or save it as
# _torchx in a directory of $fpath
_torchx() {
    local -a candidates
    # the words before the current one as typed; the current one up to the cursor, unquoted
    candidates=("${(@f)$(torchx __complete "${(@)words[2,CURRENT-1]}" "$PREFIX" 2>/dev/null)}")
    candidates=("${(@)candidates:#}")
    if (( ! ${#candidates} )); then
        _files
        return
    fi
    compadd -S '' -- "${(@)candidates:#*[^=/]}"
    compadd -- "${(@)candidates:#*[=/]}"
}
if [[ ${zsh_eval_context[-1]} == loadautofunc ]]; then
    _torchx "$@"
elif (( $+functions[compdef] )); then
    compdef _torchx torchx
else
    print -u2 "torchx completion: zsh's completion system is not loaded; run 'autoload -Uz compinit && compinit' first"
fi
""",
    "fish": """\
# torchx completion for fish: torchx completion fish | source
function __torchx_complete
    set -l words (commandline -opc) (commandline -ct)
    set -l found (torchx __complete $words[2..-1] 2>/dev/null)
    if set -q found[1]
        printf '%s\\n' $found
    else
        __fish_complete_path (commandline -ct)
    end
end
complete -c torchx -f -a '(__torchx_complete)'
""",
}


def script(shell: str) -> str:
    """The completion script for ``shell`` (bash, zsh or fish)."""
    try:
        return _SCRIPTS[shell]
    except KeyError:
        raise ValueError(f"no completion for shell {shell!r}: choose one of {', '.join(_SCRIPTS)}") from None


def _option_strings(parser: argparse.ArgumentParser) -> tuple[list[str], set[str]]:
    """(every long/short flag of ``parser``, the flags that take a value)."""
    flags: list[str] = []
    valued: set[str] = set()
    for action in parser._actions:  # argparse has no public API for this
        flags += action.option_strings
        if action.option_strings and action.nargs != 0:
            valued.update(action.option_strings)
    return flags, valued


def _verb_parser(verb: str, factory: str) -> argparse.ArgumentParser:
    import argparse

    from torchx.cli.verbs import load_command

    parser = argparse.ArgumentParser(prog=f"torchx {verb}", add_help=True)
    load_command(factory).add_arguments(parser)
    return parser


def _schedulers() -> list[str]:
    from torchx.schedulers import get_scheduler_factories

    return sorted(get_scheduler_factories())


def _run_options(scheduler: str) -> list[str]:
    from torchx.schedulers import get_scheduler_factories

    factory = get_scheduler_factories().get(scheduler)
    if factory is None:
        return []
    opts = factory("torchx").run_opts()
    return [f"{name}=" for name, _ in opts]


def _components() -> list[str]:
    from torchx.specs.finder import get_components

    return sorted(get_components())


def _component_flags(name: str) -> list[str]:
    from torchx.specs.builders import VAR_POSITIONAL, parameters
    from torchx.specs.finder import get_component

    fn = get_component(name).fn
    return [f"--{p.name}" for p in parameters(fn) if p.kind != VAR_POSITIONAL] + ["--help"]


def _handles(word: str) -> list[str]:
    scheme, sep, _ = word.partition("://")
    schedulers = _schedulers()
    if not sep:
        names = [f"{s}://" for s in schedulers]
        scheme = "local_cwd"
    else:
        names = []
    if scheme in schedulers:
        from torchx.runner import get_runner

        with get_runner() as runner:
            names += [app.app_handle for app in runner.list(scheme)]
    return names


def _positionals(words: list[str], valued: set[str]) -> list[str]:
    """The words that are not flags nor flag values."""
    found: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word.startswith("-"):
            skip = word in valued and "=" not in word
        else:
            found.append(word)
    return found


def candidates(words: list[str]) -> Iterable[str]:
    """Completions for the last of ``words`` (the words after ``torchx``; the last may be '')."""
    from torchx.cli import verbs as torchx_verbs

    words = words or [""]
    current, before = words[-1], words[:-1]
    commands, _ = torchx_verbs.commands()
    top_valued = {"--log_level", "--log-level"}
    verbs = _positionals(before, top_valued)
    if not verbs:
        if current.startswith("-"):
            return ["--help", "--version", "--verbose", "--log-level"]
        return [v for v in commands if not v.startswith("_")]
    verb = verbs[0]
    if verb not in commands:
        return []
    rest = before[before.index(verb) + 1 :]
    parser = _verb_parser(verb, commands[verb][0])
    flags, valued = _option_strings(parser)
    previous = rest[-1] if rest else ""
    if previous in ("-s", "--scheduler"):
        return _schedulers()
    if verb == "run":
        return _run_candidates(rest, current, flags, valued)
    if previous in valued:
        return []
    if current.startswith("-"):
        return flags
    if _positionals(rest, valued):
        return []
    if verb in HANDLE_VERBS:
        return _handles(current)
    choices = next((a.choices for a in parser._actions if not a.option_strings and a.choices), None)
    if choices:
        return list(choices)
    if verb in SCHEDULER_VERBS:
        return _schedulers()
    return []


def _run_candidates(rest: list[str], current: str, flags: list[str], valued: set[str]) -> list[str]:
    previous = rest[-1] if rest else ""
    positionals = _positionals(rest, valued)
    if positionals:  # after the component name: its own arguments
        return _component_flags(positionals[0]) if current.startswith("-") or not current else []
    if previous in ("-cfg", "--scheduler_args"):
        scheduler = next((rest[i + 1] for i, w in enumerate(rest[:-1]) if w in ("-s", "--scheduler")), None)
        from torchx.schedulers import get_default_scheduler_name

        head, _, _ = current.rpartition(",")
        prefix = head + "," if head else ""
        return [prefix + opt for opt in _run_options(scheduler or get_default_scheduler_name())]
    if previous in valued:
        return []
    if current.startswith("-"):
        return flags
    return _components()


def _unquoted(words: list[str]) -> list[str]:
    """``words`` as typed (bash and zsh pass them so) with the shell's quoting removed, POSIX
    rules; as given when they hold no quoting or do not parse (fish passes them unquoted)."""
    if not any(c in w for w in words for c in "'\"\\"):
        return words
    import shlex

    try:
        return shlex.split(" ".join(words))
    except ValueError:
        return words


def complete(words: list[str]) -> int:
    """Prints the candidates that start with the last word, one a line; never fails loudly.

    ``words``: the words after ``torchx`` as the shell has them, the last one (the word being
    completed, up to the cursor) unquoted.
    """
    current = words[-1] if words else ""
    try:
        found = [c for c in candidates([*_unquoted(words[:-1]), current]) if c.startswith(current)]
    except Exception:  # a completion must never print a traceback into the user's prompt
        found = []
    sys.stdout.write("".join(f"{c}\n" for c in found))
    return 0
