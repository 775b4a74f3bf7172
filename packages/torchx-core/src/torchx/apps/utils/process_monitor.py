"""``python -m torchx.apps.utils.process_monitor``: the program ``metrics.tensorboard`` runs.

It runs a command between two marker files, for at most a time limit; the program is
``torchx_components.apps.process_monitor`` (same arguments), which needs torchx-components in
the job's image.
"""

from __future__ import annotations

import sys

from torchx.apps import run_components_app

#: the torchx-components module that implements this program
IMPLEMENTATION = "torchx_components.apps.process_monitor"


def main(argv: list[str] | None = None) -> int:
    """Runs the program with ``argv`` (default: the command line); returns the exit code."""
    return run_components_app("torchx.apps.utils.process_monitor", IMPLEMENTATION, argv)


if __name__ == "__main__":
    sys.exit(main())
