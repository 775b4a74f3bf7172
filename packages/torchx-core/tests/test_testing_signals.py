"""``torchx.testing`` puts Ctrl-C back for a test run that inherited SIGINT ignored (started
in the background by a non-interactive shell): a shell a test starts could not even trap it (the
LSF ``bkill`` test hung 100 s in CI started with ``&``)."""

from __future__ import annotations

import signal
import subprocess
import sys

PROBE = """
import signal, subprocess
import torchx.testing
assert signal.getsignal(signal.SIGINT) is signal.default_int_handler, signal.getsignal(signal.SIGINT)
out = subprocess.run(["bash", "-c", 'trap "echo trapped" INT; kill -INT $$; echo done'], capture_output=True, text=True)
print(out.stdout.split())
"""


def test_a_run_that_inherited_sigint_ignored_gets_ctrl_c_back() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),  # as `pytest &` in a script
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['trapped', 'done']"
