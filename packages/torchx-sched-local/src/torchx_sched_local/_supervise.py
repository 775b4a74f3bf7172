"""Entry script of a job's supervisor, ``python -I -S _supervise.py <job dir>``, and of its
watchdog, ``... _supervise.py --watchdog <supervisor pid> <job dir> [cancelling]`` (see :mod:`.watchdog`).

Run without ``site`` (fast start), so it puts this package's parent directory on
``sys.path`` itself; the job's lock arrives on fd 3. Before importing anything, the
supervisor takes a few spare descriptors: if its file-descriptor limit was lowered to what
it holds (a supervisor replacing itself mid-job keeps its replicas' pipes), it gives one
back for each import or file that could not be opened, instead of dying.
"""

import errno
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

if sys.argv[1] == "--watchdog":
    from torchx_sched_local.watchdog import main as watchdog_main

    watchdog_main(int(sys.argv[2]), sys.argv[3], sys.argv[4:] == ["cancelling"])
else:
    room: list[int] = []
    try:
        while len(room) < 8:
            room.append(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))
    except OSError:
        pass
    while True:
        try:
            from torchx_sched_local.supervisor import main

            break
        except OSError as e:
            if e.errno not in (errno.EMFILE, errno.ENFILE) or not room:
                raise
            os.close(room.pop())
    main(sys.argv[1:], room)
