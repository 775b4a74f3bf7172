"""``python -m torchx.apps.serve.serve``: the program ``serve.torchserve`` runs in the job.

It serves a model archive over HTTP and registers it with a TorchServe management API; the
program is ``torchx_components.apps.torchserve`` (same arguments), which needs torchx-components
in the job's image.
"""

from __future__ import annotations

import sys

from torchx.apps import run_components_app

#: the torchx-components module that implements this program
IMPLEMENTATION = "torchx_components.apps.torchserve"


def main(argv: list[str] | None = None) -> int:
    """Runs the program with ``argv`` (default: the command line); returns the exit code."""
    return run_components_app("torchx.apps.serve.serve", IMPLEMENTATION, argv)


if __name__ == "__main__":
    sys.exit(main())
