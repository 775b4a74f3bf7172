"""Model serving components.

Example::

    torchx run serve.torchserve --model_path s3://bucket/model.mar \\
        --management_api http://torchserve:8081 --params initial_workers=1,synchronous=true

The app definition is TorchX's (app ``torchx-torchserve``, role ``worker``, each parameter
passed as ``--<name> <value>``); the job runs ``python -m torchx.apps.serve.serve`` (as TorchX),
which starts ``torchx_components.apps.torchserve``.
"""

from __future__ import annotations

from torchx import specs
from torchx.version import TORCHX_IMAGE

from torchx_components.component_helpers import as_given

#: port the job serves the model archive on while TorchServe downloads it
DEFAULT_PORT = 8222


def torchserve(
    model_path: str,
    management_api: str,
    image: str = TORCHX_IMAGE,
    params: dict[str, str] | None = None,
    dryrun: bool = False,
    port: int = 8222,
) -> specs.AppDef:
    """Registers a model archive with a running TorchServe through its management API.

    The job fetches the archive, serves it over HTTP on ``port`` and asks TorchServe to
    download and load it (``POST /models``). It runs ``python -m
    torchx.apps.serve.serve`` (``torchx_components.apps.torchserve``), so its image needs
    torchx-components (and
    fsspec for URL model paths); TorchServe must be able to reach the job on ``port``.

    Args:
        model_path: the model archive (.mar): a path or an fsspec URL (e.g. s3://bucket/model.mar)
        management_api: TorchServe's management API, e.g. http://torchserve:8081
        image: the image to run in (ignored by local_cwd, which runs in the current directory)
        params: registration parameters, e.g. model_name=m,initial_workers=1,synchronous=true
        dryrun: fetch the archive and print the request without registering
        port: port the archive is served on while TorchServe downloads it
    """
    args = ["-m", "torchx.apps.serve.serve", "--model_path", model_path, "--management_api", management_api]
    if port != DEFAULT_PORT:
        args += ["--port", str(port)]
    for key, value in (params or {}).items():
        args += [f"--{key}", str(value)]
    if dryrun:
        args.append("--dryrun")
    return specs.AppDef(
        name="torchx-torchserve",
        roles=[
            specs.Role(
                name="worker",
                image=image,
                entrypoint="python",
                args=[as_given(a) for a in args],
                resource=specs.Resource(cpu=1, gpu=0, memMB=1024),
                port_map={"model-download": port},
            )
        ],
    )
