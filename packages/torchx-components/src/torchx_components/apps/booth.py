"""Evaluates the Booth function and records the result (the program behind ``utils.booth``).

Usage: ``python -m torchx_components.apps.booth --x1 1 --x2 3 --trial_idx 0 --tracker_base DIR``
writes ``{"booth_eval": 0.0}`` to ``DIR/0.json``. ``DIR`` may be an fsspec URL when fsspec is
installed. When the job runs with trackers configured (``TORCHX_TRACKERS``), it also records
``booth_eval`` as metadata of its tracker run (so ``torchx sweep status --metric booth_eval``
finds the best trial).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from torchx_components.apps._fs import MissingFsspecError, open_file


def booth(x1: float, x2: float) -> float:
    """The Booth function: ``(x1 + 2*x2 - 7)^2 + (2*x1 + x2 - 5)^2`` (minimum 0 at (1, 3))."""
    return (x1 + 2 * x2 - 7) ** 2 + (2 * x1 + x2 - 5) ** 2


def result_path(tracker_base: str, trial_idx: int) -> str:
    """Where the result of trial ``trial_idx`` is written."""
    return f"{tracker_base.rstrip('/')}/{trial_idx}.json"


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; returns the exit code."""
    parser = argparse.ArgumentParser(prog="torchx_components.apps.booth", description=__doc__.splitlines()[0])
    parser.add_argument("--x1", type=float, required=True, help="first coordinate")
    parser.add_argument("--x2", type=float, required=True, help="second coordinate")
    parser.add_argument("--trial_idx", type=int, default=0, help="trial index (names the result file)")
    parser.add_argument("--tracker_base", required=True, help="directory or URL the result goes under")
    args = parser.parse_args(argv)
    value = booth(args.x1, args.x2)
    path = result_path(args.tracker_base, args.trial_idx)
    try:
        with open_file(path, "w") as f:
            json.dump({"booth_eval": value}, f)
    except (OSError, MissingFsspecError, ValueError) as e:
        print(f"booth: error: cannot write {path}: {e}", file=sys.stderr)
        return 1
    record_metric(value)
    print(f"booth({args.x1}, {args.x2}) = {value} -> {path}")
    return 0


def record_metric(value: float) -> None:
    """Records ``booth_eval`` in the job's tracker run, when trackers are configured and torchx is importable."""
    if not os.environ.get("TORCHX_TRACKERS"):
        return
    try:
        from torchx.tracker.api import app_run_from_env
    except ImportError:  # an image without torchx: the result file is still written
        return
    app_run_from_env().add_metadata(booth_eval=value)


if __name__ == "__main__":
    sys.exit(main())
