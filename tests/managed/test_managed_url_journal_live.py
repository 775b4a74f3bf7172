"""A managed job whose journal is on object storage (``journal=s3://...``, the moto endpoint of
``scripts/backends/services.sh up moto``): driven by a local driver, recovered after its attempt
and its driver are SIGKILLed, read from a fresh HOME through the URL alone, and fenced (a second
driver of the same journal exits; a frozen driver loses its lease and stops without writing)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from torchx.testing.buckets import list_objects, live_s3_prefix, read_object
from torchx.testing.processes import alive, eventually

pytestmark = pytest.mark.aws

STEPS, STEP_SECONDS = 40, 0.2
BUCKET = "torchx-journal-live"


@pytest.fixture
def journal() -> str:
    """A fresh ``s3://`` journal on the moto endpoint (its bucket made once)."""
    return live_s3_prefix(BUCKET)


def _env(tmp_path: Path, name: str) -> dict[str, str]:
    """A client with its own HOME and managed state, sharing local_cwd's state directory."""
    home = tmp_path / name
    home.mkdir(exist_ok=True)
    env = dict(os.environ, HOME=str(home), TORCHX_MANAGED_STATE_DIR=str(home / "managed"))
    env["TORCHX_LOCAL_STATE_DIR"] = str(tmp_path / "local-state")
    return env


def _torchx(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchx", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def _submit(tmp_path: Path, shared: Path, journal: str, ckpt: Path, steps: int = STEPS) -> str:
    cfg = f"targets=local_cwd,controller=local,journal={journal},checkpoint_dir={ckpt},restart_backoff=0"
    app = [sys.executable, str(shared / "counter.py"), str(steps), str(STEP_SECONDS)]
    out = _torchx(
        _env(tmp_path, "laptop"), "run", "--detach", "-s", "managed", "-cfg", cfg, "utils.sh", *app, cwd=shared
    )
    assert out.returncode == 0, out.stderr
    handle = out.stdout.strip().splitlines()[-1]
    assert handle.startswith("managed://torchx/") and "s3%3A" in handle, handle
    return handle


def _status(tmp_path: Path, handle: str, shared: Path, name: str = "other") -> dict[str, Any]:
    out = _torchx(_env(tmp_path, name), "status", "--json", handle, cwd=shared)
    assert out.returncode == 0, out.stderr
    status: dict[str, Any] = json.loads(out.stdout)
    return status


def _lease(journal: str, handle: str) -> dict[str, Any]:
    job = handle.rsplit("/", 1)[1].split("@", 1)[0]
    rec: dict[str, Any] = json.loads(read_object(f"{journal}/{job}/driver.lease") or b"{}")
    return rec


def _driver_pid(journal: str, handle: str) -> int:
    def held() -> bool:
        rec = _lease(journal, handle)
        return bool(rec.get("holder")) and alive(int(rec["pid"]))

    eventually(held, 30, 0.2, "a driver to hold the job's lease")
    return int(_lease(journal, handle)["pid"])


def _steps_once(ckpt: Path, steps: int = STEPS) -> None:
    counts = [int(line.split()[1]) for line in (ckpt / "steps").read_text().splitlines()]
    assert int((ckpt / "count").read_text()) == steps
    assert sorted(set(counts)) == list(range(1, steps + 1))


def test_url_journal_recovers_a_killed_attempt_and_driver_read_from_a_fresh_home(
    tmp_path: Path, shared: Path, journal: str
) -> None:
    ckpt = shared / "ckpt"
    handle = _submit(tmp_path, shared, journal, ckpt)
    driver = _driver_pid(journal, handle)
    eventually(lambda: (ckpt / "count").exists() and int((ckpt / "count").read_text()) >= 5, 60, 0.1, "counting")
    os.kill(driver, signal.SIGKILL)  # nothing drives it now: the next look starts a driver
    os.kill(int((ckpt / "pid-0").read_text()), signal.SIGKILL)
    eventually(lambda: not alive(driver), 10, 0.1, "the driver to die")

    def done() -> bool:
        return _status(tmp_path, handle, shared)["state"] == "SUCCEEDED"  # each look may start a driver

    eventually(done, 180, 1.0, "the job to succeed")
    status = _status(tmp_path, handle, shared, "third")  # a client that never saw the job
    attempts = status["attempts"]
    assert len(attempts) >= 2, status
    assert attempts[0]["state"] != "SUCCEEDED" and attempts[-1]["state"] == "SUCCEEDED", status
    listed = _torchx(_env(tmp_path, "fourth"), "list", "-s", "managed", "-cfg", f"journal={journal}", cwd=shared)
    assert listed.returncode == 0 and handle in listed.stdout and "SUCCEEDED" in listed.stdout, listed
    _steps_once(ckpt)


def test_url_journal_fences_a_second_driver_and_a_frozen_one(tmp_path: Path, shared: Path, journal: str) -> None:
    ckpt = shared / "ckpt"
    steps = 150  # 30 s: the attempt still runs when the contender takes over (after 9 s frozen)
    handle = _submit(tmp_path, shared, journal, ckpt, steps)
    first = _driver_pid(journal, handle)
    root_id = handle.rsplit("/", 1)[1]
    job = root_id.split("@", 1)[0]
    env = _env(tmp_path, "other")
    argv = [sys.executable, "-m", "torchx_managed.driver", journal, job]
    # a second driver while the first renews: it sees the lease renewed and exits, doing nothing
    second = subprocess.run(argv, env=env, cwd=shared, capture_output=True, text=True, timeout=60)
    assert second.returncode == 0 and "already has a driver" in second.stderr, second.stderr
    # the first frozen past its lease: a contender takes over; the first, woken, stops without writing
    os.kill(first, signal.SIGSTOP)
    try:
        started = time.monotonic()
        third = subprocess.Popen(argv, env=env, cwd=shared, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            eventually(
                lambda: _lease(journal, handle).get("pid") == third.pid, 40, 0.2, "the contender to take the lease"
            )
        except AssertionError:
            third.kill()
            out = third.communicate()[0].decode(errors="replace")
            raise AssertionError(f"lease {_lease(journal, handle)}; the contender said:\n{out}") from None
        assert time.monotonic() - started >= 8.0  # only after LEASE_DURATION unchanged (9 s)
    finally:
        os.kill(first, signal.SIGCONT)
    eventually(lambda: not alive(first), 20, 0.1, "the frozen driver to stop")
    assert third.wait(timeout=180) == 0
    assert _status(tmp_path, handle, shared)["state"] == "SUCCEEDED"
    writers = [json.loads(read_object(p) or b"{}")["w"] for p in list_objects(f"{journal}/{job}/events")]
    pids = [w.split(":")[1] if w else "" for w in writers]
    took = pids.index(str(third.pid))
    assert str(first) not in pids[took:], writers  # nothing by the first after it took over
    _steps_once(ckpt, steps)


def test_a_bucket_that_cannot_be_written_is_one_line_and_submits_nothing(
    tmp_path: Path, shared: Path, journal: str
) -> None:
    env = _env(tmp_path, "laptop")
    cfg = "targets=local_cwd,controller=local,journal=s3://no-such-bucket-torchx/j"
    out = _torchx(env, "run", "-s", "managed", "-cfg", cfg, "utils.sh", "true", cwd=shared)
    assert out.returncode != 0 and not out.stdout.strip(), out
    assert out.stderr.strip().splitlines() == [
        "torchx: error: managed: journal=s3://no-such-bucket-torchx/j: cannot write there:"
        " The specified bucket does not exist"
    ], out.stderr
    assert not (tmp_path / "local-state").exists() or not any((tmp_path / "local-state").iterdir())


def test_a_cancel_appended_from_another_machine_reaches_the_driver(tmp_path: Path, shared: Path, journal: str) -> None:
    from torchx_managed.journal_store import UrlStore

    ckpt = shared / "ckpt"
    handle = _submit(tmp_path, shared, journal, ckpt)
    driver = _driver_pid(journal, handle)
    eventually(lambda: (ckpt / "count").exists(), 60, 0.1, "counting")
    job = handle.rsplit("/", 1)[1].split("@", 1)[0]
    # what `torchx cancel` on another host does: journal the cancel; it cannot signal this host's driver
    UrlStore(journal).append(job, {"ev": "cancel", "t": time.time()})
    started = time.monotonic()
    eventually(lambda: _status(tmp_path, handle, shared)["state"] == "CANCELLED", 30, 0.5, "the job to be cancelled")
    assert time.monotonic() - started < 15
    eventually(lambda: not alive(driver), 15, 0.1, "the driver to end")
    count = int((ckpt / "count").read_text())
    time.sleep(2 * STEP_SECONDS + 1)
    assert int((ckpt / "count").read_text()) == count < STEPS  # the attempt was stopped


def test_a_scan_asks_each_job_s_spec_once_per_process(journal: str) -> None:
    """A controller scans every second: one LIST of the journal, and a HEAD only for a job this
    process has not seen yet (it HEADed every job's spec on every scan). A removed job leaves
    the listing."""
    from torchx_managed.journal_store import UrlStore, _client

    store = UrlStore(journal)
    for job in ("a", "b", "c"):
        store.create(job, {"name": job})
    heads: list[str] = []
    client = _client()

    def count(params: dict[str, Any], **_: Any) -> None:
        heads.append(params["Key"])

    client.meta.events.register("provide-client-params.s3.HeadObject", count)
    try:
        assert UrlStore(journal).job_ids() == ["a", "b", "c"]
        assert len(heads) == 3, heads
        assert UrlStore(journal).job_ids() == ["a", "b", "c"]
        assert len(heads) == 3, heads  # nothing asked again
        store.create("d", {"name": "d"})
        store.remove("b")
        assert UrlStore(journal).job_ids() == ["a", "c", "d"]
        assert [h.rsplit("/", 2)[-2] for h in heads[3:]] == ["d"], heads
    finally:
        client.meta.events.unregister("provide-client-params.s3.HeadObject", count)
