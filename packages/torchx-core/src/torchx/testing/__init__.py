"""Helpers for testing torchx and its plugins with pytest.

    from torchx.testing import isolate, live_backend_env, unavailable

    @pytest.fixture(autouse=True)
    def isolated(tmp_path, monkeypatch):
        return isolate(tmp_path, monkeypatch)

Also here: running the CLI (:func:`run_cli`, :func:`run_torchx`), one-role apps
(:func:`command_app`, :func:`python_app`) and real processes (:func:`eventually`,
:func:`alive`, :func:`children`, :func:`proc_status`, :func:`small_tmpfs` ...). Shared test
helpers live here or in fixtures, never in a module a test imports by a bare name: one
``pytest`` run covers every package's tests (``--import-mode=importlib``).

Live-backend tests read the environment that ``scripts/backends/services.sh`` writes
(``$TORCHX_SERVICES_ENV``, default ``/tmp/torchx-services/env.sh``). They skip when the
backend is absent, and fail instead when ``TORCHX_REQUIRE_LIVE=1`` (CI sets it).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from torchx.testing.apps import command_app, python_app
from torchx.testing.cli import CliResult, run_cli, run_torchx
from torchx.testing.processes import (
    alive,
    children,
    cmdline,
    eventually,
    fill_disk,
    proc_status,
    processes_naming,
    run_python,
    small_tmpfs,
    unmount,
)

if TYPE_CHECKING:
    import pytest

    from torchx.specs import Role

__all__ = [
    "PASSTHROUGH_ARGS",
    "PROBE_SCRIPT",
    "CliResult",
    "alive",
    "children",
    "cmdline",
    "command_app",
    "eventually",
    "fill_disk",
    "hostile_value",
    "install_distribution",
    "isolate",
    "live_backend_env",
    "macro_probe",
    "require_answer",
    "macro_probe_output",
    "measure_scheduler",
    "proc_status",
    "processes_naming",
    "python_app",
    "read_env_file",
    "run_cli",
    "run_python",
    "run_torchx",
    "services_env_file",
    "small_tmpfs",
    "unavailable",
    "unique_name",
    "unmount",
]

ENV_REQUIRE_LIVE = "TORCHX_REQUIRE_LIVE"


def _handle_ctrl_c_as_in_a_terminal() -> None:
    """A test run started in the background by a non-interactive shell (``pytest ... &`` in a
    script, CI started with ``&``) inherits SIGINT ignored, and so does every process it starts:
    a shell started ignoring it cannot even trap it, so a test that sends one (a Ctrl-C, an LSF
    ``bkill``) would wait for nothing. Python's own handler is put back (the processes a test
    starts then get the default)."""
    import signal

    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        try:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        except ValueError:  # imported outside the main thread: nothing to do there
            pass


_handle_ctrl_c_as_in_a_terminal()


def services_env_file() -> Path:
    """Where ``scripts/backends/services.sh`` writes the backends' environment."""
    return Path(os.environ.get("TORCHX_SERVICES_ENV", "/tmp/torchx-services/env.sh"))


def isolate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Gives the test its own HOME (and XDG dirs), cwd, caches and local-scheduler state, no
    ``.torchxconfig``, and a fresh plugin registry (restored afterwards). Returns the cwd.

    Ctrl-C is handled as in a terminal in every test process that imports this module (see
    :func:`_handle_ctrl_c_as_in_a_terminal`)."""
    import torchx.plugins
    from torchx.runner import config

    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir(exist_ok=True)
    work.mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".state"))
    monkeypatch.setenv("TORCHX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TORCHX_LOCAL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("TORCHXCONFIG", raising=False)
    monkeypatch.chdir(work)
    monkeypatch.setattr(config, "_parsed", {})
    monkeypatch.setattr(torchx.plugins, "_registry", None)
    return work


def read_env_file(path: Path | str) -> dict[str, str]:
    """The variables of a shell env file: ``export K=V`` sets, ``unset K ...`` drops."""
    env: dict[str, str] = {}
    with open(path) as f:
        for line in f:
            words = shlex.split(line, comments=True)
            if len(words) >= 2 and words[0] == "export" and "=" in words[1]:
                key, _, value = words[1].partition("=")
                env[key] = value
            elif words and words[0] == "unset":
                for key in words[1:]:
                    env.pop(key, None)
    return env


def unique_name(prefix: str) -> str:
    """``<prefix>-<pid>-<random>``: a name for an object a live test makes (a namespace, a
    queue) that no other test of this or another run uses, also one made in the same second
    while its predecessor is still being deleted."""
    import uuid

    return f"{prefix}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def unavailable(reason: str) -> NoReturn:
    """Skips the test because a live backend is missing, or fails it under ``TORCHX_REQUIRE_LIVE=1``."""
    import pytest

    if os.environ.get(ENV_REQUIRE_LIVE) == "1":
        pytest.fail(f"live backend required ({ENV_REQUIRE_LIVE}=1) but unavailable: {reason}")
    pytest.skip(reason)


def require_answer(argv: list[str], what: str, answered: Callable[[str, int], bool], timeout: float = 15) -> None:
    """Runs a live backend's client command (``scontrol ping``, ``lsid``) and calls
    :func:`unavailable` unless ``answered(stdout, returncode)`` says ``what`` answered."""
    import subprocess

    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        unavailable(f"{' '.join(argv)} failed: {e}")
    if not answered(proc.stdout, proc.returncode):
        unavailable(f"{what} does not answer: {proc.stdout.strip() or proc.stderr.strip()}")


def live_backend_env(marker: str, service: str) -> dict[str, str]:
    """The environment of a running backend: the process environment when it sets ``marker=1``,
    else the services env file. Calls :func:`unavailable` when the backend is not up.

    Args:
        marker: the variable that says the backend is up, e.g. ``TORCHX_TEST_SLURM``
        service: its name for ``scripts/backends/services.sh up <service>``
    """
    if os.environ.get(marker) == "1":
        return dict(os.environ)
    path = services_env_file()
    if not path.is_file():
        unavailable(f"{path} is missing; run `scripts/backends/services.sh up {service}`")
    env = {**os.environ, **read_env_file(path)}  # the file's settings win over the shell's
    if env.get(marker) != "1":
        unavailable(f"{path} says {service} is down; run `scripts/backends/services.sh up {service}`")
    return env


def measure_scheduler(scheduler: str, cfg: dict[str, str], submits: bool = True) -> None:
    """Prints a scheduler's figures against its live backend (for a plugin's ``bench_*.py``).

    * ``Runner.dryrun`` of one role with 1000 replicas: median of 20 after a warm-up;
    * with ``submits``: for a 1- and a 2-replica ``sleep 30`` job, the submit time, the time
      until ``status`` says RUNNING, and the median of 20 ``status`` calls while it runs
      (the job is cancelled afterwards).
    """
    import functools
    import statistics
    import time

    from torchx import specs
    from torchx.runner import get_runner

    def app(replicas: int) -> specs.AppDef:
        role = specs.Role(
            "w",
            image="/tmp",
            entrypoint="bash",
            args=["-c", "sleep 30"],
            num_replicas=replicas,
            resource=specs.Resource(cpu=1, gpu=0, memMB=64),
        )
        return specs.AppDef("bench", [role])

    def median_ms(call: Callable[[], object]) -> float:
        times = []
        for _ in range(20):
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
        return statistics.median(times) * 1000

    with get_runner("bench") as runner:
        big = app(1000)
        runner.dryrun(big, scheduler, cfg)
        print(
            f"dryrun 1x1000 replicas (Runner.dryrun): median {median_ms(lambda: runner.dryrun(big, scheduler, cfg)):.1f} ms"
        )
        for replicas in (1, 2) if submits else ():
            start = time.perf_counter()
            handle = runner.run(app(replicas), scheduler, cfg)
            submitted = time.perf_counter() - start
            while (status := runner.status(handle)) is not None and status.state != specs.AppState.RUNNING:
                time.sleep(0.02)
            running = time.perf_counter() - start
            print(f"{replicas}-replica job: submit {submitted * 1000:.0f} ms, RUNNING after {running:.2f} s")
            print(f"  status of the running job: median {median_ms(functools.partial(runner.status, handle)):.1f} ms")
            runner.cancel(handle)


def install_distribution(src: Path | str, target: Path | str) -> Path:
    """pip-installs the distribution at ``src`` (without its dependencies) into the directory
    ``target``, not into the environment; put ``target`` on ``sys.path``/``PYTHONPATH`` to use it.

    Raises:
        RuntimeError: pip failed (its output is in the message)
    """
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), str(src)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"cannot install the distribution {src}:\n{proc.stdout}{proc.stderr}")
    return Path(target)


#: arguments a shell (or a macro filler) would change; each must reach the process byte for byte
PASSTHROUGH_ARGS = [
    "$$",
    "$HOME",
    "it's",
    'say "hi"',
    "a  b",
    "new\nline",
    "ü€ 🚀",
    "`id`",
    "$(id)",
    "${x:-y}",
    "\\",
    "",
]

#: shell code printing each argument and then ``$PROBE_ENV`` as ``<text>`` lines, and PWNED if ``$MARK`` exists
PROBE_SCRIPT = 'for a in "$@" "$PROBE_ENV"; do printf "<%s>\\n" "$a"; done; if [ -e "$MARK" ]; then echo PWNED; fi'


def hostile_value(marker: str) -> str:
    """A macro value (a directory, an id) that runs ``touch marker`` wherever a shell parses it.

    Holds ``'``, ``"``, ``$(...)``, backticks, ``$$``, ``$HOME``, spaces, a newline and non-ASCII.
    """
    return f"p'$(touch {marker})'x \"$(touch {marker})\" `touch {marker}` $$ $HOME a  b\nc ü€"


def _probe_words(img_root: str, app_id: str, replica_id: str) -> list[str]:
    return [img_root, app_id, replica_id, f"{img_root}/{app_id}-{replica_id}:$$", *PASSTHROUGH_ARGS]


def macro_probe(image: str, marker: str, name: str = "probe", **kwargs: Any) -> Role:
    """A role that runs :data:`PROBE_SCRIPT` the way shell components do (``macros.shell_args``).

    Its words are each macro, a word mixing them with ``$$``, and :data:`PASSTHROUGH_ARGS`;
    ``PROBE_ENV`` holds the macros too. Compare its output with :func:`macro_probe_output`;
    ``MARK`` (``marker``) is the file a command substitution in a value would create.
    """
    from torchx.specs import Role, macros

    words = _probe_words(macros.img_root, macros.app_id, macros.replica_id)
    env_value = macros.escape(f"{macros.app_id}|{macros.img_root}|$$", keep=macros.NAMES)
    return Role(
        name,
        image,
        entrypoint="sh",
        args=macros.shell_args(PROBE_SCRIPT, words, name="probe"),
        env={"MARK": marker, "PROBE_ENV": env_value},
        **kwargs,
    )


def macro_probe_output(img_root: str, app_id: str, replica_id: int | str) -> str:
    """What a :func:`macro_probe` replica prints when every value arrived as data."""
    words = [*_probe_words(img_root, app_id, str(replica_id)), f"{app_id}|{img_root}|$$"]
    return "".join(f"<{w}>\n" for w in words)
