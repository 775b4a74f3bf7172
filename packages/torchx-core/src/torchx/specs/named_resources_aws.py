"""AWS instance types as named resources (``aws_p3.2xlarge`` ...).

Memory is the instance's memory less a 4% allowance for the host (the "memory tax"), so
a replica sized to the whole instance still fits on it. Each resource carries the
instance type as the capability ``node.kubernetes.io/instance-type`` and its EFA or
Neuron devices in ``devices``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from torchx.specs.roles import GiB, Resource

#: Fraction of an instance's memory a replica may use.
MEM_TAX = 0.96
K8S_ITYPE = "node.kubernetes.io/instance-type"
EFA_DEVICE = "vpc.amazonaws.com/efa"
NEURON_DEVICE = "aws.amazon.com/neurondevice"

# instance type: (vCPU, GPU, memory GiB, EFA devices, Neuron devices)
INSTANCE_TYPES: dict[str, tuple[int, int, int, int, int]] = {
    "t3.medium": (2, 0, 4, 0, 0),
    "m5.2xlarge": (8, 0, 32, 0, 0),
    "c5.18xlarge": (72, 0, 144, 0, 0),
    "p3.2xlarge": (8, 1, 61, 0, 0),
    "p3.8xlarge": (32, 4, 244, 0, 0),
    "p3.16xlarge": (64, 8, 488, 0, 0),
    "p3dn.24xlarge": (96, 8, 768, 1, 0),
    "p4d.24xlarge": (96, 8, 1152, 4, 0),
    "p4de.24xlarge": (96, 8, 1152, 4, 0),
    "p5.48xlarge": (192, 8, 2048, 32, 0),
    "p5en.48xlarge": (192, 8, 2048, 16, 0),
    "g4dn.xlarge": (4, 1, 16, 0, 0),
    "g4dn.2xlarge": (8, 1, 32, 0, 0),
    "g4dn.4xlarge": (16, 1, 64, 0, 0),
    "g4dn.8xlarge": (32, 1, 128, 1, 0),
    "g4dn.12xlarge": (48, 4, 192, 1, 0),
    "g4dn.16xlarge": (64, 1, 256, 1, 0),
    "g4dn.metal": (96, 8, 384, 1, 0),
    "g5.xlarge": (4, 1, 16, 0, 0),
    "g5.2xlarge": (8, 1, 32, 0, 0),
    "g5.4xlarge": (16, 1, 64, 0, 0),
    "g5.8xlarge": (32, 1, 128, 1, 0),
    "g5.12xlarge": (48, 4, 192, 1, 0),
    "g5.16xlarge": (64, 1, 256, 1, 0),
    "g5.24xlarge": (96, 4, 384, 1, 0),
    "g5.48xlarge": (192, 8, 768, 1, 0),
    "g6e.xlarge": (4, 1, 32, 0, 0),
    "g6e.2xlarge": (8, 1, 64, 0, 0),
    "g6e.4xlarge": (16, 1, 128, 0, 0),
    "g6e.8xlarge": (32, 1, 256, 1, 0),
    "g6e.12xlarge": (48, 4, 384, 1, 0),
    "g6e.16xlarge": (64, 1, 512, 1, 0),
    "g6e.24xlarge": (96, 4, 768, 2, 0),
    "g6e.48xlarge": (192, 8, 1536, 4, 0),
    "trn1.2xlarge": (8, 0, 32, 0, 1),
    "trn1.32xlarge": (128, 0, 512, 8, 16),
    "inf2.xlarge": (4, 0, 16, 0, 1),
    "inf2.8xlarge": (32, 0, 128, 0, 1),
    "inf2.24xlarge": (96, 0, 384, 0, 6),
    "inf2.48xlarge": (192, 0, 768, 0, 12),
}


def instance_resource(instance_type: str) -> Resource:
    """The :class:`Resource` of one AWS instance type (e.g. ``"p3.2xlarge"``)."""
    cpu, gpu, mem_gib, efa, neuron = INSTANCE_TYPES[instance_type]
    devices: dict[str, int] = {}
    if efa:
        devices[EFA_DEVICE] = efa
    if neuron:
        devices[NEURON_DEVICE] = neuron
    return Resource(
        cpu=cpu,
        gpu=gpu,
        memMB=int(mem_gib * GiB * MEM_TAX),
        capabilities={K8S_ITYPE: instance_type},
        devices=devices,
        tags={"torchx/named_resource": f"aws_{instance_type}"},
    )


#: ``aws_<instance type>`` -> zero-argument factory
NAMED_RESOURCES: dict[str, Callable[[], Resource]] = {
    f"aws_{itype}": partial(instance_resource, itype) for itype in INSTANCE_TYPES
}
