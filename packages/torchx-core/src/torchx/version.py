"""The TorchX API level this torchx implements, and the default image of the builtin components.

``torchx.__version__`` is the version of the TorchX API implemented (``0.7.0``), so code that
checks it (``packaging.version.parse(torchx.__version__) >= parse("0.7")``) and the version
labels schedulers put on jobs read as they do with TorchX. Each distribution's own release
version is in its metadata: ``importlib.metadata.version("torchx-core")``.
"""

import os

from torchx.util.distributions import CORE

#: TorchX API level implemented
__version__ = "0.7.0"

#: Image used by components when the caller gives none (overridable with ``TORCHX_IMAGE``).
TORCHX_IMAGE: str = os.environ.get("TORCHX_IMAGE", f"ghcr.io/pytorch/torchx:{__version__}")


def distribution_version(name: str = CORE) -> str:
    """The installed version of distribution ``name`` ("unknown" if it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"
