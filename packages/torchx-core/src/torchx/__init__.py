"""torchx: define a training job once, launch it on any scheduler.

The core distribution (``torchx-core``) holds the job model (:mod:`torchx.specs`),
the runner (:mod:`torchx.runner`), the scheduler interface (:mod:`torchx.schedulers`),
the plugin manager (:mod:`torchx.plugins`) and the CLI shell (:mod:`torchx.cli`).
Backends, components and trackers are separate distributions found at run time; the
upstream TorchX module paths they provide (``torchx.schedulers.slurm_scheduler`` ...)
import through :mod:`torchx.compat.legacy_import`.
"""

from torchx.compat import legacy_import as _legacy_import

_legacy_import.install()  # first: a thread importing torchx.<upstream path> meanwhile must see the finders

from torchx.version import TORCHX_IMAGE as IMAGE  # noqa: E402
from torchx.version import __version__  # noqa: E402

__all__ = ["IMAGE", "__version__"]
