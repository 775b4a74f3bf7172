"""The JSON API over real jobs (processes of core's test scheduler ``procs``; in-process through
Starlette's TestClient, and the log stream against a real ``torchx dashboard``)."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx2 as httpx
import pytest
from starlette.testclient import TestClient
from torchx.runner import Runner
from torchx.testing import python_app
from torchx.testing.procs import NAME as SCHED
from torchx.testing.procs import create_scheduler
from torchx_dashboard.app import create_app
from torchx_dashboard.jobs import JobService


def enc(handle: str) -> str:
    return quote(handle, safe="")


def client_for(runner: Runner, schedulers: list[str] | None = None, read_only: bool = False) -> TestClient:
    service = JobService(runner, schedulers, read_only)
    return TestClient(create_app(service), base_url="http://127.0.0.1:8620")


@pytest.fixture
def client(runner: Runner) -> Iterator[TestClient]:
    with client_for(runner, [SCHED]) as c:
        yield c


def test_lists_jobs_with_their_states(client: TestClient, jobs: dict[str, str], script: str) -> None:
    response = client.get("/api/jobs")
    assert response.headers["server-timing"].startswith("list;dur=")
    body = response.json()
    states = {j["handle"]: j["state"] for j in body["jobs"]}
    assert states[jobs["ok"]] == "SUCCEEDED"
    assert states[jobs["bad"]] == "FAILED"
    assert states[jobs["live"]] == "RUNNING"
    assert {j["name"] for j in body["jobs"]} == {"ok", "bad", "live", script}
    assert body["total"] == 4
    assert body["errors"] == []
    assert body["schedulers"] == [SCHED]
    by_handle = {j["handle"]: j for j in body["jobs"]}
    done, live = by_handle[jobs["ok"]], by_handle[jobs["live"]]
    assert done["submitted"] <= done["started"] <= done["ended"]  # the scheduler knows all three
    assert live["started"] is not None and live["ended"] is None  # still running


def test_sorts_by_submission_time(client: TestClient, jobs: dict[str, str]) -> None:
    newest = client.get("/api/jobs", params={"sort": "-submitted"}).json()["jobs"]
    times = [j["submitted"] for j in newest]
    assert times == sorted(times, reverse=True)
    oldest = client.get("/api/jobs", params={"sort": "submitted"}).json()["jobs"]
    assert [j["handle"] for j in oldest] == [j["handle"] for j in reversed(newest)]


def test_filters_sorts_and_pages_on_the_server(client: TestClient, jobs: dict[str, str], script: str) -> None:
    failed = client.get("/api/jobs", params={"state": "failed"}).json()
    assert [j["handle"] for j in failed["jobs"]] == [jobs["bad"]]
    by_text = client.get("/api/jobs", params={"q": "LIV"}).json()
    assert [j["handle"] for j in by_text["jobs"]] == [jobs["live"]]
    by_name = client.get("/api/jobs", params={"sort": "-name", "limit": 2}).json()
    assert [j["name"] for j in by_name["jobs"]] == ["ok", "live"]
    assert by_name["total"] == 4
    rest = client.get("/api/jobs", params={"sort": "-name", "limit": 2, "offset": 2}).json()
    assert [j["name"] for j in rest["jobs"]] == ["bad", script]
    only = client.get("/api/jobs", params={"scheduler": SCHED, "state": "SUCCEEDED"}).json()
    assert {j["handle"] for j in only["jobs"]} == {jobs["ok"], jobs["script"]}


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"state": "DONE"}, "unknown state 'DONE'"),
        ({"limit": "0"}, "limit must be between 1 and 1000"),
        ({"offset": "x"}, "offset must be an integer"),
        ({"sort": "age"}, "cannot sort by 'age'"),
        ({"scheduler": "nope"}, "unknown scheduler 'nope'"),
    ],
)
def test_a_bad_listing_parameter_is_400(client: TestClient, params: dict[str, str], says: str) -> None:
    response = client.get("/api/jobs", params=params)
    assert response.status_code == 400
    assert says in response.json()["error"]


def test_a_scheduler_that_fails_is_reported_while_the_others_list(
    runner: Runner, jobs: dict[str, str], tmp_path: Path
) -> None:
    not_a_dir = tmp_path / "state-is-a-file"
    not_a_dir.write_text("")  # the broken scheduler's state directory is a file: its listing fails for real
    broken = Runner(
        "torchx",
        {
            SCHED: create_scheduler,
            "broken": lambda session, **kw: create_scheduler(session, root=str(not_a_dir)),
        },
    )
    with client_for(broken) as c:
        body = c.get("/api/jobs").json()
    assert {j["handle"] for j in body["jobs"]} == set(jobs.values())
    assert [e["scheduler"] for e in body["errors"]] == ["broken"]
    assert "state-is-a-file" in body["errors"][0]["error"]


def test_a_scheduler_that_hangs_is_reported_after_the_timeout(
    runner: Runner, jobs: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torchx_dashboard.jobs

    monkeypatch.setattr(torchx_dashboard.jobs, "LIST_TIMEOUT", 1.0)
    hung = tmp_path / "hung-state"
    (hung / "stuck").mkdir(parents=True)
    fifo = hung / "stuck" / "job.json"
    os.mkfifo(fifo)  # reading this job's state blocks until someone writes: a listing that hangs for real
    both = Runner(
        "torchx",
        {SCHED: create_scheduler, "hung": lambda session, **kw: create_scheduler(session, root=str(hung))},
    )
    started = time.monotonic()
    try:
        with client_for(both) as c:
            body = c.get("/api/jobs").json()
        took = time.monotonic() - started
    finally:
        with contextlib.suppress(OSError):  # let the blocked read finish
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            os.write(fd, b"{}")
            os.close(fd)
    assert body["errors"] == [{"scheduler": "hung", "error": "no answer within 1 s"}]
    assert {j["handle"] for j in body["jobs"]} == set(jobs.values())
    assert took < 10


def test_job_detail_has_roles_replicas_and_the_request(client: TestClient, jobs: dict[str, str]) -> None:
    response = client.get(f"/api/jobs/{enc(jobs['bad'])}")
    assert response.status_code == 200
    job = response.json()
    assert job["state"] == "FAILED"
    assert job["scheduler"] == SCHED
    [role] = job["roles"]
    assert role["name"] == "r"
    assert [r["state"] for r in role["replicas"]] == ["FAILED"]
    assert "sys.exit(3)" in job["request"]
    assert job["can_cancel"] and job["can_delete"]
    assert job["attempts"] is None
    refresh = client.get(f"/api/jobs/{enc(jobs['bad'])}", params={"request": "0"}).json()
    assert refresh["request"] is None and refresh["state"] == "FAILED"


def test_unknown_handle_is_404_and_malformed_400(client: TestClient) -> None:
    unknown = client.get(f"/api/jobs/{enc(f'{SCHED}://torchx/no-such-job')}")
    assert unknown.status_code == 404
    assert unknown.json() == {"error": f"unknown job {SCHED}://torchx/no-such-job"}
    assert client.get(f"/api/jobs/{enc('slurmish://x/1')}").status_code == 404  # a scheduler not shown
    malformed = client.get("/api/jobs/not-a-handle")
    assert malformed.status_code == 400
    assert "malformed app handle" in malformed.json()["error"]
    assert client.post(f"/api/jobs/{enc(f'{SCHED}://torchx/nope')}/cancel").status_code == 404
    assert client.get(f"/api/jobs/{enc(f'{SCHED}://torchx/nope')}/frobnicate").status_code == 404


def test_attempts_in_the_description_are_passed_on(runner: Runner, client: TestClient) -> None:
    attempts = [
        {"handle": "local_cwd://torchx/a-1", "scheduler": "local_cwd", "state": "FAILED", "cause": "PREEMPTED"},
        {"handle": "local_cwd://torchx/a-2", "scheduler": "local_cwd", "state": "SUCCEEDED", "exit_code": 0},
    ]
    app = python_app("pass", name="managed-like")
    app.metadata = {"attempts": attempts, "team": "x"}  # type: ignore[dict-item]
    handle = runner.run(app, SCHED)
    job = client.get(f"/api/jobs/{enc(handle)}").json()
    assert job["attempts"] == attempts
    assert job["metadata"] == {"team": "x"}


def test_logs_as_text_with_regex_and_role(client: TestClient, jobs: dict[str, str], script: str) -> None:
    text = client.get(f"/api/jobs/{enc(jobs['ok'])}/logs").text
    assert text == f"hello\n{script}\n"
    assert client.get(f"/api/jobs/{enc(jobs['ok'])}/logs", params={"regex": "^hel"}).text == "hello\n"
    assert client.get(f"/api/jobs/{enc(jobs['bad'])}/logs", params={"role": "r", "replica": "0"}).text == "oops\n"
    assert client.get(f"/api/jobs/{enc(jobs['ok'])}/logs", params={"since": "1d"}).text.startswith("hello")


@pytest.mark.parametrize(
    ("params", "status", "says"),
    [
        ({"regex": "("}, 400, "invalid regex"),
        ({"since": "yesterday"}, 400, "cannot read time"),
        ({"replica": "-1"}, 400, "replica must be at least 0"),
        ({"role": "nope"}, 404, "has no role 'nope'"),
    ],
)
def test_bad_log_parameters(
    client: TestClient, jobs: dict[str, str], params: dict[str, str], status: int, says: str
) -> None:
    response = client.get(f"/api/jobs/{enc(jobs['ok'])}/logs", params=params)
    assert response.status_code == status
    assert says in response.json()["error"]


def test_cancel_then_delete(client: TestClient, runner: Runner, jobs: dict[str, str]) -> None:
    response = client.post(f"/api/jobs/{enc(jobs['live'])}/cancel")
    assert response.status_code == 200
    assert response.json()["state"] == "CANCELLED"
    assert runner.status(jobs["live"]).state.name == "CANCELLED"  # type: ignore[union-attr]
    assert client.delete(f"/api/jobs/{enc(jobs['live'])}").json() == {"handle": jobs["live"], "deleted": True}
    assert runner.status(jobs["live"]) is None
    assert client.get(f"/api/jobs/{enc(jobs['live'])}").status_code == 404
    assert client.put(f"/api/jobs/{enc(jobs['ok'])}").status_code == 405


def test_read_only_refuses_cancel_and_delete(runner: Runner, jobs: dict[str, str]) -> None:
    with client_for(runner, [SCHED], read_only=True) as c:
        job = c.get(f"/api/jobs/{enc(jobs['live'])}").json()
        assert not job["can_cancel"] and not job["can_delete"]
        cancel = c.post(f"/api/jobs/{enc(jobs['live'])}/cancel")
        delete = c.delete(f"/api/jobs/{enc(jobs['ok'])}")
        assert c.get("/api/config").json()["read_only"] is True
    assert (cancel.status_code, delete.status_code) == (403, 403)
    assert "read-only" in cancel.json()["error"]
    assert runner.status(jobs["live"]).state.name == "RUNNING"  # type: ignore[union-attr]
    assert runner.status(jobs["ok"]) is not None


def _events(response: httpx.Response) -> Iterator[tuple[str, dict[str, Any]]]:
    event = "message"
    for line in response.iter_lines():
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: "):
            yield event, json.loads(line[6:])
            event = "message"


def test_follow_streams_new_lines_then_the_end_state(dashboard: Any, runner: Runner, jobs: dict[str, str]) -> None:
    server = dashboard("-s", SCHED)
    url = f"{server.base}api/jobs/{enc(jobs['live'])}/logs"
    seen: list[str] = []
    with httpx.stream("GET", url, params={"follow": "1", "regex": "tick"}, timeout=30) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        started = time.monotonic()
        for event, data in _events(response):
            if event == "message":
                seen.append(data["line"])
                if len(seen) == 3:
                    runner.cancel(jobs["live"])  # the stream ends when the job does
            else:
                assert (event, data) == ("end", {"state": "CANCELLED"})
                break
        assert time.monotonic() - started < 20
    assert seen[:3] == ["tick 0", "tick 1", "tick 2"]


def test_sweeps_list_and_trials_with_their_metric(runner: Runner, booth_sweep: Any) -> None:
    with client_for(runner, [SCHED]) as c:
        listed = c.get("/api/sweeps").json()["sweeps"]
        one = c.get(f"/api/sweeps/{enc(booth_sweep.handle)}").json()
        missing = c.get("/api/sweeps/no-such-sweep")
        not_a_sweep = c.get(f"/api/sweeps/{enc(f'{SCHED}://torchx/x')}")
    assert [(s["handle"], s["state"], s["trials"]) for s in listed] == [(booth_sweep.handle, "SUCCEEDED", 6)]
    assert one["params"] == ["x1", "x2"]
    assert one["metric_names"] == ["booth_eval"]
    by_point = {(t["args"]["x1"], t["args"]["x2"]): t["metrics"]["booth_eval"] for t in one["trials"]}
    assert by_point[("1", "3")] == 0.0  # the minimum
    assert by_point[("2", "3")] == 5.0
    assert missing.status_code == 404
    assert not_a_sweep.status_code == 400


def test_a_managed_job_shows_its_request_and_nests_its_attempts(runner: Runner, managed_job: str) -> None:
    with client_for(runner, ["local_cwd", "managed"]) as c:
        job = c.get(f"/api/jobs/{enc(managed_job)}").json()
        listed = c.get("/api/jobs").json()
        failed = c.get("/api/jobs", params={"state": "FAILED"}).json()
    assert job["request_error"] is None
    assert "local_cwd" in job["request"]  # the managed request names its target
    assert [(a["attempt"], a["state"]) for a in job["attempts"]] == [(0, "FAILED"), (1, "SUCCEEDED")]
    assert all(isinstance(a["started"], float) and isinstance(a["ended"], float) for a in job["attempts"])
    # one top row: the managed job, its two local_cwd attempts nested in order
    assert [(j["handle"], j["scheduler"]) for j in listed["jobs"]] == [(managed_job, "managed")]
    assert listed["total"] == 1
    children = listed["jobs"][0]["children"]
    assert [(c["scheduler"], c["state"], c["name"].rsplit("-", 1)[1]) for c in children] == [
        ("local_cwd", "FAILED", "0"),
        ("local_cwd", "SUCCEEDED", "1"),
    ]
    assert {a["handle"] for a in job["attempts"]} == {c["handle"] for c in children}
    row = listed["jobs"][0]  # the managed scheduler lists no times: its row takes its attempts'
    assert row["submitted"] == children[0]["submitted"] and row["ended"] == children[1]["ended"]
    # a filter matching only a nested attempt keeps its managed job's row
    assert [j["handle"] for j in failed["jobs"]] == [managed_job]


def test_a_sweeps_trials_are_nested_under_it(runner: Runner, booth_sweep: Any, jobs: dict[str, str]) -> None:
    with client_for(runner, [SCHED]) as c:
        listed = c.get("/api/jobs").json()
        sweeps = c.get("/api/sweeps").json()["sweeps"]
    rows = {j["handle"]: j for j in listed["jobs"]}
    assert set(rows) == {booth_sweep.handle, *jobs.values()}  # 6 trials fold into one row
    sweep = rows[booth_sweep.handle]
    assert (sweep["kind"], sweep["scheduler"], sweep["state"]) == ("sweep", SCHED, "SUCCEEDED")
    assert len(sweep["children"]) == 6 and {t["state"] for t in sweep["children"]} == {"SUCCEEDED"}
    assert [t["name"].rsplit("-", 1)[1] for t in sweep["children"]] == ["0", "1", "2", "3", "4", "5"]  # trial order
    assert sweep["submitted"] <= sweep["started"] <= sweep["ended"]
    assert sweeps[0]["handle"] == booth_sweep.handle


def test_sweep_metrics_come_from_the_tracker_the_sweep_recorded(
    runner: Runner, booth_sweep: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # no .torchxconfig here: only the sweep's record names the tracker
    with client_for(runner, [SCHED]) as c:
        one = c.get(f"/api/sweeps/{enc(booth_sweep.handle)}").json()
    assert one["metric_names"] == ["booth_eval"]
    assert sorted(t["metrics"]["booth_eval"] for t in one["trials"])[0] == 0.0
