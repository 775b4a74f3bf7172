"""Metrics components.

Example::

    torchx run metrics.tensorboard --logdir s3://bucket/run/tb --exit_on_file s3://bucket/run/done
"""

from __future__ import annotations

from torchx import specs
from torchx.version import TORCHX_IMAGE

from torchx_components.component_helpers import as_given


def tensorboard(
    logdir: str,
    image: str = TORCHX_IMAGE,
    timeout: float = 60 * 60,
    port: int = 6006,
    start_on_file: str = "",
    exit_on_file: str = "",
) -> specs.AppDef:
    """Runs a TensorBoard server on a log directory, for at most a time limit.

    Run it next to a training job: with ``start_on_file``/``exit_on_file`` (written by the
    trainer) it starts and stops with the training. It runs ``python -m
    torchx.apps.utils.process_monitor -- tensorboard ...`` (as TorchX; the program is
    ``torchx_components.apps.process_monitor``), so its image needs
    torchx-components and tensorboard (and fsspec for URL marker files).

    Args:
        logdir: the TensorBoard log directory (a path or URL TensorBoard can read, e.g. s3://...)
        image: the image to run in (ignored by local_cwd, which runs in the current directory)
        timeout: seconds after which TensorBoard is stopped
        port: port TensorBoard listens on (all interfaces)
        start_on_file: start TensorBoard only once this file exists ("" starts at once)
        exit_on_file: stop TensorBoard once this file exists ("" runs until the timeout)
    """
    return specs.AppDef(
        name="tensorboard",
        roles=[
            specs.Role(
                name="tensorboard",
                image=image,
                entrypoint="python",
                args=[
                    "-m",
                    "torchx.apps.utils.process_monitor",
                    "--timeout",
                    str(timeout),
                    "--start_on_file",
                    as_given(start_on_file),
                    "--exit_on_file",
                    as_given(exit_on_file),
                    "--",
                    "tensorboard",
                    "--bind_all",
                    "--port",
                    str(port),
                    "--logdir",
                    as_given(logdir),
                ],
                resource=specs.Resource(cpu=1, gpu=0, memMB=1024),
                port_map={"http": port},
            )
        ],
    )
