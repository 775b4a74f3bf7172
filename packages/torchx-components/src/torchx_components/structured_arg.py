"""Structured component arguments (``torchx.components.structured_arg``): component arguments
whose value has a small grammar, parsed once for every component that takes them.

* :class:`StructuredNameArgument`: ``--name EXPERIMENT/RUN`` (either part may be empty)
* :class:`StructuredJArgument`: ``-j NNODES[xNPROC_PER_NODE]`` with the host type ``-h``
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import PurePath

from torchx import specs


@dataclass
class StructuredNameArgument:
    """An experiment name and a run name, written ``experiment/run``."""

    experiment_name: str
    run_name: str

    def __str__(self) -> str:
        return f"{self.experiment_name or ''}/{self.run_name}"

    @staticmethod
    def parse_from(
        name: str,
        m: str | None = None,
        script: str | None = None,
        default_experiment_name: str = "default-experiment",
    ) -> StructuredNameArgument:
        """Reads ``name`` as ``EXPERIMENT/RUN``, ``EXPERIMENT/``, ``/RUN`` or ``RUN``.

        A missing experiment is ``default_experiment_name``; a missing run is the last part of
        the main module ``m`` (``foo.bar.baz`` -> ``baz``) or the stem of ``script``
        (``bar/baz.py`` -> ``baz``). Exactly one of ``m`` and ``script`` must be given.

        Raises:
            ValueError: neither or both of ``m`` and ``script`` are given
        """
        if not m and not script:
            raise ValueError("No main module or script specified: give exactly one of m (main module) or script")
        if m and script:
            raise ValueError("Both main module and script set: give exactly one of m (main module) or script")
        experiment, sep, run = name.partition("/")
        if not sep:  # no "/": the whole name is the run's
            experiment, run = "", name
        if not run:
            run = m.rpartition(".")[2] if m else PurePath(str(script)).stem
        return StructuredNameArgument(experiment or default_experiment_name, run)


@dataclass
class StructuredJArgument:
    """Nodes and processes per node, written ``NNODESxNPROC_PER_NODE``."""

    nnodes: int
    nproc_per_node: int

    def __str__(self) -> str:
        return f"{self.nnodes}x{self.nproc_per_node}"

    @staticmethod
    def parse_from(h: str, j: str) -> StructuredJArgument:
        """Reads ``j`` (``2x8``, or ``2`` on a GPU host type ``h``: one process per GPU).

        An explicit ``nproc_per_node`` that differs from the GPUs of ``h`` is kept, with a warning.

        Raises:
            ValueError: ``j`` is malformed, or gives only the nodes for a host without GPUs
        """
        gpus = specs.named_resources[h].gpu
        parts = j.split("x")
        if len(parts) == 1:
            nnodes = int(parts[0])
            if gpus <= 0:
                raise ValueError(
                    f"nproc_per_node cannot be inferred from GPU count. `{h}` is not a GPU instance."
                    f" Give `-j NNODESxNPROC_PER_NODE` (e.g. `-j {nnodes}x8`)"
                )
            return StructuredJArgument(nnodes, gpus)
        if len(parts) != 2:
            raise ValueError(f"Invalid format for `-j NNODESxNPROC_PER_NODE` (e.g. `-j 1x8`): {j!r}")
        nnodes, nproc = int(parts[0]), int(parts[1])
        if nproc != gpus:
            warnings.warn(
                f"`-j {j}` runs {nproc} processes per node but a {h} has {gpus} GPUs;"
                f" give `-j {nnodes}` for one process per GPU, or ignore this if it is intended",
                stacklevel=2,
            )
        return StructuredJArgument(nnodes, nproc)


__all__ = ["StructuredJArgument", "StructuredNameArgument"]
