"""The benchmark scenarios: each times ours and upstream TorchX and returns result rows."""

from __future__ import annotations

import os
import re
import statistics
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from bench.envs import EnvError, Envs, Venv
from bench.report import Row, Side, Target, fmt_seconds, row
from bench.timing import Cmd, Runs, Sandbox, Stats, run_once, run_probe, time_commands

LOCAL = "torchx-sched-local"
COMPONENTS = "torchx-components"
#: modules ``torchx --help`` / ``torchx runopts local_cwd`` must not import
HEAVY_MODULES = ("docker", "kubernetes", "boto3", "botocore", "fsspec", "yaml", "ray")
#: a line of ``torchx run ... utils.echo --msg hi`` output that is the echoed ``hi``
_HI_LINE = re.compile(r"(?m)(^|\s)hi\s*$")


class Skip(Exception):
    """A side of a scenario cannot run (the message says why)."""


@dataclass
class Ctx:
    """What scenarios need: venvs, the sandbox, repetition counts, logging."""

    envs: Envs
    sandbox: Sandbox
    repeat: int
    warmup: int
    log: Callable[[str], None]
    probe: Path

    def venv(self, name: str) -> Venv:
        """A benchmark venv, or :class:`Skip` if it cannot be built."""
        try:
            return self.envs.get(name)
        except EnvError as e:
            raise Skip(f"venv {name}: {e}") from None

    def ours(self, *needs: str, venv: str = "ours") -> Venv:
        """Our venv ``venv``, or :class:`Skip` unless every distribution in ``needs`` is installed in it."""
        present = self.envs.present_packages()
        for need in needs:
            if need not in present:
                raise Skip(f"packages/{need} is missing")
        v = self.venv(venv)
        for need in needs:
            if need in v.failed:
                raise Skip(f"{need} does not install: {v.failed[need]}")
            if need not in v.packages:
                raise Skip(f"{need} is not installed in .bench/{venv}")
        return v

    def cmd(self, label: str, venv: Venv, argv: list[str], state: str, **env: str) -> Cmd:
        """A command run in the sandbox with ``venv`` (local jobs go to state dir ``state``)."""
        return Cmd(label, argv, self.sandbox.env(venv, state, **env), self.sandbox.cwd)


def _try(get: Callable[[], Venv]) -> tuple[Venv | None, str | None]:
    try:
        return get(), None
    except Skip as e:
        return None, str(e)


def _side(runs: Runs | None, skip: str | None) -> Side:
    if skip is not None:
        return Side(text=f"skipped: {skip}")
    if runs is None or runs.error or runs.stats is None:
        return Side(text=f"error: {runs.error if runs else 'not run'}")
    return Side(stats=runs.stats)


def _torchx(venv: Venv, *args: str) -> list[str]:
    return [venv.exe("torchx"), *args]


def _compare(
    ctx: Ctx,
    key: str,
    argv: Callable[[Venv], list[str]],
    needs: tuple[str, ...] = (),
    also: Callable[[Venv], list[str]] | None = None,
) -> tuple[dict[str, Runs], Side, Side, bool]:
    """Times ``argv(venv)`` in ours and upstream, alternating; returns the runs, both sides, ours skipped.

    ``also``: a second command timed in the same loop (runs labelled ``ours-also`` / ``upstream-also``).
    """
    ours, ours_skip = _try(lambda: ctx.ours(*needs))
    up, up_skip = _try(lambda: ctx.venv("upstream"))
    cmds = []
    for label, venv in (("ours", ours), ("upstream", up)):
        if venv:
            cmds.append(ctx.cmd(label, venv, argv(venv), f"{key}-{label}"))
            if also:
                cmds.append(ctx.cmd(f"{label}-also", venv, also(venv), f"{key}-{label}"))
    runs = time_commands(cmds, ctx.repeat, ctx.warmup, ctx.log)
    return runs, _side(runs.get("ours"), ours_skip), _side(runs.get("upstream"), up_skip), ours_skip is not None


# ---------------------------------------------------------------------- CLI scenarios
def s_help(ctx: Ctx) -> list[Row]:
    _, ours, up, skipped = _compare(ctx, "help", lambda v: _torchx(v, "--help"))
    return [row("1", "torchx --help", ours, up, Target("ratio", 3.5), ours_skipped=skipped)]


def s_runopts(ctx: Ctx) -> list[Row]:
    runs, ours, up, skipped = _compare(
        ctx, "runopts", lambda v: _torchx(v, "runopts"), (LOCAL,), also=lambda v: _torchx(v, "runopts", "local_cwd")
    )
    return [
        row("14", "torchx runopts (every installed scheduler)", ours, up, Target("max", 0.030), ours_skipped=skipped),
        row(
            "14",
            "  torchx runopts local_cwd",
            _side(runs.get("ours-also"), None),
            _side(runs.get("upstream-also"), None),
            None,
            note="upstream's all-scheduler listing needs every backend's client library",
            ours_skipped=skipped,
        ),
    ]


def s_builtins(ctx: Ctx) -> list[Row]:
    _, ours, up, skipped = _compare(ctx, "builtins", lambda v: _torchx(v, "builtins"), (COMPONENTS,))
    return [row("2", "torchx builtins", ours, up, None, ours_skipped=skipped)]


def s_dryrun_cli(ctx: Ctx) -> list[Row]:
    _, ours, up, skipped = _compare(
        ctx,
        "dryrun-cli",
        lambda v: _torchx(v, "run", "--dryrun", "-s", "local_cwd", "utils.echo", "--msg", "hi"),
        (LOCAL, COMPONENTS),
    )
    return [row("3", "torchx run --dryrun local_cwd utils.echo", ours, up, Target("ratio", 4), ours_skipped=skipped)]


def s_import(ctx: Ctx) -> list[Row]:
    runs, ours, up, skipped = _compare(
        ctx, "import", lambda v: [v.python, "-c", "import torchx.runner"], also=lambda v: [v.python, "-c", "pass"]
    )
    return [
        row("4", "python -c 'import torchx.runner'", ours, up, Target("max", 0.035), ours_skipped=skipped),
        row(
            "4",
            "  python -c pass (interpreter floor)",
            _side(runs.get("ours-also"), None),
            _side(runs.get("upstream-also"), None),
            None,
            note="same interpreter in both venvs; not a torchx cost",
        ),
    ]


def _delta(runs: dict[str, Runs], base: str, more: str, skip: str | None) -> tuple[Side, float | None]:
    if skip:
        return Side(text=f"skipped: {skip}"), None
    a, b = runs.get(base), runs.get(more)
    if not a or not b or not a.stats or not b.stats:
        return Side(text=f"error: {(a and a.error) or (b and b.error) or 'not run'}"), None
    d = b.stats.median - a.stats.median
    sign = "+" if d >= 0 else "-"
    return Side(text=f"{sign}{fmt_seconds(abs(d))} ({fmt_seconds(a.stats.median)} -> {fmt_seconds(b.stats.median)})"), d


def s_plugins(ctx: Ctx) -> list[Row]:
    """``torchx --help`` with and without 50 dummy plugin distributions installed."""
    cmds: list[Cmd] = []
    skips: dict[str, str | None] = {}
    for side, (base, more) in {
        "ours": ("ours", "ours-50plugins"),
        "upstream": ("upstream", "upstream-50plugins"),
    }.items():
        try:
            vb, vm = ctx.venv(base), ctx.venv(more)
        except Skip as e:
            skips[side] = str(e)
            continue
        skips[side] = None
        cmds.append(ctx.cmd(base, vb, _torchx(vb, "--help"), "plugins"))
        cmds.append(ctx.cmd(more, vm, _torchx(vm, "--help"), "plugins"))
        if side == "ours":
            cmds.append(
                ctx.cmd("ours-50plugins-nocache", vm, _torchx(vm, "--help"), "plugins", TORCHX_NO_PLUGIN_CACHE="1")
            )
    runs = time_commands(cmds, ctx.repeat, ctx.warmup, ctx.log)
    ours, d_ours = _delta(runs, "ours", "ours-50plugins", skips.get("ours", "not run"))
    up, _ = _delta(runs, "upstream", "upstream-50plugins", skips.get("upstream", "not run"))
    rows = [
        row(
            "6",
            "torchx --help: 50 plugins - none",
            ours,
            up,
            Target("max", 0.010, "ours adds <= 10.0 ms"),
            check=None if d_ours is None else d_ours <= 0.010,
            ours_skipped=skips.get("ours") is not None,
        )
    ]
    cold = _side(runs.get("ours-50plugins-nocache"), skips.get("ours"))
    rows.append(
        row(
            "6",
            "  same, 50 plugins, plugin cache off",
            cold,
            Side(text="(has no cache)"),
            None,
            note="TORCHX_NO_PLUGIN_CACHE=1: rediscovers the plugins on every run",
            ours_skipped=skips.get("ours") is not None,
        )
    )
    return rows


def s_namespace_plugins(ctx: Ctx) -> list[Row]:
    """``torchx --help`` with and without 20 ``torchx_plugins.*`` namespace modules installed
    (upstream's nightly plugin style; torchx 0.7.0 has no such discovery, so ours only)."""
    try:
        vb, vm = ctx.venv("ours"), ctx.venv("ours-20namespace")
    except Skip as e:
        return [
            row("6", "torchx --help: 20 namespace plugins - none", Side(text=f"skipped: {e}"), Side(text="-"), None)
        ]
    cmds = [
        ctx.cmd("ours", vb, _torchx(vb, "--help"), "plugins"),
        ctx.cmd("ours-20namespace", vm, _torchx(vm, "--help"), "plugins"),
        ctx.cmd("ours-20namespace-nocache", vm, _torchx(vm, "--help"), "plugins", TORCHX_NO_PLUGIN_CACHE="1"),
    ]
    runs = time_commands(cmds, ctx.repeat, ctx.warmup, ctx.log)
    delta, d = _delta(runs, "ours", "ours-20namespace", None)
    base = runs.get("ours")
    limit = 0.10 * base.stats.median if base is not None and base.stats else None
    na = Side(text="(0.7.0 reads no namespace packages)")
    return [
        row(
            "6",
            "torchx --help: 20 namespace plugins - none",
            delta,
            na,
            Target("check", label="ours adds <= 10% of --help"),
            check=None if d is None or limit is None else d <= limit,
            note="warm plugin cache; the modules are imported only when one of their plugins is used",
        ),
        row(
            "6",
            "  same, 20 namespace plugins, plugin cache off",
            _side(runs.get("ours-20namespace-nocache"), None),
            na,
            None,
            note="TORCHX_NO_PLUGIN_CACHE=1: imports the 20 modules on every run",
        ),
    ]


def s_run_echo(ctx: Ctx) -> list[Row]:
    runs, ours, up, skipped = _compare(
        ctx,
        "run-echo",
        lambda v: _torchx(v, "run", "-s", "local_cwd", "utils.echo", "--msg", "hi"),
        (LOCAL, COMPONENTS),
    )

    def hi_rate(label: str, side: Side, stderr_too: bool) -> tuple[Side, float | None]:
        r = runs.get(label)
        if r is None or not r.stdouts:
            return Side(text=side.text), None
        outs = [o + e for o, e in zip(r.stdouts, r.stderrs, strict=False)] if stderr_too else r.stdouts
        hits = sum(1 for out in outs if _HI_LINE.search(out))
        return Side(text=f"{hits / len(outs):.0%} ({hits}/{len(outs)})"), hits / len(outs)

    ours_hi, ours_rate = hi_rate("ours", ours, stderr_too=False)
    up_hi, _ = hi_rate("upstream", up, stderr_too=True)
    return [
        row("7", "torchx run local_cwd utils.echo (e2e)", ours, up, Target("ratio", 4.5), ours_skipped=skipped),
        row(
            "7",
            "  runs that print the 'hi' line",
            ours_hi,
            up_hi,
            Target("check", label="ours 100%"),
            check=None if ours_rate is None else ours_rate == 1.0,
            ours_skipped=skipped,
            note="ours: on stdout; upstream prints job output on stderr, so both streams count for it",
        ),
    ]


def s_run_sleep(ctx: Ctx) -> list[Row]:
    _, ours, up, skipped = _compare(
        ctx,
        "run-sleep",
        lambda v: _torchx(v, "run", "-s", "local_cwd", "utils.sh", "sleep", "0.5"),
        (LOCAL, COMPONENTS),
    )
    return [row("8", "torchx run local_cwd utils.sh sleep 0.5", ours, up, Target("max", 0.56), ours_skipped=skipped)]


# ---------------------------------------------------------------------- API (in-process) scenarios
@dataclass
class ProbeSide:
    """The results of one side's probe processes, or why there are none."""

    results: list[dict[str, Any]]
    skip: str | None = None
    error: str | None = None

    def side(self, values: Callable[[dict[str, Any]], list[float]]) -> Side:
        """Stats of the samples ``values`` picks out of every result."""
        if self.skip is not None:
            return Side(text=f"skipped: {self.skip}")
        if self.error is not None:
            return Side(text=f"error: {self.error}")
        samples = [x for r in self.results for x in values(r)]
        return Side(stats=Stats.of(samples)) if samples else Side(text="error: no samples")


def _probes(
    ctx: Ctx,
    key: str,
    args: list[str],
    ours_get: Callable[[], Venv],
    up_get: Callable[[], Venv],
    procs: int,
    up_args: list[str] | None = None,
    extra_env: dict[str, str] | None = None,
    warmup: int = 0,
) -> tuple[ProbeSide, ProbeSide]:
    """Runs the probe ``procs`` times per side, alternating which side goes first (``extra_env``
    is added to the sandbox's environment); the first ``warmup`` runs of each side are not kept
    (they fill the plugin caches, as any earlier command of a user would have)."""
    sides: dict[str, ProbeSide] = {}
    venvs: dict[str, Venv] = {}
    for name, get in (("ours", ours_get), ("upstream", up_get)):
        venv, skip = _try(get)
        sides[name] = ProbeSide([], skip=skip)
        if venv:
            venvs[name] = venv
    for i in range(warmup + procs):
        for name in ["ours", "upstream"] if i % 2 == 0 else ["upstream", "ours"]:
            side = sides[name]
            if name not in venvs or side.error:
                continue
            env = ctx.sandbox.env(venvs[name], f"{key}-{name}", **(extra_env or {}))
            try:
                result = run_probe(
                    venvs[name],
                    ctx.probe,
                    up_args if name == "upstream" and up_args else args,
                    env,
                    ctx.sandbox.cwd,
                )
                if i >= warmup:
                    side.results.append(result)
            except RuntimeError as e:
                side.error = str(e)
                ctx.log(f"{key} {name}: {e}")
    return sides["ours"], sides["upstream"]


def s_dryrun_api(ctx: Ctx) -> list[Row]:
    ours, up = _probes(
        ctx,
        "dryrun-api",
        ["dryrun", "--scheduler", "local_cwd", "--replicas", "1000", "--iters", "10"],
        lambda: ctx.ours(LOCAL),
        lambda: ctx.venv("upstream"),
        procs=3,
    )
    skipped = ours.skip is not None
    return [
        row(
            "5",
            "API dryrun 1x1000 local_cwd",
            ours.side(lambda r: r["samples"]),
            up.side(lambda r: r["samples"]),
            Target("max", 0.030),
            ours_skipped=skipped,
        ),
        row(
            "5",
            "  str() of that dryrun",
            ours.side(lambda r: r["str_samples"]),
            up.side(lambda r: r["str_samples"]),
            Target("max", 0.100),
            ours_skipped=skipped,
        ),
        row(
            "5",
            "  first dryrun in a fresh process",
            ours.side(lambda r: [r["first"]]),
            up.side(lambda r: [r["first"]]),
            None,
            note="includes importing the scheduler module",
            ours_skipped=skipped,
        ),
    ]


def _floor_ratio(side: ProbeSide) -> float | None:
    """Median run -> terminal over median bare-process floor, measured in the same processes."""
    if side.skip is not None or side.error is not None or not side.results:
        return None
    samples = [x for r in side.results for x in r["samples"]]
    floor = [x for r in side.results for x in r.get("floor", [])]
    return statistics.median(samples) / statistics.median(floor) if samples and floor else None


def s_api_run(ctx: Ctx) -> list[Row]:
    rows = []
    for replicas, iters, limit in ((1, 10, 0.010), (32, 5, 0.040)):
        ours, up = _probes(
            ctx,
            f"api-run-{replicas}",
            ["run", "--replicas", str(replicas), "--iters", str(iters)],
            lambda: ctx.ours(LOCAL),
            lambda: ctx.venv("upstream"),
            procs=2,
        )
        o, u = ours.side(lambda r: r["samples"]), up.side(lambda r: r["samples"])
        bad = sorted({s for r in ours.results for s in r["states"] if s != "SUCCEEDED"})
        if bad and o.stats:
            o = Side(text=f"error: jobs ended {', '.join(bad)}")
        rows.append(
            row(
                "9",
                f"API run+wait /bin/true 1x{replicas} -> SUCCEEDED",
                o,
                u,
                Target("max", limit),
                note="upstream polls with wait_interval=0.01" if replicas == 1 else "",
                ours_skipped=ours.skip is not None,
            )
        )
        rows.append(
            row(
                "9",
                f"  the run() call alone, 1x{replicas}",
                ours.side(lambda r: r["calls"]),
                up.side(lambda r: r["calls"]),
                Target("max", 0.003) if replicas == 1 else None,
                ours_skipped=ours.skip is not None,
            )
        )
        if replicas == 32:
            ratios = [_floor_ratio(side) for side in (ours, up)]
            text = [Side(text=f"{r:.2f}x floor") if r is not None else Side(text="error: no samples") for r in ratios]
            rows.append(
                row(
                    "9",
                    "  1x32 run -> terminal over 32 bare Popen+wait (same processes)",
                    text[0],
                    text[1],
                    Target("check", label="<= 1.3x floor"),
                    check=ratios[0] is not None and ratios[0] <= 1.3,
                    ours_skipped=ours.skip is not None,
                )
            )
    return rows


def s_logs(ctx: Ctx) -> list[Row]:
    ours, up = _probes(
        ctx,
        "logs",
        ["logs", "--lines", "1000000", "--iters", "3"],
        lambda: ctx.ours(LOCAL),
        lambda: ctx.venv("upstream"),
        procs=1,
        up_args=["logs", "--lines", "1000000", "--iters", "2"],
    )

    def intact(p: ProbeSide) -> tuple[Side, bool | None]:
        if not p.results:
            return Side(text=p.side(lambda r: []).text), None
        r = p.results[0]
        ok = bool(r["intact"] and r["long_line_ok"] and r["state"] == "SUCCEEDED")
        if ok:
            return Side(text=f"yes: {r['count']:,} lines, 256 KiB line ok"), True
        why = r["problem"] or ("the 256 KiB line is damaged" if not r["long_line_ok"] else f"job {r['state']}")
        return Side(text=f"NO: {why}"), False

    oi, ok = intact(ours)
    ui, _ = intact(up)
    skipped = ours.skip is not None
    return [
        row(
            "10",
            "log_lines of 1,000,000 lines (finished job)",
            ours.side(lambda r: r["samples"]),
            up.side(lambda r: r["samples"]),
            Target("max", 0.25),
            ours_skipped=skipped,
        ),
        row("10", "  every line intact", oi, ui, Target("check", label="all intact"), check=ok, ours_skipped=skipped),
    ]


def s_list(ctx: Ctx) -> list[Row]:
    """1,000 jobs submitted from 4 concurrent processes into one state dir, then ``list``."""
    try:
        ours = ctx.ours(LOCAL)
    except Skip as e:
        skip = Side(text=f"skipped: {e}")
        return [
            row("11", "API list with 1,000 local_cwd jobs", skip, Side(text="-"), Target("max", 0.2), ours_skipped=True)
        ]
    env = ctx.sandbox.env(ours, "list")
    handle_files = [str(ctx.sandbox.tmp / f"list-handles-{i}.txt") for i in range(4)]

    def submit(path: str) -> dict[str, Any]:
        return run_probe(ours, ctx.probe, ["submit", "--count", "250", "--handles", path], env, ctx.sandbox.cwd)

    submit_side: Side
    try:
        with ThreadPoolExecutor(4) as pool:
            submitted = list(pool.map(submit, handle_files))
        submit_side = Side(stats=Stats.of([float(r["seconds"]) for r in submitted]))
        listed = [
            run_probe(ours, ctx.probe, ["list", "--handles", *handle_files], env, ctx.sandbox.cwd) for _ in range(3)
        ]
    except RuntimeError as e:
        err = Side(text=f"error: {e}")
        return [row("11", "API list with 1,000 local_cwd jobs", err, Side(text="-"), Target("max", 0.2))]
    up_side = Side(text="-")
    try:
        up = ctx.venv("upstream")
        run_probe(up, ctx.probe, ["list"], ctx.sandbox.env(up, "list-upstream"), ctx.sandbox.cwd)
    except (Skip, RuntimeError) as e:
        up_side = Side(text=f"error: {str(e).split(': ', 2)[-1][:60]}")
    last = listed[-1]
    found = Side(text=f"{last['count']} listed, {last['missing']} of {last['wanted']} missing")
    return [
        row(
            "11",
            "API list with 1,000 local_cwd jobs",
            Side(stats=Stats.of([float(r["first"]) for r in listed])),
            up_side,
            Target("max", 0.2),
            note="first list() call in a fresh process",
        ),
        row(
            "11",
            "  4 procs x 250 submits: none lost",
            found,
            Side(text="-"),
            Target("check", label="1000 listed"),
            check=int(last["missing"]) == 0 and int(last["unique"]) == 1000,
        ),
        row("11", "  time per submitting process (250 jobs)", submit_side, Side(text="-"), None),
    ]


#: scheduler -> (our distribution, run options, image)
REMOTE_SCHEDULERS: dict[str, tuple[str, list[str], str]] = {
    "slurm": ("torchx-sched-slurm", [], ""),
    "lsf": ("torchx-sched-lsf", [], ""),
    "kubernetes": ("torchx-sched-k8s", ["queue=default"], "ghcr.io/example/trainer:1.0"),
    "aws_batch": ("torchx-sched-aws", ["queue=default"], "ghcr.io/example/trainer:1.0"),
    "ray": ("torchx-sched-ray", [], ""),
}


def s_remote_dryrun(ctx: Ctx) -> list[Row]:
    rows = []
    for sched, (dist, cfg, image) in REMOTE_SCHEDULERS.items():
        args = ["dryrun", "--scheduler", sched, "--replicas", "1000", "--iters", "10", "--image", image, "--cfg", *cfg]
        ours, up = _probes(
            ctx,
            f"dryrun-{sched}",
            args,
            partial(ctx.ours, dist, venv="ours-full"),
            lambda: ctx.venv("upstream-full"),
            procs=1,
        )
        skipped = ours.skip is not None
        rows.append(
            row(
                "12",
                f"API dryrun 1x1000 {sched}",
                ours.side(lambda r: r["samples"]),
                up.side(lambda r: r["samples"]),
                Target("max", 0.030),
                ours_skipped=skipped,
            )
        )
        if sched == "kubernetes":
            rows.append(
                row(
                    "12",
                    "  str() of it (the YAML)",
                    ours.side(lambda r: r["str_samples"]),
                    up.side(lambda r: r["str_samples"]),
                    Target("max", 0.100),
                    ours_skipped=skipped,
                )
            )
    return rows


def s_k8s_first_run(ctx: Ctx) -> list[Row]:
    """The first ``run()`` of a process on the live Kubernetes API server of
    ``scripts/backends/services.sh`` (``KUBECONFIG``), ours against upstream: both submit a
    Volcano job (the test cluster serves Volcano's API; ours picks Volcano in ``mode=auto``)."""
    kubeconfig = os.environ.get("KUBECONFIG", "")
    image = os.environ.get("TORCHX_TEST_K8S_IMAGE", "localhost/torchx-python:bookworm")
    args = ["remote-run", "--scheduler", "kubernetes", "--image", image, "--iters", "5"]
    args += ["--cfg", "namespace=default", "queue=default"]

    def ours_get() -> Venv:
        if not kubeconfig:
            raise Skip("no KUBECONFIG: start the test cluster (scripts/backends/services.sh up k8s) and source its env")
        return ctx.ours("torchx-sched-k8s", venv="ours-full")

    ours, up = _probes(
        ctx,
        "k8s-first-run",
        args,
        ours_get,
        lambda: ctx.venv("upstream-full"),
        procs=5,
        extra_env={"KUBECONFIG": kubeconfig},
        warmup=1,
    )
    skipped = ours.skip is not None
    return [
        row(
            "15",
            "API first run() in a process, kubernetes",
            ours.side(lambda r: [r["first"]]),
            up.side(lambda r: [r["first"]]),
            Target("max", 0.150),
            ours_skipped=skipped,
        ),
        row(
            "15",
            "  the next run() calls",
            ours.side(lambda r: r["samples"]),
            up.side(lambda r: r["samples"]),
            None,
            ours_skipped=skipped,
        ),
    ]


# ---------------------------------------------------------------------- import check
def _imported(ctx: Ctx, venv: Venv, args: list[str]) -> tuple[set[str], int]:
    """Top-level names of the modules ``torchx ARGS`` imports, and how many modules in all."""
    cmd = ctx.cmd("importtime", venv, [venv.python, "-X", "importtime", venv.exe("torchx"), *args], "imports")
    _, proc = run_once(cmd)
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()
        raise RuntimeError(f"torchx {' '.join(args)} failed: {tail[-1] if tail else proc.returncode}")
    names = [ln.rsplit("|", 1)[-1].strip() for ln in proc.stderr.splitlines() if ln.startswith("import time:")]
    names = [n for n in names if n and n != "imported package"]
    return {n.split(".")[0] for n in names}, len(names)


def _installed_heavy(venv: Venv) -> list[str]:
    code = f"import importlib.util as u\nprint(' '.join(m for m in {HEAVY_MODULES!r} if u.find_spec(m)))"
    proc = subprocess.run([venv.python, "-c", code], capture_output=True, text=True, check=False)
    return proc.stdout.split()


def s_imports(ctx: Ctx) -> list[Row]:
    sides: dict[str, Side] = {}
    verdict: bool | None = None
    skipped = False
    getters: list[tuple[str, Callable[[], Venv]]] = [
        ("ours", lambda: ctx.ours(venv="ours-full")),
        ("upstream", lambda: ctx.venv("upstream")),
    ]
    for name, get in getters:
        try:
            venv = get()
            verbs = [["--help"], ["runopts", "local_cwd"]]
            if name == "ours" and LOCAL not in venv.packages:
                verbs = verbs[:1]
            heavy: set[str] = set()
            counts = []
            for args in verbs:
                for _ in range(2):  # the first run rediscovers plugins (fresh cache), the second reads the cache
                    tops, count = _imported(ctx, venv, args)
                    heavy |= tops & set(HEAVY_MODULES)
                counts.append(str(count))
            installed = _installed_heavy(venv)
            text = f"{', '.join(sorted(heavy)) or 'none'} (installed: {' '.join(installed) or 'none'}; modules: {'/'.join(counts)})"
            sides[name] = Side(text=text)
            if name == "ours":
                verdict = not heavy
        except Skip as e:
            sides[name] = Side(text=f"skipped: {e}")
            skipped = skipped or name == "ours"
        except RuntimeError as e:
            sides[name] = Side(text=f"error: {e}")
    return [
        row(
            "13",
            "heavy imports: --help, runopts local_cwd",
            sides["ours"],
            sides["upstream"],
            Target("check", label="none imported"),
            check=verdict,
            ours_skipped=skipped,
            note=f"checked: {', '.join(HEAVY_MODULES)}, with a cold and a warm plugin cache;"
            " modules = how many --help / runopts import (warm)",
        )
    ]


@dataclass
class Scenario:
    """A numbered, named scenario."""

    number: str
    name: str
    fn: Callable[[Ctx], list[Row]]


SCENARIOS: list[Scenario] = [
    Scenario("1", "help", s_help),
    Scenario("2", "builtins", s_builtins),
    Scenario("3", "dryrun-cli", s_dryrun_cli),
    Scenario("4", "import", s_import),
    Scenario("5", "dryrun-api", s_dryrun_api),
    Scenario("6", "plugins", s_plugins),
    Scenario("6n", "namespace-plugins", s_namespace_plugins),
    Scenario("7", "run-echo", s_run_echo),
    Scenario("8", "run-sleep", s_run_sleep),
    Scenario("9", "api-run", s_api_run),
    Scenario("10", "logs", s_logs),
    Scenario("11", "list", s_list),
    Scenario("12", "remote-dryrun", s_remote_dryrun),
    Scenario("13", "imports", s_imports),
    Scenario("14", "runopts", s_runopts),
    Scenario("15", "k8s-first-run", s_k8s_first_run),
]
