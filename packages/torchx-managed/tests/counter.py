"""A counter that checkpoints every step to TORCHX_CHECKPOINT_DIR and resumes from it.

    python counter.py N STEP_SECONDS [EXIT_CODE_PLAN]

Counts 1..N, one step every STEP_SECONDS; after each step writes the count to
``count`` (atomically) and appends ``attempt step`` to ``steps``. On start it writes its pid
to ``pid-<attempt>``. EXIT_CODE_PLAN ("1,1,0" or "33,33,0"): attempt k exits with the k-th
code once it started (0: count to the end); attempts past the plan count to the end.
"""

import os
import sys
import time

n, step = int(sys.argv[1]), float(sys.argv[2])
plan = [int(c) for c in sys.argv[3].split(",")] if len(sys.argv) > 3 else []
ckpt = os.environ["TORCHX_CHECKPOINT_DIR"]
attempt = int(os.environ["TORCHX_ATTEMPT"])
os.makedirs(ckpt, exist_ok=True)
with open(os.path.join(ckpt, f"pid-{attempt}"), "w") as f:
    f.write(str(os.getpid()))
print(f"attempt {attempt} starts", flush=True)
if attempt < len(plan) and plan[attempt] != 0:
    sys.exit(plan[attempt])
count_file = os.path.join(ckpt, "count")
count = 0
if os.path.exists(count_file):
    with open(count_file) as f:
        count = int(f.read())
print(f"attempt {attempt} resumes at {count}", flush=True)
while count < n:
    time.sleep(step)
    count += 1
    with open(count_file + ".tmp", "w") as f:
        f.write(str(count))
        f.flush()
        os.fsync(f.fileno())
    os.replace(count_file + ".tmp", count_file)
    with open(os.path.join(ckpt, "steps"), "a") as f:
        f.write(f"{attempt} {count}\n")
print(f"attempt {attempt} done at {count}", flush=True)
