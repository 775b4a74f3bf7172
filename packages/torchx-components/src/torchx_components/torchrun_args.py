"""What ``dist.ddp`` and ``dist.spmd`` share: ``-j`` and ``--name`` parsing and the ``torchrun`` command line."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from torchx.specs.macros import macros

#: rendezvous backends ``dist.ddp`` knows how to point at the rank-0 node
RDZV_BACKENDS = ("c10d", "static")

_J = re.compile(r"^(?:(?P<min>\d+):)?(?P<nodes>\d+)(?:x(?P<nproc>\d+))?$")
_J_FORMS = "NNODESxNPROC (e.g. 2x4) or MIN:MAXxNPROC (e.g. 1:4x8)"

#: environment that makes torch.distributed and CUDA report problems in detail (``--debug``)
DEBUG_ENV = {
    "CUDA_LAUNCH_BLOCKING": "1",
    "TORCH_NCCL_DESYNC_DEBUG": "1",
    "TORCH_DISTRIBUTED_DEBUG": "DETAIL",
    "TORCH_SHOW_CPP_STACKTRACES": "1",
}


@dataclass(frozen=True)
class Shape:
    """How many nodes (replicas) a job runs on and how many processes each node starts."""

    min_nnodes: int
    max_nnodes: int
    nproc_per_node: int

    @property
    def nnodes(self) -> str:
        """``torchrun --nnodes``: ``N`` or, for an elastic job, ``MIN:MAX``."""
        if self.min_nnodes == self.max_nnodes:
            return str(self.max_nnodes)
        return f"{self.min_nnodes}:{self.max_nnodes}"

    @property
    def j(self) -> str:
        """The shape as a ``-j`` value."""
        return f"{self.nnodes}x{self.nproc_per_node}"


def parse_j(j: str, default_nproc: int | None = None) -> Shape:
    """Parses ``-j``: ``NxP`` or the elastic ``MIN:MAXxP``.

    Args:
        j: the value
        default_nproc: processes per node when ``j`` gives only the nodes (``N`` or
            ``MIN:MAX``); ``None`` makes ``xP`` required

    Raises:
        ValueError: ``j`` is malformed or has a zero or an inverted range
    """
    match = _J.match(j.strip())
    if not match or (match["nproc"] is None and default_nproc is None):
        forms = _J_FORMS if default_nproc is None else f"NNODES, MIN:MAX, {_J_FORMS}"
        raise ValueError(f"invalid -j {j!r}: expected {forms}")
    max_nnodes = int(match["nodes"])
    min_nnodes = int(match["min"]) if match["min"] is not None else max_nnodes
    nproc = int(match["nproc"]) if match["nproc"] is not None else int(default_nproc or 0)
    if min_nnodes < 1 or nproc < 1:
        raise ValueError(f"invalid -j {j!r}: node and process counts must be at least 1")
    if min_nnodes > max_nnodes:
        raise ValueError(
            f"invalid -j {j!r}: the minimum number of nodes ({min_nnodes}) exceeds the maximum ({max_nnodes})"
        )
    return Shape(min_nnodes, max_nnodes, nproc)


def entry_name(script: str | None, m: str | None) -> str:
    """A role name for the program: the script's file name without ``.py``, or the module's last part."""
    if script is not None:
        base = os.path.basename(script.rstrip("/"))
        return base[:-3] if base.endswith(".py") else base
    return str(m).rpartition(".")[2]


def split_name(name: str, default_run: str) -> tuple[str, str]:
    """``--name`` as (experiment, run): ``EXP/RUN``, ``RUN``, ``EXP/`` or ``/`` (defaults for both parts)."""
    experiment, sep, run = name.strip().rpartition("/")
    if not sep:
        experiment = ""
    return experiment or "default-experiment", run or default_run


#: the start of every ``dist.*`` node script: without ``torchrun`` on PATH, say what to install
#: (the CPU wheel when the node has no NVIDIA driver) instead of bash's "command not found"
TORCHRUN_CHECK = (
    "command -v torchrun >/dev/null 2>&1 || { if command -v nvidia-smi >/dev/null 2>&1; then"
    ' echo "dist: torchrun is not on PATH: install PyTorch in the job\'s environment: pip install torch" >&2;'
    " else echo \"dist: torchrun is not on PATH: install PyTorch in the job's environment; this node has no GPU,"
    ' so the CPU wheel: pip install torch --index-url https://download.pytorch.org/whl/cpu" >&2; fi; exit 127; }; '
)


def torchrun_args(
    shape: Shape,
    *,
    script: str | None,
    m: str | None,
    script_args: list[str],
    rdzv_backend: str,
    rdzv_port: int,
    tee: int,
) -> list[str]:
    """The role args (for ``bash``) that start ``torchrun`` on one node.

    ``bash -c 'exec torchrun --rdzv_backend B --rdzv_endpoint E "$@"' torchrun --rdzv_id
    ${app_id} ... SCRIPT ARGS``: every word, the macros and the user's text included, is one
    argument of the shell (filled by the scheduler as data, never parsed as shell code). The
    script itself holds only constants (the backend and endpoint, as in TorchX's ``bash -c``
    string) and, for several nodes, reads the rank-0 host from the variable the scheduler
    names through ``macros.rank0_env`` (``localhost`` when unset, as on the rank-0 node of
    some schedulers). With the ``static`` backend the script also passes ``--node_rank``,
    whose value (``${replica_id}``) is the first word. One node meets on ``localhost`` (port 0 for c10d,
    so concurrent jobs on one host pick free ports).

    Raises:
        ValueError: the rendezvous backend is unknown or cannot run the shape
    """
    if rdzv_backend not in RDZV_BACKENDS:
        raise ValueError(f"unknown --rdzv_backend {rdzv_backend!r}: use one of {', '.join(RDZV_BACKENDS)}")
    if rdzv_backend == "static" and shape.min_nnodes != shape.max_nnodes:
        raise ValueError(f"-j {shape.j} is elastic, which needs --rdzv_backend c10d (static needs a fixed node count)")
    # the script holds constants only: the backend is one of RDZV_BACKENDS and the port an int
    if shape.max_nnodes == 1:
        port = 0 if rdzv_backend == "c10d" else int(rdzv_port)
        endpoint = f"localhost:{port}"
    else:
        endpoint = f'"${{{macros.rank0_env}:-localhost}}:{int(rdzv_port)}"'
    head = f"exec torchrun --rdzv_backend {rdzv_backend} --rdzv_endpoint {endpoint}"
    words = []
    if rdzv_backend == "static":
        # the replica id (a macro, so a word) is the first argument; the script names the flag, as TorchX's does
        head = f'node_rank="$1"; shift; {head} --node_rank "$node_rank"'
        words.append(macros.replica_id)
    head += ' "$@"'
    words += [
        "--rdzv_id",
        macros.app_id,
        "--nnodes",
        shape.nnodes,
        "--nproc_per_node",
        str(shape.nproc_per_node),
        "--tee",
        str(tee),
    ]
    words += [script] if script is not None else ["-m", str(m)]
    words += script_args
    return macros.shell_args(TORCHRUN_CHECK + head, words, name="torchrun")
