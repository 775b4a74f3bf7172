"""``torchx runopts [SCHEDULER] [--json]``."""

from __future__ import annotations

import argparse

from torchx.cli.cmd_base import SubCommand
from torchx.cli.output import print_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _opts_data(opts: Any) -> dict[str, Any]:
    from torchx.specs.runopts import get_type_name

    return {
        key: {
            "type": get_type_name(o.opt_type),
            "required": o.is_required,
            "default": o.default,
            "help": o.help,
            "aliases": o.aliases,
        }
        for key, o in opts
    }


_CACHE_FORMAT = 1


def _code_stamp(factory: str) -> list[tuple[str, int]]:
    """(file, mtime) of every Python file of the package that holds ``factory`` ("module:attr"):
    what a scheduler's run options are made from. Nothing is imported to find them."""
    import importlib.util
    import os

    top = factory.partition(":")[0].split(".")[0]
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return []
    if spec is None:
        return []
    roots = list(spec.submodule_search_locations or [])
    stamp = [(spec.origin, os.stat(spec.origin).st_mtime_ns)] if spec.origin and not roots else []
    while roots:
        with os.scandir(roots.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                    roots.append(entry.path)
                elif entry.name.endswith(".py"):
                    stamp.append((entry.path, entry.stat().st_mtime_ns))
    return sorted(stamp)


def _described(names: list[str], strict: bool) -> dict[str, dict[str, Any]]:
    """Scheduler -> {"text": what ``torchx runopts`` prints, "data": its JSON} (or {"error": ...}).

    Computing a scheduler's options imports its backend (client libraries and all); the result
    is kept in the torchx cache until a file of the scheduler's package changes, so later runs
    import no backend.
    """
    import binascii
    import sys

    from torchx.plugins import get_registry
    from torchx.util import disk_cache

    registry = get_registry()
    cache_name = f"runopts-{binascii.crc32(chr(0).join([sys.executable, *sys.path]).encode()):08x}.marshal"
    stored = disk_cache.read_cache(cache_name, _CACHE_FORMAT) or {}
    out: dict[str, dict[str, Any]] = {}
    runner = None
    changed = False
    try:
        for name in names:
            record = registry.schedulers.get(name)
            stamp = _code_stamp(record.factory) if record is not None else []
            hit = stored.get(name)
            if stamp and hit is not None and hit["factory"] == record.factory and hit["stamp"] == stamp:  # type: ignore[union-attr]
                out[name] = hit["opts"]
                continue
            if runner is None:
                from torchx.runner import get_runner

                runner = get_runner()
            try:
                opts = runner.scheduler_run_opts(name)
            except Exception as e:
                if strict:
                    raise
                out[name] = {"error": str(e)}
                continue
            out[name] = {"text": repr(opts), "data": _opts_data(opts)}
            if stamp and record is not None:
                stored[name] = {"factory": record.factory, "stamp": stamp, "opts": out[name]}
                changed = True
    finally:
        if runner is not None:
            runner.close()
    if changed:
        disk_cache.write_cache(cache_name, _CACHE_FORMAT, stored)
    return out


class CmdRunopts(SubCommand):
    """Shows the run options (``-cfg``) of one scheduler, or of every installed one."""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        subparser.add_argument("scheduler", nargs="?", default=None, help="one scheduler (default: all)")
        subparser.add_argument("--json", action="store_true", help="print JSON")

    def run(self, args: argparse.Namespace) -> int:
        from torchx.plugins import get_registry

        names = [args.scheduler] if args.scheduler else sorted(get_registry().schedulers)
        if not names:
            from torchx.util import distributions
            from torchx.util.distributions import pip_install

            print(f"No scheduler is installed. `{pip_install(distributions.LOCAL)}` installs local_cwd.")
            return 1
        described = _described(names, strict=bool(args.scheduler))
        if args.json:
            print_json({n: d.get("data", d) for n, d in described.items()})
            return 0
        for name, d in described.items():
            print(f"{name}:")
            print(f"    error: {d['error']}" if "error" in d else d["text"])
            print()
        return 0
