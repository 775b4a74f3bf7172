"""Runs a command between two marker files, for at most a time limit (the program behind ``metrics.tensorboard``).

Usage::

    python -m torchx_components.apps.process_monitor --timeout 3600 \\
        --start_on_file s3://bucket/run/started --exit_on_file s3://bucket/run/done -- tensorboard --logdir ...

Waits for ``--start_on_file`` (if given) to exist, starts the command, and stops it when
``--exit_on_file`` appears or ``--timeout`` seconds have passed since the monitor started
(both a normal end: exit 0). If the command ends by itself, its exit code is returned.
Marker files may be fsspec URLs when fsspec is installed.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
from types import FrameType

from torchx_components.apps._fs import MissingFsspecError, exists

_STOP_GRACE_S = 10.0


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(_STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def monitor(cmd: list[str], timeout: float, poll_interval: float, start_on_file: str, exit_on_file: str) -> int:
    """Runs ``cmd`` under the rules above; returns the exit code."""
    deadline = time.monotonic() + timeout
    if start_on_file:
        print(f"process_monitor: waiting for {start_on_file}", flush=True)
        while not exists(start_on_file):
            if time.monotonic() >= deadline:
                print(f"process_monitor: {start_on_file} did not appear within {timeout}s", file=sys.stderr)
                return 1
            time.sleep(poll_interval)
    proc = subprocess.Popen(cmd)

    def on_signal(signum: int, frame: FrameType | None) -> None:
        _stop(proc)
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    while True:
        code = proc.poll()
        if code is not None:
            return code
        if exit_on_file and exists(exit_on_file):
            print(f"process_monitor: {exit_on_file} appeared, stopping the command", flush=True)
            _stop(proc)
            return 0
        if time.monotonic() >= deadline:
            print(f"process_monitor: timeout ({timeout}s) reached, stopping the command", flush=True)
            _stop(proc)
            return 0
        time.sleep(poll_interval)


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(
        prog="torchx_components.apps.process_monitor",
        description=__doc__.splitlines()[0],
        usage="%(prog)s [options] -- COMMAND [ARGS...]",
    )
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds before the command is stopped")
    parser.add_argument("--poll_interval", type=float, default=1.0, help="seconds between checks")
    parser.add_argument("--start_on_file", default="", help="start the command once this file exists")
    parser.add_argument("--exit_on_file", default="", help="stop the command once this file exists")
    if "--" not in argv:
        parser.error("give the command after --")
    cut = argv.index("--")
    args = parser.parse_args(argv[:cut])
    cmd = argv[cut + 1 :]
    if not cmd:
        parser.error("the command after -- is empty")
    try:
        return monitor(cmd, args.timeout, args.poll_interval, args.start_on_file, args.exit_on_file)
    except (OSError, MissingFsspecError) as e:
        print(f"process_monitor: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
