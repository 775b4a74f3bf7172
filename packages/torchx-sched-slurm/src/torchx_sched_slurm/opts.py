"""The ``slurm`` run options and their validation."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from torchx.specs.runopts import InvalidRunConfigException
from torchx.workspace.job_dir import JobDirOpts

#: values ``--mail-type`` accepts (Slurm 22.05 and later)
MAIL_TYPES = frozenset(
    {
        "NONE",
        "BEGIN",
        "END",
        "FAIL",
        "REQUEUE",
        "ALL",
        "INVALID_DEPEND",
        "STAGE_OUT",
        "TIME_LIMIT",
        "TIME_LIMIT_90",
        "TIME_LIMIT_80",
        "TIME_LIMIT_50",
        "ARRAY_TASKS",
    }
)

# minutes | minutes:seconds | hours:minutes:seconds | days-hours | days-hours:minutes | days-hours:minutes:seconds
_TIME_RE = re.compile(r"\d+(:\d{1,2}){0,2}|\d+-\d{1,2}(:\d{1,2}){0,2}")
_UNLIMITED = frozenset({"UNLIMITED", "INFINITE"})
# [R:]SIGNAL[@SECONDS]: a name (USR1, SIGTERM) or number; not B: (the batch shell only: the replicas would miss it)
_SIGNAL_RE = re.compile(r"(R:)?(SIG)?([A-Z][A-Z0-9+]{1,9}|\d{1,2})(@\d{1,6})?", re.IGNORECASE)


@dataclass
class SlurmOpts(JobDirOpts):
    """Run options of the ``slurm`` scheduler (passed to ``sbatch``)."""

    partition: str | None = None
    """Partition to run in (default: the cluster's default partition)."""
    time: str | None = None
    """Time limit: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS (sbatch --time)."""
    comment: str | None = None
    """Comment stored with the job (sbatch --comment)."""
    constraint: str | None = None
    """Node features the job needs (sbatch --constraint)."""
    mail_user: str | None = field(default=None, metadata={"cfg_key": "mail-user"})
    """Who gets mail about the job (sbatch --mail-user)."""
    mail_type: str | None = field(default=None, metadata={"cfg_key": "mail-type"})
    """Events that send mail, comma-separated: NONE, BEGIN, END, FAIL, REQUEUE, ALL, TIME_LIMIT, ... (sbatch --mail-type)."""
    qos: str | None = None
    """Quality of service (sbatch --qos)."""
    account: str | None = None
    """Account to charge (sbatch --account)."""
    nomem: bool = False
    """Do not request memory (drop --mem), for clusters that do not schedule memory."""
    exclusive: bool = False
    """Do not share nodes with other jobs (sbatch --exclusive)."""
    signal: str | None = None
    """Warn the job before its time limit: SIG@SECONDS sends SIG to every process of its steps SECONDS before the end (sbatch --signal; e.g. USR1@120), so it can checkpoint."""

    def validate(self) -> None:
        """Checks every value.

        Raises:
            InvalidRunConfigException: which option is wrong and what it expects
        """
        self.check_single_lines()
        if self.time is not None and self.time.upper() not in _UNLIMITED and not _TIME_RE.fullmatch(self.time):
            raise InvalidRunConfigException(
                f"run option 'time' is not a Slurm time limit: {self.time!r}; use minutes (30), MM:SS,"
                " HH:MM:SS (2:00:00), D-HH, D-HH:MM or D-HH:MM:SS (1-12:00:00), or UNLIMITED",
                "time",
            )
        if self.signal is not None and not _SIGNAL_RE.fullmatch(self.signal):
            raise InvalidRunConfigException(
                f"run option 'signal' is not SIGNAL[@SECONDS]: {self.signal!r}; e.g. USR1@120 (SIGUSR1 to the"
                " job's processes 120 s before its time limit) or TERM@300",
                "signal",
            )
        if self.mail_type is not None:
            bad = [t for t in self.mail_type.split(",") if t.strip().upper() not in MAIL_TYPES]
            if bad:
                raise InvalidRunConfigException(
                    f"run option 'mail-type' has unknown value(s) {', '.join(map(repr, bad))};"
                    f" use a comma-separated list of {', '.join(sorted(MAIL_TYPES))}",
                    "mail-type",
                )
        if self.mail_user is not None and any(c.isspace() for c in self.mail_user):
            raise InvalidRunConfigException(
                f"run option 'mail-user' must be one address or user name, got {self.mail_user!r}", "mail-user"
            )
        if self.job_dir is not None and self.job_dir.strip() != self.job_dir:
            raise InvalidRunConfigException(
                f"run option 'job_dir' has leading or trailing blanks: {self.job_dir!r}", "job_dir"
            )
