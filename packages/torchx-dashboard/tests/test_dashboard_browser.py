"""The page in a real Chromium (Playwright driving Debian's ``chromium``): states, live logs, Cancel,
read-only mode, escaping, a managed job, attempts and trials nested under their managed job and
sweep, sweeps, a job on the live Slurm cluster; screenshots for a reviewer.

Screenshots go to ``$TORCHX_SCREENSHOT_DIR`` (default ``test-output/screenshots`` in the repository
root); the directory is printed at the end of the run (see ``shots`` in conftest.py).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx2 as httpx
import pytest
from torchx.specs import Resource
from torchx.testing import command_app, live_backend_env, python_app, require_answer, unavailable
from torchx.testing.procs import NAME as SCHED

pytestmark = pytest.mark.browser
playwright = pytest.importorskip("playwright.sync_api")
expect = playwright.expect


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Chromium from the system (``$TORCHX_CHROMIUM``, else ``chromium`` on PATH): Playwright's own
    browser download is not used."""
    path = os.environ.get("TORCHX_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not os.path.exists(path):
        unavailable(f"no chromium at {path}: apt-get install chromium (or set TORCHX_CHROMIUM)")
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh page; the test fails on any JavaScript error the page raised."""
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.set_default_timeout(15000)
    yield pg
    context.close()
    assert errors == []


def job_url(server: Any, handle: str) -> str:
    return f"{server.url}#/job/{quote(handle, safe='')}"


def row(page: Any, handle: str) -> Any:
    return page.locator(f'#jobs-body tr[data-handle="{handle}"]')


def test_job_table_shows_states_and_filters(
    page: Any, dashboard: Any, jobs: dict[str, str], script: str, shots: Path
) -> None:
    server = dashboard("-s", SCHED)
    page.goto(server.url)
    expected = {"ok": "SUCCEEDED", "bad": "FAILED", "live": "RUNNING", "script": "SUCCEEDED"}
    for name, state in expected.items():
        assert row(page, jobs[name]).locator(".state").inner_text() == state
    # the job named <script> is text: its link reads "<script>...", and nothing ran
    assert row(page, jobs["script"]).locator("a").inner_text() == script
    assert page.evaluate("window.__pwned") is None
    # submission time as a local date and time, and how long the job ran
    submitted, ran = (row(page, jobs["ok"]).locator("td.time").nth(i).inner_text() for i in range(2))
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", submitted), submitted
    assert re.fullmatch(r"\d+s", ran), ran
    page.screenshot(path=str(shots / "jobs.png"))

    page.select_option("#f-state", "FAILED")
    expect(page.locator("#jobs-body tr")).to_have_count(1)
    assert row(page, jobs["bad"]).count() == 1
    page.select_option("#f-state", "")
    page.fill("#f-q", "liv")
    expect(page.locator("#jobs-body tr")).to_have_count(1)
    assert row(page, jobs["live"]).count() == 1
    page.fill("#f-q", "")
    expect(page.locator("#jobs-body tr")).to_have_count(4)
    page.click('th[data-sort="name"]')
    page.wait_for_url(re.compile(r"sort=name"))
    expect(page.locator("#jobs-body tr a").first).to_have_text(script)
    page.click('th[data-sort="name"]')
    expect(page.locator("#jobs-body tr a").first).to_have_text("ok")


def test_a_running_jobs_new_lines_appear_and_cancel_makes_it_cancelled(
    page: Any, dashboard: Any, runner: Any, jobs: dict[str, str], shots: Path
) -> None:
    handle = jobs["live"]
    server = dashboard("-s", SCHED)
    page.goto(job_url(server, handle))
    expect(page.locator("#log")).to_contain_text("tick 1")
    printed = [line for line in runner.log_lines(handle, "r", 0) if line.startswith("tick")]
    later = f"tick {len(printed) + 5}\n"  # printed about a second from now, after the page is open
    expect(page.locator("#log")).to_contain_text(later, timeout=10000)
    assert page.locator("#replicas tbody tr .state").inner_text() == "RUNNING"
    page.screenshot(path=str(shots / "job.png"), full_page=True)

    messages: list[str] = []

    def accept(dialog: Any) -> None:
        messages.append(dialog.message)
        dialog.accept()

    page.once("dialog", accept)
    page.click("#cancel")
    expect(page.locator("#job-title .state")).to_have_text("CANCELLED")
    assert messages == [f"Cancel {handle}?"]
    expect(page.locator("#log-status")).to_contain_text("job ended")
    status = subprocess.run(
        [sys.executable, "-m", "torchx", "status", handle], capture_output=True, text=True, timeout=60
    )
    assert "CANCELLED" in status.stdout, status.stdout + status.stderr


def test_dismissing_the_confirmation_cancels_nothing(
    page: Any, dashboard: Any, runner: Any, jobs: dict[str, str]
) -> None:
    server = dashboard("-s", SCHED)
    page.goto(job_url(server, jobs["live"]))
    page.wait_for_selector("#cancel")
    page.once("dialog", lambda d: d.dismiss())
    page.click("#cancel")
    time.sleep(1)
    assert runner.status(jobs["live"]).state.name == "RUNNING"


def test_read_only_has_no_buttons_and_the_api_refuses(
    page: Any, dashboard: Any, runner: Any, jobs: dict[str, str]
) -> None:
    server = dashboard("-s", SCHED, "--read-only")
    page.goto(job_url(server, jobs["live"]))
    expect(page.locator("#log")).to_contain_text("tick")
    assert page.locator("#job-title .state").inner_text() == "RUNNING"
    assert page.locator("#cancel").count() == 0
    assert page.locator("#delete").count() == 0
    assert page.locator("#mode").inner_text() == "read-only"
    path = f"api/jobs/{quote(jobs['live'], safe='')}"
    assert httpx.post(f"{server.base}{path}/cancel", timeout=10).status_code == 403
    assert httpx.delete(f"{server.base}{path}", timeout=10).status_code == 403
    refused = page.evaluate(f"fetch('/{path}/cancel', {{method: 'POST'}}).then(r => r.status)")
    assert refused == 403
    assert runner.status(jobs["live"]).state.name == "RUNNING"


def test_a_script_line_in_a_log_renders_as_text(page: Any, dashboard: Any, jobs: dict[str, str], script: str) -> None:
    server = dashboard("-s", SCHED)
    page.goto(job_url(server, jobs["ok"]))
    expect(page.locator("#log")).to_contain_text("hello")
    assert page.locator("#log").inner_text().splitlines() == ["hello", script]
    assert page.locator("#log script").count() == 0
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#job-title .state").inner_text() == "SUCCEEDED"
    assert script in page.locator("#request").inner_text()  # the request shows it as text too


def test_the_failed_job_page(page: Any, dashboard: Any, jobs: dict[str, str]) -> None:
    server = dashboard("-s", SCHED)
    page.goto(job_url(server, jobs["bad"]))
    expect(page.locator("#log")).to_contain_text("oops")
    assert page.locator("#job-title .state").inner_text() == "FAILED"
    assert page.locator("#replicas tbody tr .state").inner_text() == "FAILED"
    assert page.locator("#cancel").count() == 0  # it ended: nothing to cancel
    assert page.locator("#delete").count() == 1


def test_attempts_in_a_description_are_a_table_linking_each_attempt(page: Any, dashboard: Any, runner: Any) -> None:
    first = runner.run(python_app("import sys; sys.exit(1)", name="attempt"), SCHED)
    app = python_app("pass", name="managed-like")
    app.metadata = {  # the shape torchx-managed's describe gives
        "attempts": [
            {"handle": first, "scheduler": SCHED, "state": "FAILED", "cause": "APP_ERROR", "exit_code": 1},
            {"handle": "local_cwd://torchx/second", "state": "SUCCEEDED", "zone": "<i>b</i>"},
        ]
    }
    handle = runner.run(app, SCHED)
    server = dashboard("-s", SCHED)
    page.goto(job_url(server, handle))
    rows = page.locator("#attempts tbody tr")
    expect(rows).to_have_count(2)
    headers = page.locator("#attempts thead th").all_inner_texts()
    assert headers == ["attempt", "handle", "scheduler", "state", "cause", "exit_code", "zone"]
    assert rows.nth(0).locator("td").first.inner_text() == "0"  # attempts count from 0 (TORCHX_ATTEMPT)
    assert rows.nth(0).locator(".state").inner_text() == "FAILED"
    assert rows.nth(1).locator("td").last.inner_text() == "<i>b</i>"
    rows.nth(0).locator("a").click()
    expect(page.locator("#job-title")).to_contain_text(first)


def test_the_managed_job_page_shows_its_request_and_attempts_at_local_times(
    page: Any, dashboard: Any, managed_job: str, shots: Path
) -> None:
    server = dashboard("-s", "local_cwd", "-s", "managed")
    page.goto(job_url(server, managed_job))
    expect(page.locator("#job-title .state")).to_have_text("SUCCEEDED")
    assert "local_cwd" in page.locator("#request").inner_text()  # the request, not an error
    headers = page.locator("#attempts thead th").all_inner_texts()
    assert headers[:2] == ["attempt", "handle"] and "#" not in headers
    rows = page.locator("#attempts tbody tr")
    expect(rows).to_have_count(2)
    col = {name: i for i, name in enumerate(headers)}
    for n in range(2):
        cells = rows.nth(n).locator("td")
        assert cells.nth(col["attempt"]).inner_text() == str(n)
        for key in ("started", "ended"):
            shown = cells.nth(col[key]).inner_text()
            assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", shown), shown  # not an epoch float
    assert rows.nth(0).locator(".state").inner_text() == "FAILED"
    page.screenshot(path=str(shots / "managed.png"), full_page=True)


def test_attempts_and_trials_fold_under_their_managed_job_and_sweep(
    page: Any, dashboard: Any, managed_job: str, booth_sweep: Any, shots: Path
) -> None:
    server = dashboard("-s", "local_cwd", "-s", SCHED, "-s", "managed")
    page.goto(server.url)
    managed, sweep = row(page, managed_job), row(page, booth_sweep.handle)
    expect(managed.locator(".state")).to_have_text("SUCCEEDED")
    expect(page.locator("#jobs-body tr")).to_have_count(2)  # 2 attempts and 6 trials are folded
    assert sweep.get_attribute("data-kind") == "sweep"
    assert sweep.locator("button.toggle").inner_text().endswith("6")

    managed.locator("button.toggle").click()
    attempts = page.locator(f'#jobs-body tr[data-parent="{managed_job}"]')
    expect(attempts).to_have_count(2)
    assert attempts.locator(".state").all_inner_texts() == ["FAILED", "SUCCEEDED"]
    assert [name.rsplit("-", 1)[1] for name in attempts.locator("a").all_inner_texts()] == ["0", "1"]
    sweep.locator("button.toggle").click()
    trials = page.locator(f'#jobs-body tr[data-parent="{booth_sweep.handle}"]')
    expect(trials).to_have_count(6)
    assert trials.locator(".state").all_inner_texts() == ["SUCCEEDED"] * 6
    page.screenshot(path=str(shots / "jobs-grouped.png"), full_page=True)

    managed.locator("button.toggle").click()  # folds again
    expect(attempts).to_have_count(0)
    sweep.locator("a").click()
    expect(page.locator("#trials tbody tr")).to_have_count(6)


def test_the_sweep_page_plots_the_metric_against_each_parameter(
    page: Any, dashboard: Any, booth_sweep: Any, shots: Path
) -> None:
    server = dashboard("-s", SCHED)
    page.goto(server.url + "#/sweeps")
    page.click(f"#sweeps a:text-is('{booth_sweep.handle.rsplit('/', 1)[1]}')")
    page.wait_for_selector("#trials tbody tr")
    assert page.locator("#trials tbody tr").count() == 6
    assert page.locator("#trials tbody .state").all_inner_texts() == ["SUCCEEDED"] * 6
    plots = page.locator("#plots svg")
    assert plots.count() == 2  # booth_eval against x1, against x2
    assert [plots.nth(i).get_attribute("aria-label") for i in range(2)] == [
        "booth_eval against x1",
        "booth_eval against x2",
    ]
    assert plots.nth(0).locator("circle").count() == 6
    assert plots.nth(0).locator("circle.best").count() == 1  # (1, 3): booth_eval 0
    page.screenshot(path=str(shots / "sweep.png"), full_page=True)


@pytest.mark.slurm
def test_a_job_on_the_live_slurm_cluster_shows_beside_local_ones(
    page: Any,
    dashboard: Any,
    runner: Any,
    jobs: dict[str, str],
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env = live_backend_env("TORCHX_TEST_SLURM", "slurm")
    for key in ("PATH", "SLURM_CONF"):
        if env.get(key):
            monkeypatch.setenv(key, env[key])
    require_answer(["scontrol", "ping"], "slurmctld", lambda out, _: "is UP" in out, timeout=10)
    cfg = {
        "partition": env.get("TORCHX_TEST_SLURM_PARTITION", "debug"),
        "job_dir": str(tmp_path_factory.mktemp("slurm-dash")),
    }
    app = command_app(
        "echo",
        "hello from slurm",
        name="dash-slurm",
        role="dash-slurm",
        image=cfg["job_dir"],
        resource=Resource(cpu=1, gpu=0, memMB=100),
    )
    handle = runner.run(app, "slurm", cfg)
    status = runner.wait(handle, wait_interval=1, timeout=180)
    assert status is not None and status.state.name == "SUCCEEDED"

    server = dashboard("-s", SCHED, "-s", "slurm")
    page.goto(server.url + "#/?scheduler=slurm&q=" + quote(handle, safe=""))  # slurm lists apps by role name
    assert row(page, handle).locator(".state").inner_text() == "SUCCEEDED"
    page.goto(server.url)
    assert row(page, jobs["live"]).locator(".state").inner_text() == "RUNNING"
    page.goto(job_url(server, handle))
    expect(page.locator("#log")).to_contain_text("hello from slurm")
    assert page.locator("#job-title .state").inner_text() == "SUCCEEDED"
    assert page.locator("#replicas tbody tr .state").all_inner_texts() == ["SUCCEEDED"]
