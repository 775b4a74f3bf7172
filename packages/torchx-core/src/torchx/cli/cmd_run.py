"""``torchx run [-s SCHEDULER] [-cfg K=V,...] COMPONENT [component args]``."""

from __future__ import annotations

import argparse
import sys

from torchx.cli.cmd_base import SubCommand

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Any

    from torchx.cli.stop_signals import StopSignals


class CmdRun(SubCommand):
    """Runs a component on a scheduler and prints the app handle.

    On schedulers that run on this machine (``local_cwd``, ``local_docker``) it follows the
    job's output and waits for it by default; ``--detach`` returns at once. Such an attached
    job lives as long as the run: Ctrl-C cancels it (a second Ctrl-C exits at once) and so
    does closing the output (``torchx run ... | head -1``, which ends quietly).
    """

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument(
            "-s",
            "--scheduler",
            default=None,
            action=_Once,
            help="where to run (default: [cli:run] scheduler, else local_cwd)",
        )
        subparser.add_argument(
            "-cfg",
            "--scheduler_args",
            action="append",
            default=[],
            help="run options: k1=v1,k2=v2 (see `torchx runopts SCHEDULER`)",
        )
        subparser.add_argument("--dryrun", action="store_true", help="print the request; build and submit nothing")
        subparser.add_argument("--wait", action="store_true", help="wait for the app to end")
        subparser.add_argument("--log", action="store_true", help="follow the app's logs (implies --wait)")
        subparser.add_argument("--detach", action="store_true", help="return at once, even on local schedulers")
        subparser.add_argument(
            "--workspace",
            "--buck-target",  # TorchX's alias
            dest="workspace",
            default=None,
            help="directory to ship with the job on schedulers with workspaces (default: CWD; '' for none)",
        )
        subparser.add_argument("--parent_run_id", default=None, help="tracker run id of the parent run")
        subparser.add_argument(
            "--quiet", action="store_true", help="no status line while waiting (only the handle and the final state)"
        )
        subparser.add_argument(
            "component_name_and_args",
            nargs=argparse.REMAINDER,
            help="component name (utils.echo or path/file.py:fn) then its arguments",
        )

    def run(self, args: argparse.Namespace) -> int:
        from torchx.cli.stop_signals import StopSignals
        from torchx.runner import config, get_runner
        from torchx.schedulers import get_default_scheduler_name

        rest = list(args.component_name_and_args)
        if rest and rest[0] == "--":
            rest = rest[1:]
        component = rest[0] if rest else config.get_config("cli", "run", "component")
        component_args = rest[1:]
        if not component:
            raise ValueError("no component given: `torchx run utils.echo --msg hi`; `torchx builtins` lists components")
        if "--help" in component_args[:1] or component_args == ["-h"]:
            return _component_help(component)
        scheduler = args.scheduler or config.get_config("cli", "run", "scheduler") or get_default_scheduler_name()

        with get_runner() as runner:
            workspace = args.workspace
            if workspace is None:
                workspace = config.get_config("cli", "run", "workspace")
            if workspace is None and _builds_workspaces(runner.get_scheduler(scheduler)):
                import os

                workspace = os.getcwd()
            cfg = _parse_cfg(runner.scheduler_run_opts(scheduler), scheduler, args.scheduler_args)
            info = runner.dryrun_component(
                component,
                component_args,
                scheduler,
                cfg,
                workspace=workspace or None,
                parent_run_id=args.parent_run_id,
                build_workspace=not args.dryrun,
            )
            if args.dryrun:
                for line in info.workspace_builds:
                    print(f"=== a real run first does: {line} ===", file=sys.stderr)
                print(f"=== {scheduler} request for {component} ===", file=sys.stderr)
                print(info)
                return 0
            local = runner.get_scheduler(scheduler).capabilities.attach
            attach = local and not args.detach
            with StopSignals() as stop:
                if attach:
                    # an attached run owns its job from its submission on: Ctrl-C (or SIGTERM/SIGHUP)
                    # is recorded, never raised mid-statement, and acted upon once the job exists
                    # (its handle printed, then it is cancelled); before, no job is created
                    stop.catch(*_stop_signals())
                    stop.check()  # a Ctrl-C Python dropped earlier (in a finalizer): no job is created
                handle = runner.schedule(info)
                return _attend(
                    runner,
                    handle,
                    attach,
                    stop,
                    wait=attach or args.wait or args.log,
                    logs=attach or args.log,
                    local=local,
                    quiet=args.quiet,
                    # `--log` writes the job's log where TorchX's does (stderr); an attached local run
                    # without it prints the output as the program would (stdout)
                    log_out=sys.stderr if args.log else sys.stdout,
                )


class _Once(argparse.Action):
    """Stores an option's value; giving the option twice is an error (not "the last one wins")."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: str | None = None
    ) -> None:
        if getattr(namespace, self.dest, None) is not None:
            parser.error(f"{'/'.join(self.option_strings)} given twice; give it once")
        setattr(namespace, self.dest, values)


def _parse_cfg(opts: Any, scheduler: str, literals: list[str]) -> dict[str, Any]:
    """The ``-cfg`` options; keys the scheduler does not know are dropped with one warning."""
    cfg: dict[str, Any] = {}
    unknown: list[str] = []
    for literal in literals:
        parsed, bad = opts.parse_cfg_str(literal)
        cfg.update(parsed)
        unknown += [key for key in bad if key not in unknown]
    if unknown:
        print(f"torchx: warning: {opts.unknown_keys_message(unknown, scheduler)}", file=sys.stderr)
    return cfg


def _builds_workspaces(scheduler: Any) -> bool:
    """True when the scheduler can ship a workspace (so the CWD is shipped by default)."""
    from torchx.schedulers.calls import workspace_of

    return workspace_of(scheduler) is not None and type(scheduler).available


def _component_help(component: str) -> int:
    from torchx.runner import config
    from torchx.specs.builders import component_parser
    from torchx.specs.finder import get_component

    fn = get_component(component).fn
    component_parser(fn, config.get_configs("component", component), prog=f"torchx run {component}").print_help()
    return 0


def _stop_signals() -> tuple[int, ...]:
    """The signals that stop an attached run (and cancel its job): Ctrl-C, SIGTERM, a hang-up."""
    import signal

    return (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


#: exit code when the reader of the output went away (as if killed by SIGPIPE)
EXIT_OUTPUT_CLOSED = 141
#: exit code after Ctrl-C
EXIT_INTERRUPTED = 130


def _attend(
    runner: Any,
    handle: str,
    attached: bool,
    stop: StopSignals,
    wait: bool,
    logs: bool,
    local: bool,
    quiet: bool,
    log_out: IO[str] | None = None,
) -> int:
    """Prints the handle; if ``wait``, waits for the app (printing its logs to ``log_out`` if
    ``logs``, default stdout, with a status line unless ``quiet``). Returns the exit code.

    Ctrl-C cancels an ``attached`` app and prints its final state (a second Ctrl-C exits at
    once); otherwise it only stops waiting. A closed output cancels an attached app quietly.
    ``stop`` is the block the run's stop signals are recorded in (an attached run's since
    its submission); Ctrl-C is recorded in it from here on.
    """
    import signal
    import threading

    from torchx.specs.status import AppState

    closed = threading.Event()
    log_out = log_out or sys.stdout

    def on_closed() -> None:
        closed.set()
        _silence_stdout()
        if attached:
            runner.cancel(handle)  # the main thread's wait returns once the app has ended
        else:
            import _thread

            _thread.interrupt_main()  # recorded in `stop` as a Ctrl-C

    threads: list[Any] = []
    errors: list[str] = []
    try:
        stop.catch(signal.SIGINT)
        try:
            print(handle, flush=True)
        except BrokenPipeError:
            return _output_closed(runner, handle, attached)
        except OSError:  # a terminal that hung up (EIO) with the SIGHUP that stops the run
            if stop.received is None:
                raise
        stop.check()  # a stop signal during the submission
        if not wait:
            return 0
        from torchx.cli.progress import StatusLine

        with StatusLine(runner, handle, local=local, quiet=quiet) as line:
            follow = logs and _can_follow_logs(runner, handle)
            if follow:
                from torchx.cli.log_stream import replicas_of, stream_logs

                threads, errors = stream_logs(
                    runner,
                    handle,
                    replicas_of(runner, handle),
                    should_tail=True,
                    out=log_out,
                    status_line=line,
                    on_closed=on_closed,
                )
            status = stop.wait(lambda: runner.wait(handle, wait_interval=1))
            if logs and not follow:  # a scheduler that cannot follow logs: print them once the job ended
                from torchx.cli.log_stream import replicas_of, stream_logs

                threads, errors = stream_logs(
                    runner, handle, replicas_of(runner, handle), should_tail=False, out=log_out, on_closed=on_closed
                )
            stop.wait(lambda: [t.join() for t in threads])
    except KeyboardInterrupt:
        if closed.is_set():
            return _output_closed(runner, handle, attached)
        return _interrupted(runner, handle, attached, threads)
    if closed.is_set():
        return _output_closed(runner, handle, attached)
    for e in errors:
        _say(f"torchx: warning: {e}")
    _say(_final(handle, status))
    state = status.state if status else AppState.UNKNOWN
    return 0 if state == AppState.SUCCEEDED else 1


def _can_follow_logs(runner: Any, handle: str) -> bool:
    """True when the app's scheduler can follow a running replica's log (capability ``log_tail``)."""
    caps = runner.resolve(handle)[0].capabilities
    return bool(caps.logs and caps.log_tail)


def _final(handle: str, status: Any) -> str:
    """``torchx: <handle> <STATE>: <msg>``."""
    state = status.state.name if status else "UNKNOWN"
    detail = f": {status.msg}" if status and status.msg else ""
    return f"torchx: {handle} {state}{detail}"


def _say(line: str) -> None:
    """Prints ``line`` on stderr; nothing if stderr is closed."""
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):  # closed, or its terminal hung up (EIO)
        pass


def _silence_stdout() -> None:
    """Sends what is still written to stdout to /dev/null (its reader is gone)."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _output_closed(runner: Any, handle: str, attached: bool) -> int:
    """The reader of stdout went away: an attached app is cancelled; nothing more is printed."""
    _silence_stdout()
    if attached:
        runner.cancel(handle)
    return EXIT_OUTPUT_CLOSED


def _interrupted(runner: Any, handle: str, attached: bool, threads: list[Any]) -> int:
    """Ctrl-C: cancels an attached app and prints its final state; a second Ctrl-C exits at once."""
    if not attached:
        _say(f"torchx: stopped waiting; {handle} goes on (`torchx cancel {handle}` stops it)")
        return EXIT_INTERRUPTED
    import os
    import signal

    def exit_at_once(signum: int, frame: object) -> None:
        os.write(2, f"\ntorchx: exiting without waiting; see `torchx status {handle}`\n".encode())
        os._exit(EXIT_INTERRUPTED)

    for sig in _stop_signals():
        signal.signal(sig, exit_at_once)
    _say(f"\ntorchx: cancelling {handle} (Ctrl-C again to exit at once)")
    runner.cancel(handle)
    status = runner.status(handle)
    for t in threads:
        t.join(timeout=5)
    _say(_final(handle, status))
    return EXIT_INTERRUPTED
