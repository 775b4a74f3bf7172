from torchx.specs import Resource


def gpu_x2() -> Resource:
    return Resource(cpu=16, gpu=2, memMB=122_000)
