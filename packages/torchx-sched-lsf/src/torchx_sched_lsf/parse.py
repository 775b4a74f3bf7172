"""Parses what ``bjobs`` prints (pure: no LSF calls).

Two forms, one result (:class:`LsfJob`):

* ``bjobs -o "<fields>" -json`` (IBM Spectrum LSF 10.1 and later): :func:`parse_json`;
* ``bjobs -UF`` (unformatted long output; every LSF, and the only detailed form OpenLava
  has): :func:`parse_unformatted`.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from datetime import datetime

#: ``bjobs -o`` fields asked for with ``-json``, in the order :func:`parse_json` reads them
JSON_FIELDS = (
    "jobid",
    "stat",
    "job_name",
    "exit_code",
    "exec_host",
    "exec_cwd",
    "sub_cwd",
    "pend_reason",
    "exit_reason",
)

_STATUS = re.compile(r"Status <(\w+)>")
_JOB = re.compile(r"^Job <(\d+(?:\[\d+\])?)>")
_NAME = re.compile(r"Job Name <([^>]*)>")
_EXEC_CWD = re.compile(r"Execution CWD <([^>]*)>")
_SUB_CWD = re.compile(r"(?<!Execution )CWD <([^>]*)>")
#: "Started on <h>", "Started 2 Task(s) on Host(s) <h>", an array element's "[3] started on <h>" (OpenLava)
_STARTED = re.compile(
    r"(?:Started|\[\d+\] started) (?:on|\d+ Task\(s\) on)(?: \d+ Hosts/Processors)?(?: Host\(s\))? ((?:<[^>]*> ?)+)"
)
#: an array element's job name ends in its index: ``name[3]``
_ELEMENT_NAME = re.compile(r"\[(\d+)\]$")
_EXIT = re.compile(r"Exited with exit code (\d+)")
_SIGNAL = re.compile(r"Exited by (?:LSF )?signal (\d+)")
_KILLED = ("TERM_OWNER", "killed by owner", "TERM_ADMIN", "killed by root or LSF administrator")
#: a dated event line of ``bjobs -UF``: ``Tue Nov 24 15:30:04: Submitted from host ...`` (a year
#: after the time where the LSF prints one)
_EVENT = re.compile(r"^\w{3} (\w{3} +\d+ \d\d:\d\d:\d\d)(?: (\d{4}))?: (.*)$", re.M)
_START_EVENT = re.compile(r"(?:Started|\[\d+\] started) ")
_END_EVENT = ("Done successfully", "Exited")


@dataclass
class LsfJob:
    """One LSF job as ``bjobs`` reports it.

    Args:
        job_id: the job id
        name: the job name
        stat: LSF's state word (PEND, RUN, DONE, EXIT ...)
        exit_code: the job's exit code once it exited (0 for DONE), None if unknown
        hosts: execution hosts, one entry per slot (empty while pending)
        cwd: the job's working directory (where its files are), ``""`` if unknown
        reason: why it is pending or why it ended, ``""`` if none given
        killed: LSF says its owner or an administrator killed it
        submitted: when it was submitted (seconds since the epoch), None if not reported
        started: when it (its first element or slot) started, None if not yet
        ended: when it ended (done or exited), None while it has not
    """

    job_id: str
    name: str
    stat: str
    exit_code: int | None = None
    hosts: list[str] = field(default_factory=list)
    cwd: str = ""
    reason: str = ""
    killed: bool = False
    submitted: float | None = None
    started: float | None = None
    ended: float | None = None


def _hosts(text: str) -> list[str]:
    """Slot hosts from ``hostA:hostA``, ``2*hostA:hostB``, ``<2*hostA> <hostB>`` or ``-``."""
    out: list[str] = []
    for part in re.split(r"[:\s<>]+", text):
        if not part or part == "-":
            continue
        count, star, host = part.partition("*")
        if star and count.isdigit():
            out += [host] * int(count)
        else:
            out.append(part)
    return out


def parse_unformatted(text: str) -> list[LsfJob]:
    """Jobs from ``bjobs -UF`` output (records start with ``Job <id>``)."""
    jobs: list[LsfJob] = []
    for record in re.split(r"\n(?=Job <\d)", "\n" + text):
        record = record.strip("\n-")
        m = _JOB.match(record)
        status = _STATUS.search(record)
        if not m or not status:
            continue
        name = _NAME.search(record)
        cwd = _EXEC_CWD.search(record) or _SUB_CWD.search(record)
        started = _STARTED.search(record)
        exit_code: int | None = None
        if "Done successfully" in record:
            exit_code = 0
        elif (code := _EXIT.search(record)) is not None:
            exit_code = int(code.group(1))
        elif (sig := _SIGNAL.search(record)) is not None:
            exit_code = 128 + int(sig.group(1))
        submitted, started_at, ended = _event_times(record)
        reason = ""
        if "PENDING REASONS:" in record:
            reason = record.split("PENDING REASONS:", 1)[1].strip().split("\n\n", 1)[0].strip()
        jobs.append(
            LsfJob(
                job_id=element_id(m.group(1), name.group(1) if name else ""),
                name=name.group(1) if name else "",
                stat=status.group(1),
                exit_code=exit_code,
                hosts=_hosts(started.group(1)) if started else [],
                cwd=cwd.group(1) if cwd else "",
                reason=" ".join(reason.split()),
                killed=any(k in record for k in _KILLED),
                submitted=submitted,
                started=started_at,
                ended=ended,
            )
        )
    return jobs


def _event_times(record: str) -> tuple[float | None, float | None, float | None]:
    """(submitted, first started, last ended) from the dated event lines of one ``-UF`` record."""
    submitted = started = ended = None
    for m in _EVENT.finditer(record):
        when = event_time(m.group(0)[:3], m.group(1), m.group(2))
        text = m.group(3)
        if when is None:
            continue
        if text.startswith("Submitted") and submitted is None:
            submitted = when
        elif _START_EVENT.match(text) and started is None:
            started = when
        elif text.startswith(_END_EVENT):
            ended = when
    return submitted, started, ended


def event_time(weekday: str, stamp: str, year: str | None, now: float | None = None) -> float | None:
    """Seconds since the epoch of a ``-UF`` event (the cluster's local time). OpenLava prints no
    year: it is the latest one, not after ``now``'s, in which the date falls on ``weekday``."""
    years = [int(year)] if year else range(time.localtime(now).tm_year, time.localtime(now).tm_year - 7, -1)
    for y in years:
        try:
            moment = datetime.strptime(f"{y} {' '.join(stamp.split())}", "%Y %b %d %H:%M:%S")
        except ValueError:
            continue
        if year or moment.strftime("%a") == weekday:
            return moment.timestamp()
    return None


def element_id(job_id: str, name: str) -> str:
    """The id of a job as torchx names it: an array element's is ``<job>[<index>]``. IBM LSF
    prints the bare job id in JOBID unless ``LSB_BJOBS_DISPLAY_ENH=Y``; the element's name
    (``<array name>[<index>]``) then tells the index."""
    m = _ELEMENT_NAME.search(name)
    return f"{job_id}[{m.group(1)}]" if m and job_id.isdigit() else job_id


def parse_json(text: str) -> tuple[list[LsfJob], list[str]]:
    """Jobs and per-job errors from ``bjobs -o "<JSON_FIELDS>" -json`` output.

    Raises:
        ValueError: the output is not bjobs JSON
    """
    try:
        doc = json.loads(text)
        records = doc["RECORDS"]
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise ValueError(f"bjobs -json printed something else: {text[:200]!r}") from e
    jobs: list[LsfJob] = []
    errors: list[str] = []
    for rec in records:
        if rec.get("ERROR"):
            errors.append(str(rec["ERROR"]))
            continue
        stat = str(rec.get("STAT", ""))
        code = str(rec.get("EXIT_CODE", "")).strip()
        exit_reason = str(rec.get("EXIT_REASON", "")).strip()
        name = str(rec.get("JOB_NAME", ""))
        jobs.append(
            LsfJob(
                job_id=element_id(str(rec.get("JOBID", "")), name),
                name=name,
                stat=stat,
                exit_code=int(code) if code.isdigit() else (0 if stat == "DONE" else None),
                hosts=_hosts(str(rec.get("EXEC_HOST", ""))),
                cwd=str(rec.get("EXEC_CWD") or rec.get("SUB_CWD") or ""),
                reason=str(rec.get("PEND_REASON", "")).strip() or exit_reason,
                killed=any(k in exit_reason for k in _KILLED),
            )
        )
    return jobs, errors
