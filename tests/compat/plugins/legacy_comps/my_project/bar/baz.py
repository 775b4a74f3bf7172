import torchx.specs as specs


def trainer(name: str = "test app", epochs: int = 1) -> specs.AppDef:
    """Writes a marker file named after the app, in the directory the job runs in.

    Args:
        name: the app name
        epochs: how many epochs to pretend to train
    """
    return specs.AppDef(
        name="trainer",
        roles=[
            specs.Role(
                name="trainer",
                image=".",
                entrypoint="sh",
                args=["-c", f"echo trained {name} for {epochs} epochs"],
                resource=specs.Resource(cpu=1, gpu=0, memMB=128),
            )
        ],
    )
