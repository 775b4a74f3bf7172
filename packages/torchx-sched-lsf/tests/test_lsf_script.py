"""The bsub request: options, job name, and the script, checked by running it in bash with the
variables LSF sets (LSB_JOBID, LSB_MCPU_HOSTS) on this host."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any

import pytest
from torchx import specs
from torchx.specs.runopts import InvalidRunConfigException
from torchx.testing import hostile_value, macro_probe, macro_probe_output
from torchx_sched_lsf.opts import LsfOpts
from torchx_sched_lsf.scheduler import LsfScheduler
from torchx_sched_lsf.script import build_request, job_name, log_file, parse_job_name


def role(name: str = "r", args: list[str] | None = None, replicas: int = 1, **kw: Any) -> specs.Role:
    return specs.Role(
        name,
        image="/img",
        entrypoint=sys.executable,
        args=args or [],
        num_replicas=replicas,
        resource=specs.Resource(cpu=1, gpu=0, memMB=64),
        **kw,
    )


def run_script(tmp: str, app: specs.AppDef, hosts: str | None = None, job_id: str = "42", **opts: Any) -> int:
    """Runs the job script as LSF would on this host; returns its exit code."""
    req = build_request(app, LsfOpts(**opts))
    here = socket.gethostname()
    env = {**os.environ, "LSB_JOBID": job_id, "LSB_MCPU_HOSTS": hosts or f"{here} 8"}
    return subprocess.run(["bash", "-c", req.script], cwd=tmp, env=env, timeout=60).returncode


def read(tmp: str, role_name: str, k: int, ext: str, job_id: str = "42") -> str:
    with open(os.path.join(tmp, log_file(job_id, role_name, k, ext)), encoding="utf-8") as f:
        return f.read()


def test_hostile_argv_and_env_arrive_byte_identical(tmp_path: Any, hostile: list[str]) -> None:
    code = "import json, os, sys; print(json.dumps([sys.argv[1:], os.environ['H'], os.environ['T']]))"
    env = {"H": " ".join(hostile) + " ${app_id}/${replica_id}", "T": "x"}
    app = specs.AppDef("argv", [role("p", ["-c", code, *hostile], replicas=2, env=env)])
    assert run_script(str(tmp_path), app) == 0
    for k in range(2):
        argv, h, _ = json.loads(read(str(tmp_path), "p", k, "out"))
        assert argv == hostile and h == " ".join(hostile) + f" 42/{k}"
    assert not os.path.exists("/tmp/torchx-pwned-lsf")


def test_streams_go_to_out_err_and_both_to_log(tmp_path: Any) -> None:
    code = "import sys, time; print('o1', flush=True); time.sleep(0.1); print('e1', file=sys.stderr, flush=True); time.sleep(0.1); print('o2')"
    assert run_script(str(tmp_path), specs.AppDef("s", [role("s", ["-c", code])])) == 0
    assert read(str(tmp_path), "s", 0, "out") == "o1\no2\n"
    assert read(str(tmp_path), "s", 0, "err") == "e1\n"
    assert read(str(tmp_path), "s", 0, "log") == "o1\ne1\no2\n"


def test_rank0_host_app_id_and_replica_id_macros(tmp_path: Any) -> None:
    code = "import os, sys; print(os.environ['TORCHX_RANK0_HOST'], *sys.argv[1:])"
    app = specs.AppDef("m", [role("a", ["-c", code, specs.macros.app_id, specs.macros.replica_id], replicas=2)])
    here = socket.gethostname()
    assert run_script(str(tmp_path), app, hosts=f"{here} 2", job_id="77") == 0
    assert [read(str(tmp_path), "a", k, "out", "77") for k in range(2)] == [f"{here} 77 {k}\n" for k in range(2)]


def test_first_failure_stops_the_others_and_is_the_exit_code(tmp_path: Any) -> None:
    app = specs.AppDef(
        "f",
        [role("ok", ["-c", "import time; time.sleep(60)"]), role("bad", ["-c", "import sys; sys.exit(3)"])],
    )
    assert run_script(str(tmp_path), app) == 3
    assert (tmp_path / "lsf-42-bad-0.exit").read_text() == "3\n"
    assert not (tmp_path / "lsf-42-ok-0.exit").exists()  # stopped by the script: no exit code of its own


def test_retries_start_the_replicas_again_and_count(tmp_path: Any) -> None:
    marker = os.path.join(str(tmp_path), "tried")
    code = f"import os, sys; print('try'); os.path.exists({marker!r}) or (open({marker!r}, 'w'), sys.exit(5))"
    app = specs.AppDef("r", [role("w", ["-c", code], max_retries=2)])
    assert run_script(str(tmp_path), app) == 0
    assert read(str(tmp_path), "w", 0, "out") == "try\ntry\n"
    assert (tmp_path / "lsf-42.restarts").read_text() == "1\n"


def test_bsub_options_are_argv_and_validated() -> None:
    app = specs.AppDef("my app", [role("t", replicas=3), role("ps")])
    opts = LsfOpts(
        queue="short", project="p1", user_group="g", resource="select[mem>100]", hosts=2, time="1:30", slots=8
    )
    req = build_request(app, opts)
    assert req.command() == [
        "bsub", "-J", "my~20app@t:3,ps:1", "-o", "lsf-%J.out", "-e", "lsf-%J.err", "-n", "8",
        "-q", "short", "-P", "p1", "-G", "g", "-W", "1:30", "-R", "select[mem>100] span[ptile=4]",
    ]  # fmt: skip
    assert '"${hosts[6]}"' in req.script  # 8 slots for 4 replicas: 2 each
    assert str(req).startswith("# bsub -J 'my~20app@t:3,ps:1' ")
    assert "span[hosts=1]" in build_request(app, LsfOpts(hosts=1)).command()[-1]


@pytest.mark.parametrize(
    ("opts", "key"),
    [
        ({"time": "10m"}, "time"),
        ({"queue": "a b"}, "queue"),
        ({"project": "x'y"}, "project"),
        ({"slots": 1}, "slots"),
        ({"hosts": 0}, "hosts"),
        ({"hosts": 2, "resource": "span[hosts=1]"}, "hosts"),
        ({"resource": "two\nlines"}, "resource"),
    ],
)
def test_bad_options(opts: dict[str, Any], key: str) -> None:
    with pytest.raises(InvalidRunConfigException, match=key):
        LsfOpts(**opts).validate(replicas=2)


def test_gpu_needs_bsub_gpu() -> None:
    app = specs.AppDef(
        "g", [specs.Role("g", image="/", entrypoint="x", resource=specs.Resource(cpu=1, gpu=2, memMB=1))]
    )
    assert build_request(app, LsfOpts(), gpu_flag=True).command()[-2:] == ["-gpu", "num=2"]
    with pytest.raises(ValueError, match="no `bsub -gpu`"):
        build_request(app, LsfOpts(), gpu_flag=False)


@pytest.mark.parametrize("name", ["echo", "my app", "a@b:c,d", "ünï~%", "~41"])
def test_job_name_round_trip(name: str) -> None:
    layout = [(name, 2), ("r:1", 1)]
    encoded = job_name(name, layout)
    assert all(c.isalnum() or c in "_.-~@:," for c in encoded) and "%" not in encoded
    assert parse_job_name(encoded) == (name, layout)


@pytest.mark.parametrize("name", ["my job", "sleep 1", "x@", "x@r", "x@r:a"])
def test_foreign_job_names(name: str) -> None:
    assert parse_job_name(name) is None


def test_dryrun_through_the_scheduler(tmp_path: Any) -> None:
    app = specs.AppDef("e", [role("e", ["hi"])])
    info = LsfScheduler("s").submit_dryrun(app, {"job_dir": str(tmp_path), "queue": "normal"})
    assert info.request.workdir == str(tmp_path)
    assert "-q normal" in str(info) and "start_replica" in str(info)


def test_control_characters_in_role_names_are_refused() -> None:
    app = specs.AppDef("e", [role("a\nb")])
    with pytest.raises(ValueError, match="control characters"):
        LsfScheduler("s").submit_dryrun(app, {})


def test_fast_replicas_are_each_waited_for_once(tmp_path: Any) -> None:
    """Replicas that end at once (with their copying tee processes) must not confuse the wait loop."""
    app = specs.AppDef("fast", [role("f", ["-c", "print('x')"], replicas=8)])
    for attempt in range(5):
        d = tmp_path / str(attempt)
        d.mkdir()
        assert run_script(str(d), app) == 0
        assert [read(str(d), "f", k, "log") for k in range(8)] == ["x\n"] * 8


@pytest.mark.parametrize("launcher", ["blaunch", "lsrun"])
def test_replicas_on_other_hosts_go_through_the_launcher(tmp_path: Any, launcher: str, hostile: list[str]) -> None:
    """blaunch -z HOST (real LSF) or lsrun -m HOST (OpenLava) gets the replica's exact argv;
    stand-ins record their arguments and run the command here."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    flag = "-z" if launcher == "blaunch" else "-m"
    stub = bindir / launcher
    stub.write_text(f'#!/bin/bash\n[ "$1" = {flag} ] || exit 99\necho "$2" >> {bindir}/hosts\nshift 2\nexec "$@"\n')
    stub.chmod(0o755)
    path = f"{bindir}:/usr/bin:/bin"  # no LSF client here but the stand-in
    code = "import json, sys; print(json.dumps(sys.argv[1:]))"
    app = specs.AppDef("remote", [role("p", ["-c", code, *hostile], replicas=3)])
    req = build_request(app, LsfOpts())
    here = socket.gethostname()
    env = {"PATH": path, "LSB_JOBID": "5", "LSB_MCPU_HOSTS": f"{here} 1 nodeB 1 nodeC 1"}
    work = tmp_path / "job"
    work.mkdir()
    assert subprocess.run(["bash", "-c", req.script], cwd=work, env=env, timeout=60).returncode == 0
    assert sorted((bindir / "hosts").read_text().split()) == ["nodeB", "nodeC"]  # replica 0 ran here
    for k in range(3):
        assert json.loads(read(str(work), "p", k, "out", "5")) == hostile


def _alive(pid: int) -> bool:
    """``pid`` runs (a zombie waiting for its reaper does not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_sigint_like_bkill_stops_the_replicas_and_their_children_and_no_retry_starts(tmp_path: Any) -> None:
    """bkill sends SIGINT first (which the replicas, each in a process group of its own, do not
    get): the script passes SIGTERM on to each replica's group, children included, and does not
    start the next attempt. Nothing here depends on the machine being idle: the script is
    signalled once every replica has started, and the stop is one kill per group."""
    code = (
        "import os, subprocess, time;"
        " child = subprocess.Popen(['sleep', '120']);"
        " open(os.environ['MARK'], 'a').write(f'started {child.pid}\\n'); time.sleep(120)"
    )
    mark = tmp_path / "started"
    app = specs.AppDef("k", [role("w", ["-c", code], replicas=2, env={"MARK": str(mark)}, max_retries=3)])
    req = build_request(app, LsfOpts())
    env = {**os.environ, "LSB_JOBID": "9", "LSB_MCPU_HOSTS": f"{socket.gethostname()} 2"}
    proc = subprocess.Popen(["bash", "-c", req.script], cwd=tmp_path, env=env)
    try:
        deadline = time.monotonic() + 120
        while not (mark.exists() and mark.read_text().count("started") == 2):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        children = [int(line.split()[1]) for line in mark.read_text().splitlines()]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=100) != 0  # the replicas sleep 120 s: they were stopped
    finally:
        if proc.poll() is None:
            proc.kill()
    assert [line.split()[0] for line in mark.read_text().splitlines()] == ["started"] * 2  # not started again
    assert not (tmp_path / "lsf-9.restarts").exists()
    deadline = time.monotonic() + 30
    while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in children)


def test_macro_values_are_data_in_the_job_script(tmp_path: Any) -> None:
    marker = os.path.join(str(tmp_path), "pwned")
    image = hostile_value(marker)  # the img_root macro
    # stands for $LSB_JOBID (numeric in real life; no "/": it names the log files); the script runs in tmp_path
    job_id = '42\'$(touch pwned)"`touch pwned`" $$ a  b'
    probe = macro_probe(image, marker, num_replicas=2, resource=specs.Resource(cpu=1, gpu=0, memMB=64))
    assert run_script(str(tmp_path), specs.AppDef("macros", [probe]), job_id=job_id) == 0
    for k in range(2):
        assert read(str(tmp_path), "probe", k, "out", job_id=job_id) == macro_probe_output(image, job_id, k)
    assert not os.path.exists(marker)
