"""local_cwd's durability with as few fsyncs as it needs (see store.py, "Durability"): the record
before ``schedule`` returns, the final state; not the states in between."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from torchx.specs import AppState
from torchx.testing import command_app
from torchx_sched_local import journal, store
from torchx_sched_local.local_scheduler import LocalScheduler

SUBMIT_AND_WAIT = """
import sys
from torchx.specs import AppDef, Resource, Role
from torchx_sched_local.local_scheduler import LocalScheduler

sched = LocalScheduler("t", state_dir=sys.argv[1])
app = AppDef("many", roles=[Role("r", "i", entrypoint="/bin/true", num_replicas=8, resource=Resource(1, 0, 64))])
app_id = sched.submit(app, {})
sys.stdout.write("SCHEDULED\\n")
sys.stdout.flush()
print(sched.wait(app_id, timeout=60).state.name)
"""


def _need_strace() -> None:
    if shutil.which("strace") is None:
        if os.environ.get("CI") == "true":  # scripts/test-all.sh installs it
            pytest.fail("strace is not installed (apt-get install strace)")
        pytest.skip("needs strace (apt-get install strace)")


def test_a_job_costs_one_fsync_to_record_and_one_to_end(tmp_path: Path) -> None:
    """Counted for real with strace across the launcher and the job's supervisor: the record
    (one journal line) before schedule returns, the final state (one journal line) once; the
    states in between (8 replicas starting and ending) none."""
    _need_strace()
    script = tmp_path / "submit.py"
    script.write_text(textwrap.dedent(SUBMIT_AND_WAIT))
    trace = tmp_path / "trace"
    strace = ["strace", "-f", "-qq", "-e", "trace=fsync,fdatasync,write", "-o", str(trace)]
    proc = subprocess.run(
        [*strace, sys.executable, str(script), str(tmp_path / "state")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["SCHEDULED", "SUCCEEDED"]
    calls = trace.read_text().splitlines()
    scheduled = next(i for i, line in enumerate(calls) if "SCHEDULED" in line)
    fsyncs = [i for i, line in enumerate(calls) if re.search(r"\b(fsync|fdatasync)\(", line)]
    assert len([i for i in fsyncs if i < scheduled]) == 1, calls
    assert "fdatasync(" in calls[fsyncs[0]]  # the journal's
    after = [calls[i] for i in fsyncs if i > scheduled]
    assert len(after) == 1 and "fdatasync(" in after[0], calls


def test_a_state_a_crash_left_empty_reads_failed_and_other_damage_is_reported(
    sched: LocalScheduler, monkeypatch: pytest.MonkeyPatch
) -> None:
    app_id = sched.submit(command_app("true"), {})
    assert sched.wait(app_id, timeout=30).state == AppState.SUCCEEDED  # type: ignore[union-attr]
    state_file = Path(sched.store.job_dir(app_id)) / store.STATE_FILE
    state_file.write_text("")  # what a crash leaves of a state that was never forced to disk
    with pytest.raises(store.UnreadableJobError, match=str(state_file)):
        sched.describe(app_id)  # recorded in this boot: the file was damaged, not lost in a crash
    monkeypatch.setattr(store, "boot_time", lambda: time.time() + 1)  # as after a reboot
    desc = sched.describe(app_id)
    assert desc is not None
    assert desc.state == AppState.FAILED
    assert "the machine stopped" in desc.msg
    end = sched.end_cause(app_id)
    assert end is not None and end.cause.value == "NODE_FAILURE"  # the machine went away
    assert [a.app_id for a in sched.list()] == [app_id]


def test_boot_time_is_in_the_past() -> None:
    assert 0 < store.boot_time() < time.time()
    assert os.path.exists("/proc/stat")


# ---------------------------------------------------------------------- the journal after a crash
EARLIER_BOOT = "00000000-0000-4000-8000-000000000000"


def _reboot(sched: LocalScheduler, ended: bool = True) -> LocalScheduler:
    """The state directory as the next boot finds it: this boot's journal is an earlier boot's,
    read by a fresh scheduler (a new process). ``ended=False``: the crash came before the jobs
    ended (the journal has no final state of theirs)."""
    sched.close()
    directory = Path(sched.store.root) / journal.JOURNAL_DIR
    current = directory / journal.journal_name(journal.boot_id() or "")
    if not ended:
        kept = [line for line in current.read_bytes().split(b"\n") if b'"state":' not in line]
        current.write_bytes(b"\n".join(kept))
    current.rename(directory / journal.journal_name(EARLIER_BOOT))
    return LocalScheduler("t", state_dir=sched.store.root)


def _ended(sched: LocalScheduler, *argv: str) -> str:
    app_id = sched.submit(command_app(*argv), {})
    assert sched.wait(app_id, timeout=30) is not None
    return app_id


def test_a_job_whose_directory_the_crash_lost_comes_back_failed(sched: LocalScheduler) -> None:
    app_id = _ended(sched, "true")
    roles = sched.describe(app_id).roles  # type: ignore[union-attr]
    shutil.rmtree(sched.store.job_dir(app_id))  # the rename never reached the disk
    after = _reboot(sched, ended=False)
    assert [a.app_id for a in after.list()] == [app_id]
    desc = after.describe(app_id)
    assert desc is not None and desc.state == AppState.FAILED
    assert desc.msg == store.MACHINE_STOPPED
    assert desc.roles == roles  # the request is whole: it came from the journal
    assert os.listdir(Path(after.store.root) / journal.JOURNAL_DIR) == []  # replayed once, then removed


def test_a_job_left_in_its_staging_directory_is_put_back_as_it_was(sched: LocalScheduler) -> None:
    app_id = _ended(sched, "true")
    job_dir = sched.store.job_dir(app_id)
    os.rename(job_dir, os.path.join(sched.store.root, f"{store.STAGING_PREFIX}{app_id}-4242"))
    after = _reboot(sched)
    desc = after.describe(app_id)
    assert desc is not None and desc.state == AppState.SUCCEEDED  # its final state was on disk
    assert sorted(os.listdir(after.store.root)) == [journal.JOURNAL_DIR, app_id]


def test_torn_files_are_restored_and_an_unfinished_state_reads_failed(sched: LocalScheduler) -> None:
    app_id = _ended(sched, "true")
    job = Path(sched.store.job_dir(app_id))
    app_file, state_file = job / store.APP_FILE, job / store.STATE_FILE
    whole = app_file.read_bytes()
    app_file.write_bytes(whole[: len(whole) // 2])
    state_file.write_text(json.dumps({"app_id": app_id, "name": "x", "state": "RUNNING"}))
    after = _reboot(sched, ended=False)
    desc = after.describe(app_id)
    assert desc is not None and desc.state == AppState.FAILED and desc.msg == store.MACHINE_STOPPED
    assert json.loads(app_file.read_bytes()) == json.loads(whole)


def test_a_deleted_job_stays_deleted_and_a_torn_record_is_skipped(sched: LocalScheduler) -> None:
    kept, deleted = _ended(sched, "true"), _ended(sched, "true")
    sched.delete(deleted)
    with open(sched.store.root + f"/{journal.JOURNAL_DIR}/{journal.journal_name(journal.boot_id() or '')}", "ab") as f:
        f.write(b'\n{"app_id":"torn-one","app":{"na')  # a record whose fdatasync never returned
    shutil.rmtree(sched.store.job_dir(kept))
    after = _reboot(sched)
    assert [a.app_id for a in after.list()] == [kept]


def test_a_final_state_the_crash_lost_comes_back_from_the_journal(sched: LocalScheduler) -> None:
    app_id = _ended(sched, "false")
    state_file = Path(sched.store.job_dir(app_id)) / store.STATE_FILE
    ended = json.loads(state_file.read_text())
    assert ended["state"] == "FAILED" and ended["replicas"][0]["exit_code"] == 1
    state_file.write_text(json.dumps({**ended, "state": "RUNNING", "replicas": []}))  # the older file the crash kept
    after = _reboot(sched)
    desc = after.describe(app_id)
    assert desc is not None and desc.state == AppState.FAILED and desc.msg != store.MACHINE_STOPPED
    assert json.loads(state_file.read_text()) == ended  # exit code and all


def test_other_machines_journals_are_left_alone(sched: LocalScheduler) -> None:
    app_id = _ended(sched, "true")
    directory = Path(sched.store.root) / journal.JOURNAL_DIR
    other = directory / f"{EARLIER_BOOT}.some-other-host"
    other.write_text(json.dumps({"app_id": "theirs-1", "app": {"name": "theirs"}}) + "\n")
    after = LocalScheduler("t", state_dir=sched.store.root)
    assert [a.app_id for a in after.list()] == [app_id]
    assert other.exists()


def test_a_twin_with_this_host_name_keeps_its_journal(
    sched: LocalScheduler, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two machines with one host name (clones) share a home: the other one's journal of an
    earlier boot is not this machine's to replay (nor to remove)."""
    machine_id = tmp_path / "machine-id"
    machine_id.write_text("0" * 32 + "\n")
    with monkeypatch.context() as patched:
        patched.setattr(journal, "_MACHINE_ID_FILES", (str(machine_id),))
        twin = LocalScheduler("t", state_dir=sched.store.root)
        theirs = _ended(twin, "true")
        twin.close()
        directory = Path(sched.store.root) / journal.JOURNAL_DIR
        twin_journal = directory / journal.journal_name(EARLIER_BOOT)
        (directory / journal.journal_name(journal.boot_id() or "")).rename(twin_journal)
    assert journal.journal_name(EARLIER_BOOT) != twin_journal.name
    mine = LocalScheduler("t", state_dir=sched.store.root)
    desc = mine.describe(theirs)
    assert desc is not None and desc.state == AppState.SUCCEEDED
    assert twin_journal.exists()


def test_the_journal_is_emptied_once_large_after_a_sync(sched: LocalScheduler, monkeypatch: pytest.MonkeyPatch) -> None:
    path = Path(sched.store.root) / journal.JOURNAL_DIR / journal.journal_name(journal.boot_id() or "")
    _ended(sched, "true")
    size = path.stat().st_size
    assert size > 0
    synced: list[int] = []
    sync = journal.sync_filesystem
    monkeypatch.setattr(journal, "sync_filesystem", lambda fd: (synced.append(os.fstat(fd).st_ino), sync(fd))[1])
    monkeypatch.setattr(journal, "ROTATE_AT", size + 1)
    _ended(sched, "true")  # its record passes the limit: every job file is forced to disk, the journal emptied
    assert synced == [path.stat().st_ino]
    assert 0 < path.stat().st_size < size  # what came after: the job's final state


def test_a_rotation_syncs_the_state_directory_s_file_system_only(tmp_path: Path) -> None:
    _need_strace()
    code = "import os, sys; from torchx_sched_local import journal; journal.sync_filesystem(os.open(sys.argv[1], os.O_RDONLY))"
    trace = tmp_path / "trace"
    subprocess.run(
        ["strace", "-f", "-qq", "-e", "trace=sync,syncfs", "-o", str(trace), sys.executable, "-c", code, str(tmp_path)],
        check=True,
    )
    calls = trace.read_text()
    assert re.search(r"\bsyncfs\(\d+\) += 0", calls), calls
    assert not re.search(r"\bsync\(\)", calls), calls


def test_records_of_concurrent_submissions_never_interleave(sched: LocalScheduler) -> None:
    """4 threads (one open journal, shared) and 2 processes submit at once: every record is whole."""
    import threading

    script = (
        "import sys\nfrom torchx.testing import command_app\n"
        "from torchx_sched_local.local_scheduler import LocalScheduler\n"
        "s = LocalScheduler('t', state_dir=sys.argv[1])\n"
        "print(' '.join(s.submit(command_app('true'), {}) for _ in range(5)))\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, sched.store.root], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    ids: list[str] = []
    threads = [
        threading.Thread(target=lambda: ids.extend(sched.submit(command_app("true"), {}) for _ in range(5)))
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for p in procs:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0
        ids.extend(out.split())
    for app_id in ids:
        assert sched.wait(app_id, timeout=60) is not None
    path = Path(sched.store.root) / journal.JOURNAL_DIR / journal.journal_name(journal.boot_id() or "")
    fd = os.open(path, os.O_RDONLY)
    try:
        entries = list(journal.records(fd))
    finally:
        os.close(fd)
    lines = [line for line in path.read_bytes().split(b"\n") if line.strip()]
    assert len(entries) == len(lines) == 2 * 30  # a request and a final state per job, none torn
    assert sorted(e["app_id"] for e in entries if "app" in e) == sorted(ids)
