"""Imports torchx modules of every layer when imported (the runner, the builtin components
through their upstream path, the scheduler API, a tracker) and builds a resource with them."""

import torchx.components.dist
import torchx.runner
import torchx.schedulers.api
import torchx.tracker  # noqa: F401
from torchx.plugins import register
from torchx.specs import Resource

_BASE = Resource(cpu=3, gpu=0, memMB=1536)


@register.named_resource()
def acme_cpu_3() -> Resource:
    return Resource(cpu=_BASE.cpu, gpu=_BASE.gpu, memMB=_BASE.memMB)
