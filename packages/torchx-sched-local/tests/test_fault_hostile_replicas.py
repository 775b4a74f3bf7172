"""Fault injection, issue 20: replicas that do what a supervisor must survive.

A FIFO or ``/dev/zero`` left as the replica's error file (point 6).
"""

from __future__ import annotations

import json
import time

import pytest
from torchx.specs import AppState
from torchx.testing import python_app
from torchx_sched_local.local_scheduler import LocalScheduler
from torchx_sched_local.supervisor import MAX_ERROR_FILE

_ERROR_FILE = "import os, sys\npath = os.environ['TORCHELASTIC_ERROR_FILE']\n"


@pytest.mark.parametrize(
    "make",
    [
        "os.mkfifo(path)",  # reading it would block for ever
        "os.symlink('/dev/zero', path)",  # reading it would never end
        "os.symlink('/dev/null', path)",
        "os.mkdir(path)",
    ],
    ids=["fifo", "dev-zero", "dev-null", "directory"],
)
def test_an_error_file_that_is_not_a_regular_file_is_ignored(sched: LocalScheduler, make: str) -> None:
    app_id = sched.submit(python_app(_ERROR_FILE + make + "\nsys.exit(3)\n", name="err"), {})
    started = time.monotonic()
    desc = sched.wait(app_id, timeout=30)
    assert desc is not None and desc.state == AppState.FAILED, desc
    assert time.monotonic() - started < 10
    (replica,) = desc.roles_statuses[0].replicas
    assert json.loads(replica.structured_error_msg) == {"message": "r/0 exited with code 3", "exit_code": 3}
    assert len(desc.structured_error_msg) < 1000


def test_a_huge_error_file_is_cut_to_its_bound(sched: LocalScheduler) -> None:
    code = _ERROR_FILE + "open(path, 'w').write('e' * 10_000_000)\nsys.exit(1)\n"
    app_id = sched.submit(python_app(code, name="err"), {})
    desc = sched.wait(app_id, timeout=30)
    assert desc is not None and desc.state == AppState.FAILED
    (replica,) = desc.roles_statuses[0].replicas
    assert replica.structured_error_msg == "e" * MAX_ERROR_FILE
