import torchx.specs as specs


def hidden(msg: str = "x") -> specs.AppDef:
    """In a namespace sub-package (no __init__.py): TorchX does not search it.

    Args:
        msg: a message
    """
    return specs.AppDef(name="hidden", roles=[specs.Role(name="hidden", image=".", entrypoint="echo", args=[msg])])
