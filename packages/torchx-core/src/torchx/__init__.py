"""torchx: define a training job once, launch it on any scheduler.

The core distribution (``torchx-core``) holds the job model (:mod:`torchx.specs`),
the runner (:mod:`torchx.runner`), the scheduler interface (:mod:`torchx.schedulers`),
the plugin manager (:mod:`torchx.plugins`) and the CLI shell (:mod:`torchx.cli`).
Backends, components and trackers are separate distributions found at run time.
"""

from torchx.version import __version__

__all__ = ["__version__"]
