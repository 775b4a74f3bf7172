"""Upstream TorchX's in-job programs under their upstream module paths.

``serve.torchserve`` runs ``python -m torchx.apps.serve.serve`` and ``metrics.tensorboard``
runs ``python -m torchx.apps.utils.process_monitor``, as in TorchX. The programs themselves
ship with torchx-components; these modules only start them, so core stays free of them and
a job image without torchx-components gets one line saying what to install.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable

from torchx.util.distributions import COMPONENTS, pip_install


def run_components_app(program: str, module: str, argv: list[str] | None = None) -> int:
    """Runs ``main(argv)`` of ``module``, the torchx-components implementation of the upstream
    program ``program``; returns its exit code.

    Without torchx-components installed, prints one line naming the distribution to install
    and returns 1.
    """
    try:
        app = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name is None or not (module == e.name or module.startswith(e.name + ".")):
            raise
        print(
            f"{program}: error: this program is provided by {COMPONENTS}, which is not installed in"
            f" the job's environment: {pip_install(COMPONENTS)}",
            file=sys.stderr,
        )
        return 1
    main: Callable[[list[str] | None], int] = app.main
    return main(argv)
