"""Version of ``torchx-core`` and the default container image of the builtin components."""

import os

__version__ = "0.1.0"

#: Image used by components when the caller gives none (overridable with ``TORCHX_IMAGE``).
TORCHX_IMAGE: str = os.environ.get("TORCHX_IMAGE", "ghcr.io/pytorch/torchx:0.7.0")
