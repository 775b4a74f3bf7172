"""``torchx tracker list {jobs,metadata,artifacts,lineage}``: what a tracker recorded.

::

    torchx tracker list jobs [--parent-run-id RUN_ID]
    torchx tracker list metadata RUN_ID
    torchx tracker list artifacts [--artifact NAME] RUN_ID
    torchx tracker list lineage RUN_ID

Each takes ``--json``, and ``--tracker NAME --config CFG`` to pick a tracker other than
the first one ``.torchxconfig`` configures (see :mod:`torchx_tracker.selection`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
from collections.abc import Callable

from torchx.cli.cmd_base import SubCommand
from torchx.cli.output import print_json, print_table
from torchx.tracker.api import Lineage, TrackerBase

logger: logging.Logger = logging.getLogger(__name__)

Action = Callable[[TrackerBase, argparse.Namespace], None]


def _add_common(parser: argparse.ArgumentParser, leaf: bool) -> None:
    # on the leaves the defaults are SUPPRESS so they never hide a value given before `list`
    default: object = argparse.SUPPRESS if leaf else None
    parser.add_argument("--tracker", default=default, help="tracker name (default: the first in [torchx:tracker])")
    parser.add_argument("--config", default=default, help="that tracker's config (default: [tracker:NAME] config)")
    parser.add_argument("--json", action="store_true", default=argparse.SUPPRESS if leaf else False, help="print JSON")


def _text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def list_jobs(tracker: TrackerBase, args: argparse.Namespace) -> None:
    """Run ids (children of ``--parent-run-id`` only, if given)."""
    filters = {"parent_run_id": args.parent_run_id} if args.parent_run_id else {}
    run_ids = list(tracker.run_ids(**filters))
    if args.json:
        print_json(run_ids)
    else:
        print_table([[r] for r in run_ids], ["RUN ID"])


def list_metadata(tracker: TrackerBase, args: argparse.Namespace) -> None:
    """The metadata of a run."""
    metadata = dict(tracker.metadata(args.run_id))
    if args.json:
        print_json(metadata)
    elif not metadata:
        print(f"run {args.run_id} has no metadata", file=sys.stderr)
    else:
        print_table([[k, _text(v)] for k, v in metadata.items()], ["KEY", "VALUE"])


def list_artifacts(tracker: TrackerBase, args: argparse.Namespace) -> None:
    """The artifacts of a run (only ``--artifact NAME``, if given)."""
    artifacts = [a for a in tracker.artifacts(args.run_id).values() if not args.artifact or a.name == args.artifact]
    if args.json:
        print_json([dataclasses.asdict(a) for a in artifacts])
    elif not artifacts:
        which = f"artifact {args.artifact!r}" if args.artifact else "artifacts"
        print(f"run {args.run_id} has no {which}", file=sys.stderr)
    else:
        print_table(
            [[a.name, a.path, _text(a.metadata) if a.metadata else ""] for a in artifacts], ["NAME", "PATH", "METADATA"]
        )


def list_lineage(tracker: TrackerBase, args: argparse.Namespace) -> None:
    """A run and its ancestors, as a tree."""
    lineage = tracker.lineage(args.run_id)
    if args.json:
        print_json(dataclasses.asdict(lineage))
    else:
        for line in lineage_lines(lineage):
            print(line)


def lineage_lines(lineage: Lineage) -> list[str]:
    """``lineage`` drawn as a tree, the run first, each parent indented under its child."""
    lines = [lineage.run_id]

    def draw(node: Lineage, indent: str) -> None:
        for i, parent in enumerate(node.parents):
            last = i == len(node.parents) - 1
            via = sorted(
                {s.artifact_name for s in node.sources if s.source_run_id == parent.run_id and s.artifact_name}
            )
            note = f"  (via {', '.join(via)})" if via else ""
            lines.append(f"{indent}{'└── ' if last else '├── '}{parent.run_id}{note}")
            draw(parent, indent + ("    " if last else "│   "))

    draw(lineage, "")
    return lines


class CmdTracker(SubCommand):
    """``torchx tracker``: queries what jobs recorded in the configured tracker."""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        _add_common(subparser, leaf=False)
        verbs = subparser.add_subparsers(dest="tracker_verb", metavar="{list}", required=True)
        lister = verbs.add_parser("list", help="list jobs, metadata, artifacts or lineage")
        what = lister.add_subparsers(dest="tracker_what", metavar="{jobs,metadata,artifacts,lineage}", required=True)

        jobs = what.add_parser("jobs", help="run ids the tracker knows")
        jobs.add_argument(
            "--parent-run-id",
            "--parent_run_id",
            dest="parent_run_id",
            default=None,
            help="only the children of this run",
        )
        jobs.set_defaults(tracker_action=list_jobs)

        metadata = what.add_parser("metadata", help="a run's metadata")
        metadata.add_argument("run_id", metavar="RUN_ID", help="the run id (app handle)")
        metadata.set_defaults(tracker_action=list_metadata)

        artifacts = what.add_parser("artifacts", help="a run's artifacts")
        artifacts.add_argument("--artifact", default=None, help="only the artifact with this name")
        artifacts.add_argument("run_id", metavar="RUN_ID", help="the run id (app handle)")
        artifacts.set_defaults(tracker_action=list_artifacts)

        lineage = what.add_parser("lineage", help="a run and its ancestors")
        lineage.add_argument("run_id", metavar="RUN_ID", help="the run id (app handle)")
        lineage.set_defaults(tracker_action=list_lineage)

        for leaf in (jobs, metadata, artifacts, lineage):
            _add_common(leaf, leaf=True)

    def run(self, args: argparse.Namespace) -> None:
        from torchx_tracker.selection import select_tracker

        name, tracker = select_tracker(args.tracker, args.config)
        logger.info("reading tracker %s: %r", name, tracker)
        action: Action = args.tracker_action
        action(tracker, args)
