"""Cloud-agnostic t-shirt sizes: ``gpu.small`` ... ``cpu.xlarge``.

=============  ====  ====  =======
name           CPU   GPU   memory
=============  ====  ====  =======
gpu.small      8     1     32 GiB
gpu.medium     16    2     64 GiB
gpu.large      32    4     128 GiB
gpu.xlarge     64    8     256 GiB
cpu.nano       1     0     512 MB
cpu.micro      1     0     1 GiB
cpu.small      1     0     2 GiB
cpu.medium     2     0     4 GiB
cpu.large      2     0     8 GiB
cpu.xlarge     8     0     32 GiB
=============  ====  ====  =======
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from torchx.specs.roles import GiB, Resource

#: name -> (cpu, gpu, memMB)
SIZES: dict[str, tuple[int, int, int]] = {
    "gpu.small": (8, 1, 32 * GiB),
    "gpu.medium": (16, 2, 64 * GiB),
    "gpu.large": (32, 4, 128 * GiB),
    "gpu.xlarge": (64, 8, 256 * GiB),
    "cpu.nano": (1, 0, 512),
    "cpu.micro": (1, 0, 1 * GiB),
    "cpu.small": (1, 0, 2 * GiB),
    "cpu.medium": (2, 0, 4 * GiB),
    "cpu.large": (2, 0, 8 * GiB),
    "cpu.xlarge": (8, 0, 32 * GiB),
}


def _make(name: str) -> Resource:
    cpu, gpu, mem = SIZES[name]
    return Resource(cpu=cpu, gpu=gpu, memMB=mem)


#: name -> zero-argument factory
NAMED_RESOURCES: dict[str, Callable[[], Resource]] = {name: partial(_make, name) for name in SIZES}
