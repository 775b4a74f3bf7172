"""AWS instance types as named resources (``aws_p3.2xlarge`` ...), with TorchX's values.

Memory is counted in "taxed" GiB of ``int(1024 * MEM_TAX)`` = 983 MB (a replica sized to
the whole instance still fits next to the host's own use), so ``aws_p3.2xlarge`` has
``61 * 983`` MB. Each resource carries its instance type as the capability
``node.kubernetes.io/instance-type`` and its EFA or Neuron devices in ``devices``. Every
type also has a factory function: ``aws_p3_2xlarge()``.
"""

from __future__ import annotations

from collections.abc import Callable

from torchx.specs.roles import Resource

#: Fraction of an instance's memory a replica may use.
MEM_TAX = 0.96
#: One GiB of instance memory, less the tax, in MB (983).
GiB: int = int(1024 * MEM_TAX)
K8S_ITYPE = "node.kubernetes.io/instance-type"
EFA_DEVICE = "vpc.amazonaws.com/efa"
NEURON_DEVICE = "aws.amazon.com/neurondevice"

# instance type: (vCPU, GPU, memory in taxed GiB, EFA devices, Neuron devices)
INSTANCE_TYPES: dict[str, tuple[int, int, int, int, int]] = {
    "t3.medium": (2, 0, 4, 0, 0),
    "m5.2xlarge": (8, 0, 32, 0, 0),
    "c5.18xlarge": (72, 0, 142, 0, 0),  # 142, not 144: the tax is not enough on this type
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
    "g6e.8xlarge": (32, 1, 256, 0, 0),
    "g6e.12xlarge": (48, 4, 384, 0, 0),
    "g6e.16xlarge": (64, 1, 512, 0, 0),
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
    return Resource(cpu=cpu, gpu=gpu, memMB=mem_gib * GiB, capabilities={K8S_ITYPE: instance_type}, devices=devices)


def instance_type_from_resource(resource: Resource) -> str | None:
    """The instance type a resource names in its ``node.kubernetes.io/instance-type``
    capability (a warning when it names none)."""
    instance_type = resource.capabilities.get(K8S_ITYPE)
    if instance_type is None:
        import warnings

        warnings.warn(
            f"the resource names no instance type; set its {K8S_ITYPE} capability"
            " (multi-node jobs on mixed compute environments need it)",
            stacklevel=2,
        )
    return instance_type  # type: ignore[no-any-return]


def _factory(instance_type: str) -> Callable[[], Resource]:
    def factory() -> Resource:
        return instance_resource(instance_type)

    factory.__name__ = factory.__qualname__ = "aws_" + instance_type.replace(".", "_")
    factory.__doc__ = f"The AWS {instance_type} instance as a :class:`Resource`."
    return factory


#: ``aws_<instance type>`` -> zero-argument factory (also a module attribute: ``aws_p3_2xlarge``)
NAMED_RESOURCES: dict[str, Callable[[], Resource]] = {f"aws_{itype}": _factory(itype) for itype in INSTANCE_TYPES}
globals().update({fn.__name__: fn for fn in NAMED_RESOURCES.values()})
