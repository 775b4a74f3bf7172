"""Entry script of a job's supervisor, ``python -I -S _supervise.py <job dir>``, and of its
watchdog, ``... _supervise.py --watchdog <job dir>`` (see :mod:`.launch`).

Run without ``site`` (fast start), so it puts this package's parent directory on
``sys.path`` itself; the job's lock arrives on fd 3.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

if sys.argv[1] == "--watchdog":
    from torchx_sched_local.watchdog import main as watchdog_main

    watchdog_main(sys.argv[2])
else:
    from torchx_sched_local.supervisor import main

    main(sys.argv[1:])
