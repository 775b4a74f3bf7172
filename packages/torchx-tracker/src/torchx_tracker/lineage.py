"""Builds a run's :class:`~torchx.tracker.api.Lineage` from any backend's ``sources``."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from torchx.tracker.api import Lineage, TrackerSource

SourcesFn = Callable[[str], Iterable[TrackerSource]]


def build_lineage(run_id: str, sources: SourcesFn) -> Lineage:
    """``run_id`` with its sources and, recursively, the lineage of every source run.

    A run reached through several paths is looked up once (the same :class:`Lineage`
    object appears under each child). A cycle (a run listed as its own ancestor) is cut:
    the repeated run keeps its sources but gets no parents there, so the result is
    always a finite tree that serializes.
    """
    done: dict[str, Lineage] = {}

    def visit(rid: str, path: frozenset[str]) -> Lineage:
        if rid in done:
            return done[rid]
        srcs = list(sources(rid))
        parents: list[Lineage] = []
        for source_id in dict.fromkeys(s.source_run_id for s in srcs):
            if source_id in path or source_id == rid:
                continue
            parents.append(visit(source_id, path | {rid}))
        node = Lineage(run_id=rid, sources=srcs, parents=parents)
        done[rid] = node
        return node

    return visit(run_id, frozenset())
