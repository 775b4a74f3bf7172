"""Measures torchx dashboard's targets (needs torchx-dashboard[test], torchx-sched-local; the page
latency also needs Debian's chromium).

    python benchmarks/dashboard/bench_dashboard.py [--jobs 1000] [--no-browser]

* listing: 1,000 finished local_cwd jobs (``/bin/true``), ``GET /api/jobs?limit=1000`` against a
  running ``torchx dashboard -s local_cwd``: the first request and the median of 10 after, as the
  server times itself (its ``Server-Timing`` header: listing, filtering and JSON) and as a client
  on the same machine sees it. Target < 1 s.
* memory: the server's RSS (``/proc/PID/status`` VmRSS) after those listings and after reading
  the detail of 50 jobs. Target < 80 MB.
* log latency: a running job prints ``stamp <unix time>`` every 0.25 s; how long until the line
  is in the open job page (a MutationObserver in Chromium notes when it lands), and, without a
  browser, until the Server-Sent Event the page reads arrives. Target < 2 s.

Every run uses a fresh state directory under a temporary directory (removed afterwards).
"""

from __future__ import annotations

import argparse
import json
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from urllib.parse import quote

STAMPER = "import time\nwhile True:\n    print(f'stamp {time.time():.3f}', flush=True)\n    time.sleep(0.25)"


def start_server(env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "torchx", "dashboard", "--port", "0", "-s", "local_cwd"],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if select.select([proc.stdout], [], [], 0.5)[0]:
            line = proc.stdout.readline()
            if line.startswith("torchx dashboard: http"):
                return proc, line.split()[2]
    proc.kill()
    raise SystemExit("bench: torchx dashboard did not start")


def server_ms(response: object) -> float:
    """The server's own time of a listing (its ``Server-Timing: list;dur=MS`` header)."""
    return float(response.headers["server-timing"].split("dur=", 1)[1])  # type: ignore[attr-defined]


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def sse_latency(url: str, handle: str, count: int = 20) -> list[float]:
    import httpx2 as httpx

    out: list[float] = []
    opened = time.time()
    with httpx.stream("GET", f"{url}api/jobs/{quote(handle, safe='')}/logs", params={"follow": "1"}, timeout=30) as r:
        for line in r.iter_lines():
            if line.startswith("data: "):
                text = json.loads(line[6:])["line"]
                stamp = float(text.split()[1]) if text.startswith("stamp ") else 0.0
                if stamp > opened:  # lines printed before the stream opened come first, as a backlog
                    out.append(time.time() - stamp)
                    if len(out) >= count:
                        break
    return out


def page_latency(url: str, handle: str, seconds: float = 8) -> list[float]:
    from playwright.sync_api import sync_playwright

    chromium = os.environ.get("TORCHX_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page()
        page.goto(f"{url}#/job/{quote(handle, safe='')}")
        page.wait_for_selector("#log")
        page.evaluate(
            """() => {
              window.__arrivals = {};
              const log = document.querySelector('#log');
              new MutationObserver(() => {
                for (const m of log.textContent.matchAll(/stamp (\\d+\\.\\d+)/g)) {
                  if (!(m[1] in window.__arrivals)) window.__arrivals[m[1]] = Date.now() / 1000;
                }
              }).observe(log, {childList: true, characterData: true, subtree: true});
            }"""
        )
        start = time.time()
        time.sleep(seconds)
        arrivals: dict[str, float] = page.evaluate("() => window.__arrivals")
        browser.close()
    return [arrived - float(stamp) for stamp, arrived in arrivals.items() if float(stamp) > start]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--no-browser", action="store_true", help="measure the log latency with an SSE client only")
    args = parser.parse_args()

    import httpx2 as httpx
    from torchx.runner import get_runner
    from torchx.specs import AppDef, Resource, Role

    tmp = tempfile.mkdtemp(prefix="bench-dashboard-")
    os.environ["TORCHX_LOCAL_STATE_DIR"] = os.path.join(tmp, "state")
    env = dict(os.environ)
    proc = None
    live = None
    try:
        with get_runner() as runner:
            t0 = time.monotonic()
            app = AppDef("true", [Role("t", image=tmp, entrypoint="/bin/true", resource=Resource(1, 0, 64))])
            handles = [runner.run(app, "local_cwd") for _ in range(args.jobs)]
            for h in handles:
                runner.wait(h, wait_interval=0.05)
            print(f"submitted and finished {args.jobs} jobs in {time.monotonic() - t0:.1f} s", file=sys.stderr)
            live = runner.run(
                AppDef("stamper", [Role("s", image=tmp, entrypoint=sys.executable, args=["-c", STAMPER])]), "local_cwd"
            )

            proc, url = start_server(env)
            with httpx.Client(timeout=60) as client:
                client.get(f"{url}api/config").raise_for_status()  # the client's own first-use cost
                t = time.monotonic()
                first = client.get(f"{url}api/jobs", params={"limit": 1000})
                cold = time.monotonic() - t
                assert first.json()["total"] == args.jobs + 1, first.text[:300]
                server = [server_ms(first)]
                warm = []
                for _ in range(10):
                    t = time.monotonic()
                    response = client.get(f"{url}api/jobs", params={"limit": 1000})
                    warm.append(time.monotonic() - t)
                    server.append(server_ms(response))
            rss_list = rss_mb(proc.pid)
            for h in handles[:50]:
                httpx.get(f"{url}api/jobs/{quote(h, safe='')}", timeout=60).raise_for_status()
            rss_detail = rss_mb(proc.pid)
            print(
                f"list {args.jobs + 1} jobs, client: first {cold * 1000:.0f} ms, median of 10 after"
                f" {statistics.median(warm) * 1000:.0f} ms; server (Server-Timing): first {server[0]:.0f} ms,"
                f" median {statistics.median(server[1:]):.0f} ms, max {max(server):.0f} ms"
            )
            print(f"server RSS: {rss_list:.1f} MB after listing, {rss_detail:.1f} MB after 50 job details")
            sse = sse_latency(url, live)
            print(
                f"log line -> SSE client: median {statistics.median(sse):.3f} s, max {max(sse):.3f} s ({len(sse)} lines)"
            )
            if not args.no_browser:
                seen = page_latency(url, live)
                print(
                    f"log line -> open page: median {statistics.median(seen):.3f} s, max {max(seen):.3f} s ({len(seen)} lines)"
                )
            print(f"server RSS at the end: {rss_mb(proc.pid):.1f} MB")
            runner.cancel(live)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=15)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
