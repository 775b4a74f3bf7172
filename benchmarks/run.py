#!/usr/bin/env python3
"""Times our torchx side by side with upstream TorchX 0.7.0 and checks the speed targets.

    python3 benchmarks/run.py [--scenarios 1,3,run-echo] [--repeat N] [--json out.json]

Builds (or reuses) venvs under .bench/ in the repository root, runs every scenario with
ours and upstream alternating, and prints medians, ratios and PASS/FAIL per target.
See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench.envs import UPSTREAM_REQUIREMENT, Envs  # noqa: E402
from bench.report import ERROR, FAIL, PASS, Row, Side, render_table, row, to_json  # noqa: E402
from bench.scenarios import SCENARIOS, Ctx, Scenario  # noqa: E402
from bench.timing import Sandbox  # noqa: E402


def _log(msg: str) -> None:
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def _default_python() -> str:
    """The base interpreter behind this one (a venv's or pyenv shim's real binary)."""
    candidate = Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    return str(candidate) if candidate.exists() else os.path.realpath(sys.executable)


def _select(spec: str | None) -> list[Scenario]:
    if not spec:
        return list(SCENARIOS)
    by_key = {s.number: s for s in SCENARIOS} | {s.name: s for s in SCENARIOS}
    chosen = []
    for key in (k.strip() for k in spec.split(",") if k.strip()):
        if key not in by_key:
            names = ", ".join(f"{s.number}={s.name}" for s in SCENARIOS)
            raise SystemExit(f"run.py: error: unknown scenario {key!r}; choose from {names}")
        if by_key[key] not in chosen:
            chosen.append(by_key[key])
    return chosen


def _git_commit(repo: Path) -> str:
    proc = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    )
    dirty = subprocess.run(
        ["git", "-C", str(repo), "status", "--porcelain", "--", "packages"], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        return "not a git checkout"
    return proc.stdout.strip() + (" + uncommitted changes in packages/" if dirty.stdout.strip() else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--scenarios",
        help="comma-separated numbers or names (default: all): " + ", ".join(f"{s.number}={s.name}" for s in SCENARIOS),
    )
    parser.add_argument("--repeat", type=int, default=15, help="timed runs per command (default 15)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed runs per command first (default 2)")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE")
    parser.add_argument("--python", default=_default_python(), help="interpreter the venvs are made from")
    parser.add_argument("--repo", type=Path, default=HERE.parent, help="the torchx monorepo (default: this one)")
    args = parser.parse_args()
    if args.repeat < 1 or args.warmup < 0:
        parser.error("--repeat must be >= 1 and --warmup >= 0")
    chosen = _select(args.scenarios)

    repo = args.repo.resolve()
    envs = Envs(repo, args.python, _log)
    sandbox = Sandbox()
    ctx = Ctx(envs, sandbox, args.repeat, args.warmup, _log, HERE / "bench" / "probe.py")
    started = time.time()
    load_before = os.getloadavg()
    rows: list[Row] = []
    try:
        for scenario in chosen:
            _log(f"scenario {scenario.number} ({scenario.name})")
            t0 = time.perf_counter()
            try:
                rows.extend(scenario.fn(ctx))
            except Exception as e:  # one broken scenario must not lose the others' results
                rows.append(
                    row(
                        scenario.number,
                        scenario.name,
                        Side(text=f"error: {type(e).__name__}: {e}"),
                        Side(text="-"),
                        None,
                    )
                )
            _log(f"scenario {scenario.number} took {time.perf_counter() - t0:.1f} s")
    finally:
        sandbox.close()
    elapsed = time.time() - started
    load_after = os.getloadavg()

    present = ", ".join(envs.present_packages()) or "none"
    print(f"torchx benchmarks: ours ({_git_commit(repo)}; packages: {present}) vs upstream {UPSTREAM_REQUIREMENT}")
    print(
        f"python {platform.python_version()} from {args.python}; {os.cpu_count()} cores; repeat {args.repeat},"
        f" warm-up {args.warmup}; load avg {load_before[0]:.2f} -> {load_after[0]:.2f}; {elapsed:.0f} s"
    )
    print("ratio = upstream median / ours median. The machine is shared: expect ~10-20% noise between runs.")
    print()
    print(render_table(rows))
    counts = {s: sum(1 for r in rows if r.status == s) for s in (PASS, FAIL, ERROR, "skip", "info")}
    print()
    print("summary: " + ", ".join(f"{n} {s}" for s, n in counts.items()))
    if args.json:
        meta = {
            "commit": _git_commit(repo),
            "upstream": UPSTREAM_REQUIREMENT,
            "repeat": args.repeat,
            "warmup": args.warmup,
            "loadavg": [load_before[0], load_after[0]],
            "seconds": elapsed,
            "packages": list(envs.present_packages()),
        }
        Path(args.json).write_text(json.dumps({"meta": meta, "rows": to_json(rows)}, indent=1) + "\n")
    return 1 if counts[FAIL] or counts[ERROR] else 0


if __name__ == "__main__":
    sys.exit(main())
