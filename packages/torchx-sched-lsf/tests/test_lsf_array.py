"""Job arrays (a sweep's trials as one ``bsub -J "name[1-N]%K"``): the request, the script run in
bash as each element, names, ids, and what bjobs prints for elements (recorded on OpenLava)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from torchx import specs
from torchx.schedulers.capabilities import UnsupportedFeatureError
from torchx.specs.status import AppState
from torchx_sched_lsf.opts import LsfOpts
from torchx_sched_lsf.parse import parse_json, parse_unformatted
from torchx_sched_lsf.scheduler import LsfScheduler, cancelled_file, describe_array, describe_job
from torchx_sched_lsf.script import (
    MAX_ARRAY_SPEC,
    array_job_name,
    build_array_request,
    file_key,
    log_file,
    parse_job_name,
)

FIXTURES = Path(__file__).parent / "fixtures"
PRINT_ARGV = "import json, os, sys; print(json.dumps([sys.argv[1:], os.environ['T'], os.environ['TORCHX_ID']]))"


def trial(name: str, args: list[str], env: dict[str, str] | None = None, **kw: Any) -> specs.AppDef:
    role = specs.Role(
        "tr",
        image="/img",
        entrypoint=sys.executable,
        args=["-c", PRINT_ARGV, *args],
        env={"T": "x", "TORCHX_ID": specs.macros.app_id, **(env or {})},
        resource=specs.Resource(cpu=1, gpu=0, memMB=64),
        **kw,
    )
    return specs.AppDef(name, [role])


def trials(n: int, words: list[str]) -> list[specs.AppDef]:
    return [trial(f"sw-1a2b-{i}", [words[i % len(words)], str(i)]) for i in range(n)]


def run_element(tmp: Path, script: str, index: int, job_id: str = "42") -> int:
    env = {**os.environ, "LSB_JOBID": job_id, "LSB_JOBINDEX": str(index), "LSB_MCPU_HOSTS": f"{socket.gethostname()} 1"}
    return subprocess.run(["bash", "-c", script], cwd=tmp, env=env, timeout=60).returncode


def test_one_bsub_with_the_index_range_throttle_and_per_element_files(hostile: list[str]) -> None:
    req = build_array_request(trials(4, hostile), LsfOpts(queue="normal"), max_parallel=2)
    assert req.command()[:7] == ["bsub", "-J", "tx.sw-1a2b.tr-1[1-4]%2", "-o", "lsf-%J_%I.out", "-e", "lsf-%J_%I.err"]
    assert req.args[req.args.index("-q") + 1] == "normal" and req.args[req.args.index("-n") + 1] == "1"
    unthrottled = build_array_request(trials(3, hostile), LsfOpts(), max_parallel=None)
    assert unthrottled.args[1] == "tx.sw-1a2b.tr-1[1-3]"


def test_each_element_runs_its_own_trial_byte_identical(tmp_path: Path, hostile: list[str]) -> None:
    apps = [
        trial("h-0", hostile, {"T": " ".join(hostile)}),
        trial("h-1", list(reversed(hostile)), {"T": "$(touch pwned)"}),
        trial("h-2", ["two\nlines", "%J_%I", "${LSB_JOBINDEX}"], {"T": "'\""}),
    ]
    req = build_array_request(apps, LsfOpts(), max_parallel=1)
    for i, app in enumerate(apps, start=1):
        assert run_element(tmp_path, req.script, i) == 0
        out = (tmp_path / log_file(f"42[{i}]", "tr", 0, "out")).read_text(encoding="utf-8")
        argv, t, app_id = json.loads(out)
        assert argv == app.roles[0].args[2:] and t == app.roles[0].env["T"]
        assert app_id == f"42[{i}]"  # the app_id macro is the element's own id
        assert (tmp_path / f"lsf-42_{i}-tr-0.exit").read_text() == "0\n"
    assert not (tmp_path / "pwned").exists() and not os.path.exists("/tmp/torchx-pwned-lsf")


def test_an_index_outside_the_array_fails_loudly(tmp_path: Path, hostile: list[str]) -> None:
    req = build_array_request(trials(2, hostile), LsfOpts(), max_parallel=None)
    assert run_element(tmp_path, req.script, 3) == 2
    assert run_element(tmp_path, req.script, 0) == 2


def test_element_failure_and_retries_are_per_element(tmp_path: Path) -> None:
    apps = [trial(f"r-{i}", [], max_retries=1) for i in range(2)]
    apps[1].roles[0].args = ["-c", "import sys; sys.exit(5)"]
    req = build_array_request(apps, LsfOpts(), max_parallel=None)
    assert run_element(tmp_path, req.script, 1) == 0
    assert run_element(tmp_path, req.script, 2) == 5
    assert (tmp_path / "lsf-42_2.restarts").read_text() == "1\n" and not (tmp_path / "lsf-42_1.restarts").exists()


def test_multi_replica_elements(tmp_path: Path) -> None:
    apps = [trial(f"m-{i}", [str(i), specs.macros.replica_id]) for i in range(2)]
    for app in apps:
        app.roles[0].num_replicas = 2
    req = build_array_request(apps, LsfOpts(), max_parallel=None)
    assert req.args[req.args.index("-n") + 1] == "2" and req.args[1] == "tx.m.tr-2[1-2]"
    env = {**os.environ, "LSB_JOBID": "7", "LSB_JOBINDEX": "2", "LSB_MCPU_HOSTS": f"{socket.gethostname()} 2"}
    assert subprocess.run(["bash", "-c", req.script], cwd=tmp_path, env=env, timeout=60).returncode == 0
    for k in range(2):
        assert json.loads((tmp_path / f"lsf-7_2-tr-{k}.out").read_text())[0] == ["1", str(k)]


@pytest.mark.parametrize(
    "change",
    [
        lambda a: setattr(a.roles[0], "name", "other"),
        lambda a: setattr(a.roles[0], "num_replicas", 2),
        lambda a: setattr(a.roles[0], "max_retries", 3),
        lambda a: a.roles.append(specs.Role("extra", image="/", entrypoint="true", resource=a.roles[0].resource)),
    ],
)
def test_apps_of_another_shape_are_not_an_array(change: Any, hostile: list[str]) -> None:
    apps = trials(3, hostile)
    change(apps[2])
    with pytest.raises(UnsupportedFeatureError, match="differ only in arguments and env"):
        build_array_request(apps, LsfOpts(), max_parallel=None)


def test_bad_requests(hostile: list[str]) -> None:
    with pytest.raises(ValueError, match="at least one app"):
        build_array_request([], LsfOpts(), None)
    with pytest.raises(ValueError, match="max_parallel"):
        build_array_request(trials(2, hostile), LsfOpts(), 0)


@pytest.mark.parametrize("name", ["sw", "my app.v2_final", "a@b:c,d[1]%2", "ünï~%", "x" * 400])
def test_array_names_use_ibm_s_array_characters_and_round_trip(name: str) -> None:
    layout = [("role.x_y", 1)]
    encoded = array_job_name(name, layout, MAX_ARRAY_SPEC - len("[1-10000]%100"))
    assert all((c.isalnum() and c.isascii()) or c in "._-" for c in encoded)
    assert len(encoded) <= MAX_ARRAY_SPEC - len("[1-10000]%100")
    app, roles = parse_job_name(encoded + "[17]") or ("", [])
    assert roles == layout
    assert app == name if len(name) < 100 else name.startswith(app) and len(app) > 100


@pytest.mark.parametrize("name", ["tx.", "tx.app", "tx.app.r", "tx.app.r-x", "tx.app.-1"])
def test_foreign_array_like_names(name: str) -> None:
    assert parse_job_name(name) is None


def test_ids_and_file_keys() -> None:
    sched = LsfScheduler("t")
    assert [sched.array_element_id("553", i) for i in range(3)] == ["553[1]", "553[2]", "553[3]"]
    assert file_key("553[2]") == "553_2" and file_key("553") == "553" and file_key("$LSB_JOBID") == "$LSB_JOBID"
    assert log_file("553[2]", "r", 0, "log") == "lsf-553_2-r-0.log"
    assert cancelled_file("553[2]") == "lsf-553_2.cancelled"


def test_dryrun_through_the_scheduler(tmp_path: Path, hostile: list[str]) -> None:
    sched = LsfScheduler("t")
    assert sched.capabilities.job_arrays
    info = sched.submit_array_dryrun(trials(2, hostile), {"job_dir": str(tmp_path / "jobs")}, max_parallel=1)
    assert info.request.workdir == str(tmp_path / "jobs") and info.request.args[1].endswith("[1-2]%1")
    assert "bsub -J 'tx.sw-1a2b.tr-1[1-2]%1'" in str(info)
    with pytest.raises(Exception, match="hosts"):
        sched.submit_array_dryrun(trials(2, hostile), {"hosts": 0}, max_parallel=1)


def test_openlava_elements_mixed_states() -> None:
    jobs = parse_unformatted((FIXTURES / "openlava_array.uf.txt").read_text())
    by_id = {j.job_id: j for j in jobs}
    assert sorted(by_id) == ["553[1]", "553[2]", "553[3]"]
    assert (by_id["553[1]"].stat, by_id["553[1]"].exit_code, by_id["553[1]"].hosts) == ("EXIT", 3, ["vm"])
    assert (by_id["553[2]"].stat, by_id["553[2]"].hosts) == ("RUN", ["vm"])  # "[2] started on <vm>"
    assert by_id["553[3]"].stat == "PEND"
    assert parse_job_name(by_id["553[2]"].name) == ("arr", [("r", 1)])
    desc = describe_job(by_id["553[1]"])
    assert (desc.app_id, desc.state, desc.metadata["app_name"]) == ("553[1]", AppState.FAILED, "arr")
    array = describe_array("553", jobs)
    assert array.state == AppState.RUNNING
    assert [(r.id, r.state) for r in array.roles_statuses[0].replicas] == [
        (0, AppState.FAILED),
        (1, AppState.RUNNING),
        (2, AppState.PENDING),
    ]


def test_openlava_elements_after_bkill(tmp_path: Path) -> None:
    jobs = parse_unformatted((FIXTURES / "openlava_array_killed.uf.txt").read_text())
    by_id = {j.job_id: j for j in jobs}
    assert by_id["553[3]"].hosts == []  # killed while waiting its turn: CANCELLED without a marker
    for job in jobs:  # what torchx's cancel leaves: a marker for each element it stopped
        job.cwd = str(tmp_path)
    (tmp_path / cancelled_file("553[2]")).touch()
    states = {j.job_id: describe_job(j).state for j in jobs}
    assert states == {"553[1]": AppState.FAILED, "553[2]": AppState.CANCELLED, "553[3]": AppState.CANCELLED}
    assert describe_array("553", jobs).state == AppState.CANCELLED  # core's aggregate: a cancel outranks a failure


def test_ibm_json_element_ids_from_the_job_name() -> None:
    # IBM LSF prints the bare job id in JOBID unless LSB_BJOBS_DISPLAY_ENH=Y; the element's name
    # carries the index (shape per IBM's documentation, not recorded from a cluster)
    doc = {
        "COMMAND": "bjobs",
        "JOBS": 3,
        "RECORDS": [
            {"JOBID": "900", "STAT": "DONE", "JOB_NAME": "tx.sw.tr-1[1]", "EXIT_CODE": "", "EXEC_HOST": "h1"},
            {"JOBID": "900[2]", "STAT": "RUN", "JOB_NAME": "tx.sw.tr-1[2]", "EXEC_HOST": "h2"},
            {"JOBID": "901", "STAT": "PEND", "JOB_NAME": "plain@r:1"},
        ],
    }
    jobs, errors = parse_json(json.dumps(doc))
    assert [j.job_id for j in jobs] == ["900[1]", "900[2]", "901"] and not errors
