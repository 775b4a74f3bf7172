"""local_cwd under injected faults: damaged job files, a real full filesystem (tmpfs), hostile
umasks, symlinked log files, replica counts the machine cannot start."""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import re
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from torchx import specs
from torchx.specs import AppState
from torchx.testing import command_app, eventually, run_cli, run_python
from torchx_sched_local import journal, store
from torchx_sched_local.limits import MAX_REPLICAS
from torchx_sched_local.local_scheduler import LocalScheduler

# ---------------------------------------------------------------- damaged job files

DAMAGE = {
    "truncated": lambda text: text.rstrip()[: len(text.rstrip()) // 2],  # state.json has blank padding after its JSON
    "empty": lambda text: "",
    "garbage": lambda text: "\x00\x01\x02 not json at all \xff",
    "not-utf8": lambda text: None,  # raw bytes, below
    "a-list": lambda text: "[1, 2, 3]",
    "no-state": lambda text: json.dumps({k: v for k, v in json.loads(text).items() if k != "state"}),
    "bad-state": lambda text: json.dumps({**json.loads(text), "state": "EXPLODED"}),
    "name-int": lambda text: json.dumps({**json.loads(text), "name": 7}),
    "replicas-str": lambda text: json.dumps({**json.loads(text), "replicas": "nope"}),
}


def _damage(path: Path, how: str) -> None:
    if how == "not-utf8":
        path.write_bytes(b'{"state": "\xff\xfe"}')
        return
    path.write_text(DAMAGE[how](path.read_text()))


def _finished_jobs(sched: LocalScheduler, n: int) -> list[str]:
    ids = [sched.submit(command_app("true", name=f"ok{i}"), {}) for i in range(n)]
    for app_id in ids:
        assert sched.wait(app_id, timeout=30).state == AppState.SUCCEEDED  # type: ignore[union-attr]
        # finished means its supervisor has let go too (it holds the lock until its last write),
        # so damaging the job's files below cannot race a supervisor still ending
        eventually(lambda app_id=app_id: not store.lock_is_held(sched.store.job_dir(app_id)))
    return ids


@pytest.mark.parametrize("how", sorted(DAMAGE))
def test_a_damaged_state_file_breaks_only_its_own_job(
    sched: LocalScheduler, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    good_a, bad, good_b = _finished_jobs(sched, 3)
    state_file = Path(sched.store.job_dir(bad)) / store.STATE_FILE
    _damage(state_file, how)

    with caplog.at_level(logging.WARNING, logger="torchx_sched_local"):
        listed = {r.app_id for r in sched.list()}
    assert listed == {good_a, good_b}
    assert str(state_file) in caplog.text
    assert f"local_cwd://test/{bad}" in caplog.text

    with pytest.raises(store.UnreadableJobError) as info:
        sched.describe(bad)
    assert str(state_file) in str(info.value)
    assert "torchx delete local_cwd://test/" in str(info.value)

    sched.delete(bad)
    assert not os.path.exists(sched.store.job_dir(bad))
    assert {r.app_id for r in sched.list()} == {good_a, good_b}


@pytest.mark.parametrize("how", ["truncated", "empty", "a-list", "roles-wrong"])
def test_a_damaged_app_file_breaks_only_its_own_job(sched: LocalScheduler, how: str) -> None:
    good, bad = _finished_jobs(sched, 2)
    app_file = Path(sched.store.job_dir(bad)) / store.APP_FILE
    if how == "roles-wrong":
        data = json.loads(app_file.read_text())
        data["roles"] = [{"name": "r"}]  # a role without its fields
        app_file.write_text(json.dumps(data))
    else:
        _damage(app_file, how)
    assert {r.app_id for r in sched.list()} == {good, bad}  # list reads only state.json
    with pytest.raises(store.UnreadableJobError, match=str(app_file)):
        sched.describe(bad)
    if how != "roles-wrong":  # logs need only the replicas' entries
        with pytest.raises(store.UnreadableJobError, match=str(app_file)):
            list(sched.log_iter(bad, "r", 0))
    sched.delete(bad)
    assert not os.path.exists(sched.store.job_dir(bad))


def test_a_job_dir_without_its_state_file_is_reported(sched: LocalScheduler, caplog: pytest.LogCaptureFixture) -> None:
    good, bad = _finished_jobs(sched, 2)
    os.unlink(os.path.join(sched.store.job_dir(bad), store.STATE_FILE))
    with caplog.at_level(logging.WARNING, logger="torchx_sched_local"):
        assert [r.app_id for r in sched.list()] == [good]
    assert "the file is missing" in caplog.text
    sched.delete(bad)
    assert not os.path.exists(sched.store.job_dir(bad))


def test_deleting_a_running_job_with_a_damaged_state_says_why_it_cannot(sched: LocalScheduler) -> None:
    app_id = sched.submit(command_app("sleep", "300"), {})
    state_file = Path(sched.store.job_dir(app_id)) / store.STATE_FILE
    # the stored state, not describe (which reads RUNNING as soon as a supervisor holds the job):
    # the supervisor's own RUNNING write must not land on the damaged file
    eventually(lambda: (sched.store.state(app_id) or {}).get("state") == "RUNNING", timeout=30)
    good = state_file.read_text()
    state_file.write_text(good[:10])
    with pytest.raises(store.UnreadableJobError, match=str(state_file)):
        sched.delete(app_id)  # its supervisor runs, but which processes it owns cannot be read
    assert os.path.isdir(sched.store.job_dir(app_id))
    state_file.write_text(good)
    sched.delete(app_id)
    assert not os.path.exists(sched.store.job_dir(app_id))


def test_cli_on_a_damaged_job(sched: LocalScheduler) -> None:
    good, bad = _finished_jobs(sched, 2)
    state_file = Path(sched.store.job_dir(bad)) / store.STATE_FILE
    _damage(state_file, "truncated")
    handle = f"local_cwd://torchx/{bad}"

    listed = run_cli("list", "-s", "local_cwd")
    assert listed.returncode == 0, listed.stderr
    assert f"local_cwd://torchx/{good}" in listed.stdout
    assert bad not in listed.stdout
    assert str(state_file) in listed.stderr
    assert "Traceback" not in listed.stderr
    assert len(listed.stderr.strip().splitlines()) == 1

    for verb in ("status", "describe", "wait", "cancel"):
        proc = run_cli(verb, handle)
        assert proc.returncode == 1, (verb, proc)
        (line,) = proc.stderr.strip().splitlines()
        assert line.startswith("torchx: error: unreadable local job file"), line
        assert str(state_file) in line, line
        assert f"`torchx delete {handle}` removes the job" in line

    deleted = run_cli("delete", handle)
    assert deleted.returncode == 0, deleted.stderr
    assert not os.path.exists(sched.store.job_dir(bad))
    assert run_cli("status", f"local_cwd://torchx/{good}").returncode == 0


def test_job_files_are_written_whole_and_durably(
    sched: LocalScheduler, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (app_id,) = _finished_jobs(sched, 1)
    job_dir = sched.store.job_dir(app_id)
    assert sorted(os.listdir(job_dir)) == ["app.json", "lock", "logs", "state.json"]  # no temporary files
    # the real calls, in order: the file is fsync'ed before its rename, the directory after
    calls: list[tuple[str, str]] = []
    fsync, replace = os.fsync, os.replace

    def traced_fsync(fd: int) -> None:
        calls.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        fsync(fd)

    def traced_replace(src: str, dst: str) -> None:
        calls.append(("rename", dst))
        replace(src, dst)

    monkeypatch.setattr(os, "fsync", traced_fsync)
    monkeypatch.setattr(os, "replace", traced_replace)
    (tmp_path / "w").mkdir()
    target = tmp_path / "w" / "x.json"
    store.write_json(str(target), {"a": 1})
    assert [c[0] for c in calls] == ["fsync", "rename", "fsync"]
    assert calls[0][1].startswith(str(tmp_path / "w" / ".x.json."))
    assert calls[1][1] == str(target)
    assert calls[2][1] == str(tmp_path / "w")
    assert json.loads(target.read_text()) == {"a": 1}
    assert os.listdir(tmp_path / "w") == ["x.json"]


def test_list_sweeps_what_killed_launchers_and_deleters_left(sched: LocalScheduler) -> None:
    (app_id,) = _finished_jobs(sched, 1)
    root = Path(sched.store.root)
    old = time.time() - store.STALE_STAGING - 5
    abandoned, fresh, locked, trash = (
        root / ".new-a-1",
        root / ".new-b-2",
        root / ".new-c-3",
        root / ".deleted-d-4",
    )
    for d in (abandoned, fresh, locked, trash):
        (d / "logs").mkdir(parents=True)
        (d / "app.json").write_text("{}")
    for d in (abandoned, locked):
        os.utime(d, (old, old))
    fd = os.open(locked / store.LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)  # a submission still assembling it (held by this process)
    try:
        assert [r.app_id for r in sched.list()] == [app_id]
        assert sorted(os.listdir(root)) == sorted([app_id, fresh.name, locked.name, journal.JOURNAL_DIR])
    finally:
        os.close(fd)


# ---------------------------------------------------------------- a real full filesystem


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 4 MiB tmpfs (root only; unmounted afterwards)."""
    if os.geteuid() != 0:
        pytest.fail("mounting a tmpfs needs root (CI runs these tests as root)")
    mount = tmp_path / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(disk: Path) -> Path:
    """Fills ``disk`` to the last byte; returns the filler file."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        chunk = 1 << 16
        while chunk:
            try:
                os.write(fd, b"\0" * chunk)
            except OSError as e:
                assert e.errno == errno.ENOSPC
                chunk //= 2
    finally:
        os.close(fd)
    return filler


def test_full_disk_submit_is_one_clear_line_and_leaves_nothing(
    small_disk: Path, monkeypatch: pytest.MonkeyPatch, isolated: Path
) -> None:
    state = small_disk / "state"
    monkeypatch.setenv(store.STATE_DIR_ENV, str(state))
    sched = LocalScheduler("torchx", state_dir=str(state))
    (done,) = _finished_jobs(sched, 1)
    running = sched.submit(command_app("sleep", "300"), {})
    eventually(lambda: sched.describe(running).state == AppState.RUNNING)  # type: ignore[union-attr]
    _fill(small_disk)
    before = sorted(os.listdir(state))

    with pytest.raises(OSError) as info:
        sched.submit(command_app("true"), {})
    assert info.value.errno == errno.ENOSPC
    assert re.fullmatch(
        rf"cannot record local_cwd app (t-\w+): No space left on device: {state}/\1/app\.json", str(info.value)
    ), info.value

    (isolated / "comp.py").write_text(
        "import torchx.specs as specs\n\n\ndef one() -> specs.AppDef:\n"
        '    """One echo."""\n    return specs.AppDef("one", [specs.Role("r", image=".", entrypoint="echo")])\n'
    )
    proc = run_cli("run", "-s", "local_cwd", "comp.py:one")
    assert proc.returncode == 1
    assert proc.stdout == ""
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("torchx: error: cannot record local_cwd app one-")
    assert "No space left on device" in line
    assert str(state) in line
    assert sorted(os.listdir(state)) == before  # no job dir, no hidden staging dir, no temporary file

    listed = run_cli("list", "-s", "local_cwd")
    assert listed.returncode == 0, listed
    assert done in listed.stdout, listed
    assert running in listed.stdout, listed
    for app_id in (done, running):  # delete works on a full disk, running or not
        deleted = run_cli("delete", f"local_cwd://torchx/{app_id}")
        assert deleted.returncode == 0, deleted.stderr
    assert sorted(os.listdir(state)) == [journal.JOURNAL_DIR]  # jobs are gone; the journal stays


def test_read_only_state_dir_is_one_clear_line(small_disk: Path, isolated: Path) -> None:
    state = small_disk / "state"
    state.mkdir(mode=0o700)
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    sched = LocalScheduler("torchx", state_dir=str(state))
    with pytest.raises(OSError) as info:
        sched.submit(command_app("true"), {})
    assert info.value.errno == errno.EROFS
    assert re.fullmatch(rf"cannot record local_cwd app t-\w+: Read-only file system: {state}", str(info.value))
    assert os.listdir(state) == []
    assert sched.list() == []


# ---------------------------------------------------------------- permissions


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o077, 0o277, 0o777], ids=oct)
def test_job_files_are_private_whatever_the_umask(tmp_path: Path, umask: int) -> None:
    state, logs = tmp_path / "state", tmp_path / "logs"
    code = textwrap.dedent(
        f"""
        import os, sys
        os.umask({umask})
        from torchx import specs
        from torchx_sched_local.local_scheduler import LocalScheduler
        s = LocalScheduler("t", state_dir={str(state)!r})
        role = specs.Role("r", image=".", entrypoint="sh", args=["-c", "echo out; echo err >&2"], env={{"TOKEN": "s3cret"}})
        ids = [s.submit(specs.AppDef("perm", [role]), cfg) for cfg in ({{}}, {{"log_dir": {str(logs)!r}}})]
        for i in ids:
            assert s.wait(i, timeout=30).state.name == "SUCCEEDED", i
        print(" ".join(ids))
        """
    )
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    inside, outside = proc.stdout.split()

    def mode(path: Path) -> int:
        return stat.S_IMODE(os.lstat(path).st_mode)

    assert mode(state) == 0o700
    for app_id, log_root in ((inside, state / inside / "logs"), (outside, logs / "t" / outside)):
        job = state / app_id
        assert mode(job) == 0o700
        assert mode(job / "app.json") == 0o600
        assert "s3cret" in (job / "app.json").read_text()
        assert mode(job / "state.json") == 0o600
        for d in (log_root, log_root / "r", log_root / "r" / "0"):
            assert mode(d) == 0o700, d
        assert (log_root / "r" / "0" / "stdout.log").read_text() == "out\n"
    # what a finished job leaves for `list`: written just after its final state, which wait() read
    eventually(lambda: bool(list(state.rglob(".done"))), timeout=10, what="the .done markers")
    markers = list(state.rglob(".done"))
    assert all(mode(m) == 0o600 for m in markers), markers


def test_logs_never_follow_a_symlink(sched: LocalScheduler, tmp_path: Path) -> None:
    target = tmp_path / "victim"
    target.write_text("precious\n")
    # the replica plants a symlink where its stdout log will be created, then prints
    code = f"import os; os.symlink({str(target)!r}, os.path.join(os.path.dirname(os.environ['TORCHELASTIC_ERROR_FILE']), 'stdout.log')); print('x')"
    app_id = sched.submit(command_app(sys.executable, "-c", code), {})
    desc = sched.wait(app_id, timeout=30)
    assert desc is not None
    assert desc.state in (AppState.SUCCEEDED, AppState.FAILED)
    assert target.read_text() == "precious\n"


# ---------------------------------------------------------------- replica counts


@pytest.mark.parametrize("count", [10**9, MAX_REPLICAS + 1])
def test_huge_replica_counts_are_refused_at_once(sched: LocalScheduler, count: int) -> None:
    t = time.perf_counter()
    with pytest.raises(ValueError, match=rf"asks for {count} replicas; local_cwd starts at most \d+ on this machine"):
        sched.submit_dryrun(command_app("true", replicas=count), {})
    assert time.perf_counter() - t < 5.0  # refused before any replica is made (bound: a loaded machine)
    assert sched.list() == []


@pytest.mark.parametrize("bad", [1e9, -1, True])
def test_replica_counts_must_be_whole_numbers(sched: LocalScheduler, bad: object) -> None:
    role = specs.Role("r", image=".", entrypoint="true")
    role.num_replicas = bad  # type: ignore[assignment]
    with pytest.raises(ValueError, match="num_replicas must be a positive int"):  # the submit pipeline's check
        sched.submit_dryrun(specs.AppDef("a", [role]), {})


def test_replica_count_is_bounded_by_the_process_limit(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import resource
        from torchx import specs
        from torchx_sched_local.local_scheduler import LocalScheduler
        resource.setrlimit(resource.RLIMIT_NPROC, (50, resource.getrlimit(resource.RLIMIT_NPROC)[1]))
        role = specs.Role("r", image=".", entrypoint="true", num_replicas=30)
        s = LocalScheduler("t")
        s.submit_dryrun(specs.AppDef("fits", [role, role.__class__("q", image=".", entrypoint="true", num_replicas=20)]), {})
        try:
            s.submit_dryrun(specs.AppDef("big", [role, role.__class__("q", image=".", entrypoint="true", num_replicas=21)]), {})
        except ValueError as e:
            print(e)
        """
    )
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert "asks for 51 replicas; local_cwd starts at most 50" in proc.stdout
    assert "`ulimit -u` 50" in proc.stdout


def test_local_docker_dry_run_refuses_huge_counts_too() -> None:
    from torchx_sched_local.docker_scheduler import DockerScheduler  # the dry run needs no engine

    t = time.perf_counter()
    with pytest.raises(ValueError, match="asks for 1000000000 replicas; local_docker starts at most"):
        DockerScheduler("t").submit_dryrun(command_app("true", image="busybox", replicas=10**9), {})
    assert time.perf_counter() - t < 5.0  # refused before any replica is made (bound: a loaded machine)


def test_cli_dryrun_of_a_huge_replica_count_fails_fast(isolated: Path) -> None:
    (isolated / "comp.py").write_text(
        "import torchx.specs as specs\n\n\ndef many(n: int = 1) -> specs.AppDef:\n"
        '    """n echoes."""\n'
        '    return specs.AppDef("many", [specs.Role("r", image=".", entrypoint="echo", num_replicas=n)])\n'
    )
    t = time.perf_counter()
    proc = run_cli("run", "--dryrun", "-s", "local_cwd", "comp.py:many", "--n", "1000000000")
    assert time.perf_counter() - t < 10
    assert proc.returncode == 1
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("torchx: error: app 'many' asks for 1000000000 replicas; local_cwd starts at most")
