"""The records the driver writes to the Ray job's log, one per line, and their parser.

The job log (what the Jobs API returns) is the driver's output. The driver writes every
line a replica printed, and every change of a replica's state, as a record::

    ~tx <replica index> <kind> <unix time> <payload>

* kinds ``o`` / ``e``: a line the replica wrote to stdout / stderr (payload: the line without
  its ``\\n``); ``O`` / ``E``: its last line, which had no ``\\n``
* kind ``s``: a state change, payload ``<STATE> <exit code or -> <host or ->``
* kind ``a`` (index ``-``): an attempt of the whole app starts, payload: the attempt number (0 first)
* kind ``m`` (index ``-``): a message of the driver
* kind ``x`` (index ``-``): an attempt ended (a job that recovers, ``torchx-managed``), payload
  ``<attempt> <exit code or -> <budget>``, budget ``SUCCEEDED``, ``RESTART`` (an application
  error, counted against ``max_restarts``), ``RECOVERY`` (the infrastructure's failure,
  against ``max_recoveries``) or ``UNCOUNTED`` (an exit code of ``recover_on_exit_codes``)
* kind ``b`` (index ``-``): the driver waits before the next attempt, payload
  ``<next attempt> <seconds>``

Anything else in the log (Ray's own messages) is not a record. This module is shared by the
driver (on the cluster, without torchx) and the scheduler: it imports nothing but the stdlib.
"""

from __future__ import annotations

MARK = "~tx"
STDOUT, STDERR, STATE, ATTEMPT, MESSAGE, ATTEMPT_END, BACKOFF = "o", "e", "s", "a", "m", "x", "b"
#: kinds of output records, by stream; the upper-case kind marks a last line without ``\\n``
OUTPUT_KINDS = {"o": ("stdout", True), "e": ("stderr", True), "O": ("stdout", False), "E": ("stderr", False)}


def output(index: int, stream: str, moment: float, text: str, newline: bool = True) -> str:
    """The record of one output line (``text`` without its ``\\n``); ``stream`` is ``o`` or ``e``."""
    kind = stream if newline else stream.upper()
    return f"{MARK} {index} {kind} {moment:.3f} {text}\n"


def state(index: int, moment: float, value: str, exit_code: int | None = None, host: str | None = None) -> str:
    """The record of replica ``index`` entering state ``value``."""
    code = "-" if exit_code is None else str(exit_code)
    return f"{MARK} {index} {STATE} {moment:.3f} {value} {code} {host or '-'}\n"


def attempt(moment: float, number: int) -> str:
    """The record of attempt ``number`` of the app starting."""
    return f"{MARK} - {ATTEMPT} {moment:.3f} {number}\n"


def attempt_end(moment: float, number: int, exit_code: int | None, budget: str) -> str:
    """The record of attempt ``number`` ending, charged to ``budget``."""
    return f"{MARK} - {ATTEMPT_END} {moment:.3f} {number} {'-' if exit_code is None else exit_code} {budget}\n"


def backoff(moment: float, number: int, seconds: float) -> str:
    """The record of the driver waiting ``seconds`` before attempt ``number``."""
    return f"{MARK} - {BACKOFF} {moment:.3f} {number} {seconds:g}\n"


def message(moment: float, text: str) -> str:
    """A message of the driver (one line)."""
    return f"{MARK} - {MESSAGE} {moment:.3f} {' '.join(text.splitlines())}\n"


class Record:
    """One parsed record: ``index`` is -1 for app-level records; ``payload`` keeps ``\\n`` for output lines."""

    __slots__ = ("index", "kind", "moment", "payload")

    def __init__(self, index: int, kind: str, moment: float, payload: str) -> None:
        self.index = index
        self.kind = kind
        self.moment = moment
        self.payload = payload

    def __repr__(self) -> str:
        return f"Record({self.index!r}, {self.kind!r}, {self.moment!r}, {self.payload!r})"


def parse(line: str) -> Record | None:
    """The record in one log line (with or without its ``\\n``), or None if it is not one."""
    if not line.startswith(MARK + " "):
        return None
    parts = line.rstrip("\n").split(" ", 4)
    if len(parts) < 4:
        return None
    _, index, kind, moment = parts[:4]
    payload = parts[4] if len(parts) == 5 else ""
    try:
        number = -1 if index == "-" else int(index)
        when = float(moment)
    except ValueError:
        return None
    if kind in OUTPUT_KINDS:
        payload += "\n" if OUTPUT_KINDS[kind][1] else ""
    elif kind not in (STATE, ATTEMPT, MESSAGE, ATTEMPT_END, BACKOFF):
        return None
    return Record(number, kind, when, payload)
