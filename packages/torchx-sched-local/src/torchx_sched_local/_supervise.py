"""Entry script of a job's supervisor: ``python -I -S _supervise.py <job dir>`` (see :mod:`.launch`).

Run without ``site`` (fast start), so it puts this package's parent directory on
``sys.path`` itself; the job's lock arrives on fd 3.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from torchx_sched_local.supervisor import main  # noqa: E402

main(sys.argv[1:])
