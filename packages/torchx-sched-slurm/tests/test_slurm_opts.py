"""Run options: names, types, validation."""

from __future__ import annotations

import pytest
from torchx.specs.runopts import InvalidRunConfigException
from torchx_sched_slurm.opts import SlurmOpts
from torchx_sched_slurm.scheduler import SlurmScheduler


def test_documented_options() -> None:
    opts = SlurmScheduler("t").run_opts()
    names = {name for name, _ in opts}
    assert names == {
        "partition",
        "time",
        "comment",
        "constraint",
        "mail-user",
        "mail-type",
        "job_dir",
        "nomem",
        "exclusive",
        "qos",
        "account",
        "signal",
    }
    assert opts.get("mail_user") is opts.get("mail-user")
    assert all(opt.help for _, opt in opts)


def test_cfg_from_str() -> None:
    opts = SlurmScheduler("t").run_opts()
    cfg = opts.cfg_from_str("partition=debug,time=1:00:00,nomem=true,mail-type=END;FAIL")
    assert cfg == {"partition": "debug", "time": "1:00:00", "nomem": True, "mail-type": "END;FAIL"}


@pytest.mark.parametrize("time", ["30", "30:00", "1:30:00", "2-0", "2-12:30", "2-12:30:15", "UNLIMITED", "infinite"])
def test_valid_times(time: str) -> None:
    SlurmOpts(time=time).validate()


@pytest.mark.parametrize("time", ["soon", "1h", "-5", "1:2:3:4", "1-", "1.5", "2-1:2:3:4"])
def test_invalid_times(time: str) -> None:
    with pytest.raises(InvalidRunConfigException, match="run option 'time' is not a Slurm time limit"):
        SlurmOpts(time=time).validate()


@pytest.mark.parametrize("sig", ["USR1@120", "SIGUSR2@60", "TERM", "10@30", "R:USR1@90"])
def test_valid_signals(sig: str) -> None:
    SlurmOpts(signal=sig).validate()


@pytest.mark.parametrize("sig", ["B:USR1@60", "USR1@", "@60", "USR1@soon", "USR1 @60", "kill -9"])
def test_invalid_signals(sig: str) -> None:
    with pytest.raises(InvalidRunConfigException, match="run option 'signal' is not SIGNAL"):
        SlurmOpts(signal=sig).validate()


def test_mail_type() -> None:
    SlurmOpts(mail_type="BEGIN,END,FAIL,TIME_LIMIT_90").validate()
    SlurmOpts(mail_type="all").validate()
    with pytest.raises(InvalidRunConfigException, match=r"unknown value\(s\) 'FINISH'.*BEGIN"):
        SlurmOpts(mail_type="END,FINISH").validate()


def test_mail_user() -> None:
    SlurmOpts(mail_user="me@example.com").validate()
    with pytest.raises(InvalidRunConfigException, match="mail-user"):
        SlurmOpts(mail_user="a b").validate()


@pytest.mark.parametrize("key", ["partition", "comment", "qos", "account", "constraint", "job_dir"])
@pytest.mark.parametrize("value", ["two\nlines", "", "   ", "nul\0"])
def test_values_must_be_one_line(key: str, value: str) -> None:
    with pytest.raises(InvalidRunConfigException, match=f"run option '{key}' must be a non-empty single line"):
        SlurmOpts(**{key: value}).validate()


def test_wrong_type_is_refused_by_resolve() -> None:
    with pytest.raises(InvalidRunConfigException, match="nomem"):
        SlurmScheduler("t").run_opts().resolve({"nomem": 3})
