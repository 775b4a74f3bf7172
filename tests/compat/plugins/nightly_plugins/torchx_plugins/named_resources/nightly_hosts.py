"""Named resources of a platform team's hosts, registered with upstream's decorator."""

from torchx.plugins import WHOLE, halve_mem_down_to, powers_of_two_gpus, register
from torchx.specs import Resource


@register.named_resource(aliases=["nightly_big"], fractionals=powers_of_two_gpus)
def nightly_gpu(fractional: float = WHOLE) -> Resource:
    """An 8-GPU host: nightly_gpu_8 (the whole host), _4, _2 and _1."""
    return Resource(
        cpu=int(96 * fractional),
        gpu=int(8 * fractional),
        memMB=int(1024 * 1024 * fractional),
        capabilities={"node.kubernetes.io/instance-type": "nightly.8gpu"},
    )


@register.named_resource(name="nightly.cpu", fractionals=halve_mem_down_to(minGiB=16))
def cpu_host(fractional: float = WHOLE) -> Resource:
    """A 64 GiB CPU host: nightly.cpu_64, _32 and _16."""
    return Resource(cpu=int(32 * fractional), gpu=0, memMB=int(64 * 1024 * fractional))
