"""The in-job programs (torchx_components.apps.*) run for real, and the components that start them."""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from torchx.runner.api import validate_app
from torchx.specs.builders import materialize_appdef
from torchx_components import metrics, serve


def run_app(name: str, *args: str, timeout: float = 60, block_fsspec: bool = False) -> subprocess.CompletedProcess[str]:
    """Runs ``python -m torchx_components.apps.<name> ARGS`` (optionally as if fsspec were not installed)."""
    module = f"torchx_components.apps.{name}"
    if block_fsspec:
        code = f"import runpy, sys; sys.modules['fsspec'] = None; sys.argv[0] = {module!r}; runpy.run_module({module!r}, run_name='__main__')"
        cmd = [sys.executable, "-c", code, *args]
    else:
        cmd = [sys.executable, "-m", module, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


# ---------------------------------------------------------------- copy
def test_copy_file_and_tree(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "a.txt").write_text("A")
    (src / "sub" / "b.bin").write_bytes(b"\x00\x01" * 100_000)
    out = run_app("copy", "--src", str(src / "a.txt"), "--dst", str(tmp_path / "x" / "y.txt"))
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "x" / "y.txt").read_text() == "A"
    out = run_app("copy", "--src", str(src / "a.txt"), "--dst", str(tmp_path / "x") + "/")
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "x" / "a.txt").read_text() == "A"
    out = run_app("copy", "--src", f"file://{src}", "--dst", str(tmp_path / "tree"))
    assert out.returncode == 0, out.stderr
    assert "copied 2 file(s)" in out.stdout
    assert (tmp_path / "tree" / "sub" / "b.bin").read_bytes() == b"\x00\x01" * 100_000


def test_copy_memory_url_in_process() -> None:
    fsspec = pytest.importorskip("fsspec")
    from torchx_components.apps.copy import copy

    with fsspec.open("memory://in/model.pt", "wb") as f:
        f.write(b"weights")
    assert copy("memory://in/model.pt", "memory://out/model.pt") == 1
    with fsspec.open("memory://out/model.pt", "rb") as f:
        assert f.read() == b"weights"


def test_copy_errors(tmp_path: Path) -> None:
    out = run_app("copy", "--src", str(tmp_path / "missing"), "--dst", str(tmp_path / "d"))
    assert out.returncode == 1
    assert out.stderr.strip() == f"copy: error: {tmp_path / 'missing'} does not exist"
    out = run_app("copy", "--src", str(tmp_path), "--dst", str(tmp_path / "d"), block_fsspec=True)
    assert out.returncode == 1
    assert (
        "copy: error: fsspec is not installed in the job's environment: install torchx-components[copy]" in out.stderr
    )


# ---------------------------------------------------------------- booth
def test_booth_writes_result(tmp_path: Path) -> None:
    out = run_app("booth", "--x1", "1", "--x2", "3", "--trial_idx", "0", "--tracker_base", str(tmp_path / "r"))
    assert out.returncode == 0, out.stderr
    assert json.loads((tmp_path / "r" / "0.json").read_text()) == {"booth_eval": 0.0}
    # a local tracker_base needs no fsspec; (2 + 2*2 - 7)^2 + (2*2 + 2 - 5)^2 = 1 + 1
    out = run_app(
        "booth", "--x1", "2", "--x2", "2", "--trial_idx", "5", "--tracker_base", str(tmp_path / "r"), block_fsspec=True
    )
    assert out.returncode == 0, out.stderr
    assert json.loads((tmp_path / "r" / "5.json").read_text()) == {"booth_eval": 2.0}


def test_booth_url_needs_fsspec(tmp_path: Path) -> None:
    out = run_app("booth", "--x1", "0", "--x2", "0", "--tracker_base", f"file://{tmp_path}/r", block_fsspec=True)
    assert out.returncode == 1
    assert "fsspec is not installed" in out.stderr
    pytest.importorskip("fsspec")
    out = run_app("booth", "--x1", "0", "--x2", "0", "--tracker_base", f"file://{tmp_path}/r")
    assert out.returncode == 0, out.stderr
    assert json.loads((tmp_path / "r" / "0.json").read_text()) == {"booth_eval": 74.0}


# ---------------------------------------------------------------- process_monitor / metrics.tensorboard
def test_tensorboard_component() -> None:
    app = materialize_appdef(
        metrics.tensorboard,
        [
            "--logdir",
            "s3://b/tb",
            "--timeout",
            "60",
            "--port",
            "7007",
            "--exit_on_file",
            "s3://b/done",
        ],
    )
    validate_app(app)
    role = app.roles[0]
    assert role.entrypoint == "python"
    assert role.args == [
        "-m",
        "torchx.apps.utils.process_monitor",
        "--timeout",
        "60.0",
        "--start_on_file",
        "",
        "--exit_on_file",
        "s3://b/done",
        "--",
        "tensorboard",
        "--bind_all",
        "--port",
        "7007",
        "--logdir",
        "s3://b/tb",
    ]
    assert role.port_map == {"http": 7007}


def test_upstream_program_paths_run_the_programs() -> None:
    # what the components run (TorchX's module paths) starts these programs, arguments and exit code kept
    child = [sys.executable, "-c", "print('hi'); raise SystemExit(5)"]
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "torchx.apps.utils.process_monitor",
            "--timeout",
            "30",
            "--poll_interval",
            "0.1",
            "--",
            *child,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (out.returncode, out.stdout) == (5, "hi\n"), out.stderr
    out = subprocess.run(
        [sys.executable, "-m", "torchx.apps.serve.serve", "--help"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert "--management_api" in out.stdout


def test_process_monitor_passes_exit_code() -> None:
    out = run_app(
        "process_monitor",
        "--timeout",
        "30",
        "--poll_interval",
        "0.1",
        "--",
        sys.executable,
        "-c",
        "print('hi'); raise SystemExit(3)",
    )
    assert out.returncode == 3
    assert "hi" in out.stdout


def test_process_monitor_start_and_exit_files(tmp_path: Path) -> None:
    start, done, marker = tmp_path / "start", tmp_path / "done", tmp_path / "ran"
    script = f"import pathlib, time; pathlib.Path({str(marker)!r}).touch(); time.sleep(60)"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "torchx_components.apps.process_monitor",
            "--timeout",
            "60",
            "--poll_interval",
            "0.1",
            "--start_on_file",
            str(start),
            "--exit_on_file",
            str(done),
            "--",
            sys.executable,
            "-c",
            script,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(0.5)
        assert not marker.exists()  # not started before the start file exists
        start.touch()
        deadline = time.monotonic() + 20
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists()
        began = time.monotonic()
        done.touch()
        assert proc.wait(20) == 0
        assert time.monotonic() - began < 15
    finally:
        proc.kill()
        proc.communicate()


def test_process_monitor_timeout_and_usage() -> None:
    began = time.monotonic()
    out = run_app("process_monitor", "--timeout", "0.5", "--poll_interval", "0.1", "--", "sleep", "30")
    assert out.returncode == 0
    assert time.monotonic() - began < 15
    assert "timeout (0.5s) reached" in out.stdout
    out = run_app("process_monitor", "--timeout", "1", "sleep", "1")
    assert out.returncode == 2
    assert "give the command after --" in out.stderr


# ---------------------------------------------------------------- torchserve
@pytest.fixture
def management_api() -> Iterator[tuple[str, list[dict[str, object]]]]:
    """A stand-in TorchServe management API: on POST /models it downloads the archive from ``url``."""
    calls: list[dict[str, object]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            parsed = urllib.parse.urlsplit(self.path)
            query = dict(urllib.parse.parse_qsl(parsed.query))
            with urllib.request.urlopen(query["url"], timeout=10) as r:
                body = r.read()
            calls.append({"path": parsed.path, "query": query, "body": body})
            status = 200 if query.get("model_name") != "bad" else 400
            self.send_response(status)
            self.end_headers()
            self.wfile.write(json.dumps({"status": "registered" if status == 200 else "bad model"}).encode())

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}", calls
    server.shutdown()
    server.server_close()


def test_torchserve_component() -> None:
    app = materialize_appdef(
        serve.torchserve,
        [
            "--model_path",
            "s3://b/m.mar",
            "--management_api",
            "http://ts:8081",
            "--params",
            "model_name=m,initial_workers=2",
            "--dryrun",
            "--port",
            "9000",
        ],
    )
    validate_app(app)
    role = app.roles[0]
    assert (app.name, role.name) == ("torchx-torchserve", "worker")
    assert role.args == [
        "-m",
        "torchx.apps.serve.serve",
        "--model_path",
        "s3://b/m.mar",
        "--management_api",
        "http://ts:8081",
        "--port",
        "9000",
        "--model_name",
        "m",
        "--initial_workers",
        "2",
        "--dryrun",
    ]
    assert role.port_map == {"model-download": 9000}
    default = serve.torchserve("m.mar", "http://ts:8081").roles[0]
    assert "--port" not in default.args
    assert default.port_map == {"model-download": 8222}


def test_torchserve_registers_model(tmp_path: Path, management_api: tuple[str, list[dict[str, object]]]) -> None:
    url, calls = management_api
    model = tmp_path / "my model.mar"
    model.write_bytes(b"MAR" * 1000)
    # the argument list the component builds, run as the job would run it
    args = (
        materialize_appdef(
            serve.torchserve,
            [
                "--model_path",
                str(model),
                "--management_api",
                url,
                "--params",
                "model_name=m,initial_workers=1",
                "--port",
                "0",
            ],
        )
        .roles[0]
        .args
    )
    out = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert '"registered"' in out.stdout
    assert len(calls) == 1
    assert calls[0]["path"] == "/models"
    query = calls[0]["query"]
    assert isinstance(query, dict)
    assert query["model_name"] == "m"
    assert query["initial_workers"] == "1"
    assert query["url"].endswith("/my%20model.mar")
    assert calls[0]["body"] == b"MAR" * 1000


def test_torchserve_reports_failures(tmp_path: Path, management_api: tuple[str, list[dict[str, object]]]) -> None:
    url, calls = management_api
    model = tmp_path / "m.mar"
    model.write_bytes(b"x")
    out = run_app(
        "torchserve", "--model_path", str(model), "--management_api", url, "--port", "0", "--param", "model_name=bad"
    )
    assert out.returncode == 1
    assert "registration failed: HTTP 400" in out.stderr
    assert "bad model" in out.stderr
    out = run_app("torchserve", "--model_path", str(model), "--management_api", url, "--port", "0", "--dryrun")
    assert out.returncode == 0
    assert out.stdout.startswith(f"POST {url}/models?url=http")
    assert len(calls) == 1  # the dry run sent nothing
    out = run_app("torchserve", "--model_path", str(tmp_path / "nope.mar"), "--management_api", url, "--port", "0")
    assert out.returncode == 1
    assert "No such file" in out.stderr
