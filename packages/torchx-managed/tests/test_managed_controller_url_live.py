"""A controller job on a journal in a bucket (``controller=slurm|lsf``, ``journal=s3://...`` on
the moto endpoint): the job recovers after an application error with its submitting client torn
down and its HOME gone, the controller's process itself SIGKILLed mid-run is replaced by the next look
at the job, a cancel from a fresh HOME stops it, and a bucket the controller cannot use is one
line with nothing submitted. Every look is from a client that knows only the handle (the URL is
in it) and the bucket's credentials. Run by ``nox -s integration-managed``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from torchx.testing.buckets import list_objects, live_s3_prefix, read_object
from torchx.testing.machines import Machine
from torchx.testing.processes import alive, eventually, processes_naming

pytestmark = [pytest.mark.aws, pytest.mark.slurm]

BUCKET = "torchx-controller-live"


@pytest.fixture
def journal() -> Iterator[str]:
    """A fresh ``s3://`` journal on the moto endpoint (its bucket made once); the credentials and
    endpoint put in this process's environment (every client, and the jobs they submit, inherit
    them). Ends the journal's controller job afterwards (it would idle a while first)."""
    url = live_s3_prefix(BUCKET)
    yield url
    logs = _controller_logs(url)
    for handle in _controllers(url):
        kill = "scancel" if handle.startswith("slurm://") else "bkill"
        subprocess.run([kill, handle.rsplit("/", 1)[1]], check=False, capture_output=True)
    for log in logs:
        log.unlink(missing_ok=True)


def _record(url: str) -> dict[str, Any]:
    data = read_object(f"{url}/controller.json")
    record: dict[str, Any] = json.loads(data) if data is not None else {}
    return record


_seen: dict[str, list[str]] = {}


def _controllers(url: str) -> list[str]:
    """Every controller handle recorded for ``url`` while the test looked (and the current one)."""
    handle = _record(url).get("handle")
    seen = _seen.setdefault(url, [])
    if handle and handle not in seen:
        seen.append(handle)
    return list(seen)


def _controller_logs(url: str) -> list[Path]:
    """The logs of the journal's controller jobs (in /tmp of the node that ran each: this machine)."""
    return [p for handle in _controllers(url) for p in Path("/tmp").glob(f"*-{handle.rsplit('/', 1)[1]}-controller-*")]


def _until(check: Callable[[], bool], timeout: float, what: str, url: str) -> None:
    """:func:`eventually`, with the controller jobs' logs in the failure."""
    try:
        eventually(check, timeout, 0.5, what)
    except AssertionError as e:
        text = "".join(f"== {p}\n{p.read_text()[-3000:]}" for p in _controller_logs(url))
        raise AssertionError(f"{e}; controllers {_controllers(url)}; their logs:\n{text}") from None


def _submit(
    client: Machine,
    shared: Path,
    url: str,
    controller: str,
    partition: str,
    *app: str,
    cfg: str = "",
    isolated: bool = True,
) -> str:
    opts = ",".join(
        [
            "targets=slurm",
            f"controller={controller}",
            f"journal={url}",
            f"partition={partition}",
            f"job_dir={shared}",
            f"checkpoint_dir={shared / 'ckpt'}",
            "restart_backoff=0",
            *([cfg] if cfg else []),
        ]
    )
    proc = client.torchx(
        "run", "--detach", "--workspace", "", "-s", "managed", "-cfg", opts, "utils.sh", *app, isolated=isolated
    )
    handle = proc.stdout.strip().splitlines()[-1]
    assert handle.startswith("managed://torchx/") and "s3%3A" in handle, proc.stdout
    return handle


def _controller_pids(url: str) -> list[int]:
    """The controller processes of journal ``url`` (the test cluster's nodes are this machine)."""
    found = []
    for pid in processes_naming(url):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[1:4] == [b"-m", b"torchx_managed.controller", url.encode()]:
            found.append(pid)
    return found


def _count(shared: Path) -> int:
    path = shared / "ckpt" / "count"
    return int(path.read_text()) if path.exists() else 0


def _steps_once(shared: Path, steps: int) -> None:
    counts = [int(line.split()[1]) for line in (shared / "ckpt" / "steps").read_text().splitlines()]
    assert _count(shared) == steps
    assert sorted(set(counts)) == list(range(1, steps + 1)), counts


def test_a_slurm_controller_on_a_bucket_recovers_the_job_and_is_itself_replaced(
    tmp_path: Path, slurm: str, shared: Path, journal: str
) -> None:
    submitter, other = Machine(tmp_path, "laptop"), Machine(tmp_path, "other")
    steps = 80  # 20 s: the attempt still runs when the controller job is killed
    app = (sys.executable, str(shared / "counter.py"), str(steps), "0.25", "1")  # attempt 0: exit 1
    handle = _submit(submitter, shared, journal, "slurm", slurm, *app, cfg="max_restarts=1")
    first = _controllers(journal)
    assert first and first[0].startswith("slurm://"), first
    submitter.gone()
    _until(lambda: _count(shared) >= 5, 180, "attempt 1 to count", journal)
    # the controller's process killed outright: its leases are left to expire, nothing handed over
    pids = _controller_pids(journal)
    assert len(pids) == 1, pids
    os.kill(pids[0], signal.SIGKILL)
    eventually(lambda: not alive(pids[0]), 10, 0.1, "the controller to die")
    _until(lambda: other.status(handle)["state"] in ("SUCCEEDED", "FAILED"), 240, "the job to end", journal)
    status = other.status(handle)
    assert status["state"] == "SUCCEEDED", status
    attempts = [(a["scheduler"], a["state"], a["cause"]) for a in status["attempts"]]
    assert attempts[0] == ("slurm", "FAILED", "APP_ERROR") and len(attempts) == 2, attempts
    assert attempts[1][:2] == ("slurm", "SUCCEEDED"), attempts
    _steps_once(shared, steps)
    # the end was journaled by a controller job submitted after the first was killed, by a look
    controllers = _controllers(journal)
    assert len(controllers) >= 2 and controllers[-1] != first[0], controllers
    assert "resumes at" in Machine(tmp_path, "third").torchx("log", handle).stdout
    listed = json.loads(other.torchx("list", "-s", "managed", "-cfg", f"journal={journal}", "--json").stdout)
    assert [(a["app_handle"], a["state"]) for a in listed] == [(handle, "SUCCEEDED")]
    assert controllers[-1] in other.torchx("describe", handle).stdout  # describe names the controller job
    logs = "".join(p.read_text() for p in _controller_logs(journal))  # on the node, not in the gone HOME
    assert logs.count("driving job") >= 2 and "took lease" in logs, logs


def test_a_cancel_from_a_fresh_home_reaches_the_controller_on_a_bucket(
    tmp_path: Path, slurm: str, shared: Path, journal: str
) -> None:
    submitter, other = Machine(tmp_path, "laptop"), Machine(tmp_path, "other")
    ticks = shared / "ticks"
    handle = _submit(
        submitter, shared, journal, "slurm", slurm, "sh", "-c", f"while :; do echo x >> {ticks}; sleep 0.2; done"
    )
    try:
        submitter.gone()
        _until(lambda: ticks.exists(), 120, "the attempt to run", journal)
        _until(lambda: other.status(handle)["attempts"][-1]["state"] == "RUNNING", 60, "RUNNING", journal)
        # a local driver of the same job (what controller=local starts) sees the controller's lease renewed
        job = handle.rsplit("/", 1)[1].split("@", 1)[0]
        argv = [sys.executable, "-m", "torchx_managed.driver", journal, job]
        local = subprocess.run(argv, env=other.env(), capture_output=True, text=True, timeout=60)
        assert local.returncode == 0 and "already has a driver" in local.stderr, local.stderr
    finally:  # never leave the endless attempt running on the cluster
        Machine(tmp_path, "third").torchx("cancel", handle)
    _until(lambda: other.status(handle)["state"] == "CANCELLED", 90, "the job to read CANCELLED", journal)
    size = ticks.stat().st_size
    time.sleep(2)
    assert ticks.stat().st_size == size, "the attempt kept running after the cancel"
    assert len(other.status(handle)["attempts"]) == 1


def test_a_second_job_joins_the_running_controller(tmp_path: Path, slurm: str, shared: Path, journal: str) -> None:
    client = Machine(tmp_path, "laptop")
    one = _submit(client, shared, journal, "slurm", slurm, "sh", "-c", "sleep 3")
    _until(lambda: client.status(one)["state"] == "SUCCEEDED", 120, "the first job to end", journal)
    # a second controller of the journal (one a racing look submitted) sees the lease renewed and exits
    argv = [sys.executable, "-m", "torchx_managed.controller", journal]
    second = subprocess.run(argv, env=client.env(), capture_output=True, text=True, timeout=60)
    assert second.returncode == 0 and "another controller drives" in second.stderr, second.stderr
    two = _submit(client, shared, journal, "slurm", slurm, "sh", "-c", "true")
    _until(lambda: client.status(two)["state"] == "SUCCEEDED", 120, "the second job to end", journal)
    assert len(_controllers(journal)) == 1, _controllers(journal)  # one controller (it idles before it ends)
    # the bucket's credentials reached it through the environment sbatch passes, not its script
    controller = _controllers(journal)[0].rsplit("/", 1)[1]
    script = subprocess.run(["scontrol", "write", "batch_script", controller, "-"], capture_output=True, text=True)
    assert script.returncode == 0 and "torchx_managed.controller" in script.stdout, script
    assert "AWS_" not in script.stdout and os.environ["AWS_SECRET_ACCESS_KEY"] not in script.stdout, script.stdout


def test_a_controller_leaves_alone_a_job_a_local_driver_drives(
    tmp_path: Path, slurm: str, shared: Path, journal: str
) -> None:
    client = Machine(tmp_path, "laptop")
    steps = 40  # 8 s: the controller scans the journal while the local driver drives
    app = (sys.executable, str(shared / "counter.py"), str(steps), "0.2")
    local = _submit(client, shared, journal, "local", slurm, *app, isolated=False)  # a driver on this machine
    job = local.rsplit("/", 1)[1].split("@", 1)[0]
    lease = f"{journal}/{job}/driver.lease"

    def held() -> bool:
        record = json.loads(read_object(lease) or b"{}")
        return bool(record.get("holder")) and isinstance(record.get("pid"), int)

    eventually(held, 30, 0.2, "the local driver to take the job's lease")
    driver = json.loads(read_object(lease) or b"{}")["pid"]
    other = _submit(client, shared, journal, "slurm", slurm, "sh", "-c", "true")  # starts a controller
    _until(lambda: client.status(other)["state"] == "SUCCEEDED", 120, "the controller's job to end", journal)
    _until(lambda: client.status(local)["state"] == "SUCCEEDED", 120, "the local job to end", journal)
    # every append to the local job's journal after its submission's two is its local driver's
    writers = [json.loads(read_object(p) or b"{}")["w"] for p in list_objects(f"{journal}/{job}/events")]
    assert {w.split(":")[1] for w in writers[2:]} == {str(driver)}, writers
    logs = "".join(p.read_text() for p in _controller_logs(journal))
    other_job = other.rsplit("/", 1)[1].split("@", 1)[0]
    assert f"driving job {other_job}" in logs and f"driving job {job}" not in logs, logs
    _steps_once(shared, steps)


def test_a_bucket_the_controller_cannot_use_is_one_line_and_submits_nothing(
    tmp_path: Path, slurm: str, shared: Path, journal: str
) -> None:
    client = Machine(tmp_path, "laptop")
    before = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True).stdout.split()
    for url, why in (
        ("s3://no-such-bucket-torchx/j", "cannot write there: The specified bucket does not exist"),
        ("gs://bucket/j", "torchx-managed fences drivers on object storage with conditional writes"),
    ):
        opts = f"targets=slurm,controller=slurm,journal={url},partition={slurm},job_dir={shared}"
        proc = client.torchx("run", "-s", "managed", "-cfg", opts, "utils.sh", "true", check=False)
        assert proc.returncode != 0 and not proc.stdout.strip(), proc
        lines = proc.stderr.strip().splitlines()
        assert (
            len(lines) == 1 and lines[0].startswith(f"torchx: error: managed: journal={url}: ") and why in lines[0]
        ), lines
    after = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True).stdout.split()
    assert set(after) <= set(before), "a job was submitted"


@pytest.mark.lsf
def test_an_lsf_controller_on_a_bucket_restarts_a_slurm_attempt(
    tmp_path: Path, slurm: str, lsf: None, shared: Path, journal: str
) -> None:
    submitter, other = Machine(tmp_path, "laptop"), Machine(tmp_path, "other")
    app = (sys.executable, str(shared / "counter.py"), "8", "0.1", "1")
    handle = _submit(submitter, shared, journal, "lsf", slurm, *app, cfg="max_restarts=1")
    submitter.gone()
    _until(lambda: other.status(handle)["state"] in ("SUCCEEDED", "FAILED"), 180, "the job to end", journal)
    status = other.status(handle)
    attempts = [(a["state"], a["cause"]) for a in status["attempts"]]
    assert status["state"] == "SUCCEEDED" and attempts[0] == ("FAILED", "APP_ERROR") and len(attempts) == 2, status
    _steps_once(shared, 8)
    assert _controllers(journal)[0].startswith("lsf://"), _controllers(journal)


def test_machines_that_find_no_controller_claim_its_record_once(journal: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from torchx_managed import controller_record

    def race(version: str | None) -> list[str | None]:
        with ThreadPoolExecutor(8) as pool:
            return list(pool.map(lambda _: controller_record.claim(journal, version), range(8)))

    assert controller_record.read_record(journal) == ({}, None)
    won = [v for v in race(None) if v is not None]  # nothing recorded yet: create-only
    assert len(won) == 1, won
    controller_record.record_controller(journal, "slurm://torchx/1", won[0])
    record, version = controller_record.read_record(journal)
    assert record["handle"] == "slurm://torchx/1" and version
    won = [v for v in race(version) if v is not None]  # that controller ended: If-Match on what all read
    assert len(won) == 1, won
    # a claimer that died before recording: nobody may claim until the claim is stale
    _, version = controller_record.read_record(journal)
    assert controller_record.claim(journal, version) is None
    monkeypatch.setattr(controller_record, "CLAIM_TIMEOUT", 0.0)
    assert controller_record.claim(journal, version) is not None
