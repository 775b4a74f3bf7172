"""``torchx sweep``: start a sweep, and query or stop one.

::

    torchx sweep -s SCHED [-cfg K=V] [--param NAME=v1,v2 ...] [--random N --seed S]
                 [--trials FILE] [--max-parallel K] [--fail-fast] [--dryrun] [--wait]
                 COMPONENT [component args]
    torchx sweep status|wait|describe SWEEP [--metric NAME --min|--max] [--json]
    torchx sweep cancel|resume SWEEP
    torchx sweep list [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from torchx.cli.cmd_base import SubCommand
from torchx.cli.output import print_json, print_table

VERBS = ("status", "wait", "cancel", "list", "describe", "resume")


def _query_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--metric", default=None, help="show the metric each trial recorded in the tracker")
    order = parser.add_mutually_exclusive_group()
    order.add_argument("--min", dest="minimize", action="store_true", default=True, help="best = lowest (default)")
    order.add_argument("--max", dest="minimize", action="store_false", help="best = highest")


def _verb_parser(verb: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"torchx sweep {verb}")
    if verb != "list":
        parser.add_argument("sweep", metavar="SWEEP", help="sweep handle (sweep://SESSION/ID) or id")
    if verb in ("status", "wait", "describe", "list"):
        _query_args(parser)
    else:
        parser.add_argument("--json", action="store_true", help="print JSON")
    if verb == "wait":
        parser.add_argument("--timeout", type=float, default=None, help="give up after this many seconds")
    return parser


def _args_text(args: dict[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in args.items())


def print_trials(status: dict[str, Any], metric: str | None, minimize: bool) -> None:
    """The table of trials (sorted by the metric, best marked ``*``, when ``metric`` is given)."""
    from torchx_sweep.metrics import best_index

    trials = status["trials"]
    header = ["INDEX", "ARGS", "STATE", "APP HANDLE"]
    if metric:
        header.append(metric.upper())
        values = {t["index"]: t["metric"] for t in trials if t["metric"] is not None}
        best = best_index(values, minimize)
        sign = 1 if minimize else -1

        def key(t: dict[str, Any]) -> tuple[int, float, int]:
            v = t["metric"]
            numeric = isinstance(v, (int, float)) and not isinstance(v, bool)
            return (0 if numeric else 1, sign * float(v) if numeric else 0.0, t["index"])

        trials = sorted(trials, key=key)
    rows = []
    for t in trials:
        row = [str(t["index"]), _args_text(t["args"]), t["state"], t["handle"] or "-"]
        if metric:
            mark = " *" if t["index"] == best else ""
            row.append(("-" if t["metric"] is None else str(t["metric"])) + mark)
        rows.append(row)
    print(f"{status['handle']}  {status['state']}  ({len(trials)} trials, {status['mode']})")
    print_table(rows, header)


class CmdSweep(SubCommand):
    """Runs a component over a grid, random samples or a file of arguments; queries and stops sweeps."""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.description = (
            "Start a sweep: torchx sweep -s SCHED --param lr=1e-3,1e-4 COMPONENT [args]."
            f" Manage one: torchx sweep {{{','.join(VERBS)}}} SWEEP (see torchx sweep VERB --help)."
        )
        subparser.add_argument("-s", "--scheduler", default=None, help="where the trials run (default: local_cwd)")
        subparser.add_argument("-cfg", "--scheduler_args", action="append", default=[], help="run options: k1=v1,k2=v2")
        subparser.add_argument(
            "--param",
            action="append",
            default=[],
            help="NAME=v1,v2 (grid axis) or NAME=uniform|loguniform|randint(LOW,HIGH) | choice(v1,v2); sets --NAME",
        )
        subparser.add_argument("--random", type=int, default=None, metavar="N", help="N random trials of the params")
        subparser.add_argument("--seed", type=int, default=None, help="random seed (with --random)")
        subparser.add_argument("--trials", default=None, metavar="FILE", help="JSON lines: one object of args a line")
        subparser.add_argument("--max-parallel", "--max_parallel", dest="max_parallel", type=int, default=None)
        subparser.add_argument("--fail-fast", "--fail_fast", dest="fail_fast", action="store_true")
        subparser.add_argument("--dryrun", action="store_true", help="print every trial's args and the request")
        subparser.add_argument(
            "--no-array",
            "--no_array",
            dest="no_array",
            action="store_true",
            help="submit each trial through the driver even where the scheduler has job arrays",
        )
        subparser.add_argument("--wait", action="store_true", help="wait for every trial, then print the table")
        subparser.add_argument("--workspace", default=None, help="workspace each trial ships (schedulers with one)")
        subparser.add_argument("--json", action="store_true", help="print JSON")
        subparser.add_argument(
            "rest", nargs=argparse.REMAINDER, metavar="COMPONENT|VERB", help="component and its args, or a verb"
        )

    def run(self, args: argparse.Namespace) -> int:
        rest = list(args.rest)
        if rest and rest[0] == "--":
            rest = rest[1:]
        if rest and rest[0] in VERBS:
            verb = rest[0]
            opts = _verb_parser(verb).parse_args(rest[1:])
            opts.json = opts.json or args.json
            return self._manage(verb, opts)
        return self._start(args, rest)

    # ------------------------------------------------------------------ start
    def _start(self, args: argparse.Namespace, rest: list[str]) -> int:
        from torchx.runner import config, get_runner
        from torchx.schedulers import get_default_scheduler_name

        from torchx_sweep.params import SweepSpecError, grid, load_trials, parse_param, random_trials
        from torchx_sweep.submit import prepare, start

        if not rest:
            raise SweepSpecError(
                "no component given: torchx sweep -s local_cwd --param x1=0,1 --param x2=2,3 utils.booth"
            )
        component, component_args = rest[0], rest[1:]
        if args.trials:
            if args.param or args.random:
                raise SweepSpecError("--trials FILE gives every trial: do not combine it with --param or --random")
            trials = load_trials(args.trials)
        else:
            params = [parse_param(p) for p in args.param]
            if not params:
                raise SweepSpecError("nothing to sweep: add --param NAME=v1,v2 (or --trials FILE)")
            trials = random_trials(params, args.random, args.seed) if args.random is not None else grid(params)
        scheduler = args.scheduler or config.get_config("cli", "run", "scheduler") or get_default_scheduler_name()
        with get_runner() as runner:
            cfg = runner.cfg_from_str(scheduler, *args.scheduler_args)
            prepared = prepare(
                runner,
                component,
                component_args,
                trials,
                scheduler,
                cfg,
                args.max_parallel,
                args.workspace,
                use_array=not args.no_array,
            )
            if args.dryrun:
                self._print_dryrun(prepared, args.json)
                return 0
            handle = start(
                runner,
                prepared,
                component,
                component_args,
                scheduler,
                cfg,
                args.max_parallel,
                args.fail_fast,
                args.workspace,
            )
            if not args.wait:
                if args.json:
                    print_json({"handle": handle, "trials": len(trials)})
                else:
                    print(handle)
                return 0
            from torchx_sweep.api import Sweep

            status = Sweep(handle, runner).wait()
            self._print_status(status, args.json, None, True)
            return 0 if status["state"] == "SUCCEEDED" else 1

    @staticmethod
    def _print_dryrun(prepared: Any, as_json: bool) -> None:
        if as_json:
            print_json(
                {
                    "handle": prepared.handle,
                    "mode": "array" if prepared.array is not None else "driver",
                    "trials": [
                        {"index": i, "args": t, "request": None if prepared.array is not None else str(info)}
                        for i, (t, info) in enumerate(zip(prepared.trials, prepared.infos, strict=True))
                    ],
                    "array_request": None if prepared.array is None else str(prepared.array),
                }
            )
            return
        mode = "one native job array" if prepared.array is not None else "a driver submits each trial"
        print(f"# {prepared.handle}: {len(prepared.trials)} trials, {mode}")
        for i, (trial, info) in enumerate(zip(prepared.trials, prepared.infos, strict=True)):
            print(f"# trial {i}: {json.dumps(trial, ensure_ascii=False)}")
            if prepared.array is None:
                print(info)
        if prepared.array is not None:
            print(prepared.array)

    # ------------------------------------------------------------------ manage
    def _manage(self, verb: str, opts: argparse.Namespace) -> int:
        from torchx.runner import get_runner

        from torchx_sweep.api import Sweep
        from torchx_sweep.store import SweepStore

        store = SweepStore()
        with get_runner() as runner:
            if verb == "list":
                rows = []
                for sweep_id in store.sweep_ids():
                    status = Sweep(sweep_id, runner, store).status()
                    rows.append(status)
                if opts.json:
                    print_json(
                        [{k: v for k, v in s.items() if k != "trials"} | {"trials": len(s["trials"])} for s in rows]
                    )
                else:
                    print_table(
                        [
                            [s["handle"], s["state"], s["component"], s["scheduler"], s["mode"], str(len(s["trials"]))]
                            for s in rows
                        ],
                        ["SWEEP", "STATE", "COMPONENT", "SCHEDULER", "MODE", "TRIALS"],
                    )
                return 0
            sweep = Sweep(opts.sweep, runner, store)
            if verb == "cancel":
                sweep.cancel()
                status = sweep.status()
                if opts.json:
                    print_json(status)
                else:
                    print(f"{status['handle']}: cancelled")
                return 0
            if verb == "resume":
                started = sweep.resume()
                if opts.json:
                    print_json({"handle": sweep.handle, "resumed": started})
                else:
                    print(f"{sweep.handle}: {'driver restarted' if started else 'nothing to resume'}")
                return 0
            status = sweep.wait(timeout=opts.timeout) if verb == "wait" else sweep.status()
            if opts.metric:
                from torchx_sweep.metrics import NO_TRACKER, read_metric, recorded_trackers

                tracker = next(iter(recorded_trackers(sweep._load().spec)), None)
                if tracker is None:
                    print(f"torchx sweep: warning: {NO_TRACKER.format(metric=opts.metric)}", file=sys.stderr)
                found = read_metric((t["handle"] for t in status["trials"]), opts.metric, tracker)
                for t in status["trials"]:
                    t["metric"] = found.get(t["handle"]) if t["handle"] else None
            if verb == "describe":
                spec = sweep._load().spec
                status["spec"] = {k: v for k, v in spec.items() if k not in ("trials", "handles")}
            self._print_status(status, opts.json, opts.metric, opts.minimize)
            if verb == "wait":
                return 0 if status["state"] == "SUCCEEDED" else 1
            return 0

    @staticmethod
    def _print_status(status: dict[str, Any], as_json: bool, metric: str | None, minimize: bool) -> None:
        if as_json:
            print_json(status)
            return
        spec = status.get("spec")
        if spec:
            for key in ("component", "args", "scheduler", "cfg", "mode", "max_parallel", "fail_fast", "array_handle"):
                if spec.get(key) not in (None, [], {}):
                    print(f"{key}: {spec[key] if isinstance(spec[key], str) else json.dumps(spec[key])}")
            if status.get("driver"):
                print(f"driver: {status['driver']}")
        print_trials(status, metric, minimize)
        if status.get("driver") == "stopped" and status["state"] == "RUNNING":
            print(
                f"the sweep's driver is not running: `torchx sweep resume {status['handle']}` restarts it",
                file=sys.stderr,
            )
