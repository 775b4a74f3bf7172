"""``local_docker`` causes from the engine's real ``State`` of containers (recorded from a live
Docker engine into ``fixtures/docker_states.json``: exit 3, success, OOM kill at a 32 MiB limit,
a real segfault, ``docker kill``, ``docker stop`` of a process that ignores SIGTERM, a ``kill -9``
of the container's process on the host, and an entrypoint that does not exist)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from torchx.schedulers.causes import EndCause
from torchx_sched_local.docker_causes import container_end

STATES: dict[str, dict[str, Any]] = json.loads((Path(__file__).parent / "fixtures" / "docker_states.json").read_text())


@pytest.mark.parametrize(
    ("case", "cause", "code", "words"),
    [
        ("exit_3", EndCause.APP_ERROR, 3, "exited with code 3"),
        ("succeeded", EndCause.APP_ERROR, 0, "exited with code 0"),
        ("oom_killed", EndCause.KILLED, 137, "OOMKilled"),
        ("segfault", EndCause.APP_ERROR, 139, "SIGSEGV"),
        ("docker_kill", EndCause.KILLED, 137, "SIGKILL"),
        ("docker_stop_sleep", EndCause.KILLED, 137, "SIGKILL"),
        ("host_sigkill", EndCause.KILLED, 137, "SIGKILL"),
        ("not_found", EndCause.APP_ERROR, 127, "executable file not found"),
    ],
)
def test_recorded_states(case: str, cause: EndCause, code: int, words: str) -> None:
    end = container_end(STATES[case], "w/0")
    assert (end.cause, end.exit_code) == (cause, code)
    assert words in end.reason and end.reason.startswith("w/0 ")


def test_every_recorded_state_is_covered() -> None:
    assert set(STATES) == {
        "exit_3",
        "succeeded",
        "oom_killed",
        "segfault",
        "docker_kill",
        "docker_stop_sleep",
        "host_sigkill",
        "not_found",
    }


def test_an_exit_code_above_every_signal_is_a_plain_exit_code() -> None:
    end = container_end({**STATES["exit_3"], "ExitCode": 255}, "w/0")
    assert (end.cause, end.exit_code) == (EndCause.APP_ERROR, 255)
