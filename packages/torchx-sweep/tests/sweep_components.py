"""Components the sweep tests run (no torchx in the job: plain python3)."""

from __future__ import annotations

import torchx.specs as specs

#: prints its arguments as one JSON list; then appends it to RUNS_FILE (if set) and sleeps
SCRIPT = (
    "import json, os, sys, time\n"
    "line = json.dumps(sys.argv[1:3])\n"
    "print(line, flush=True)\n"
    "runs = os.environ.get('RUNS_FILE')\n"
    "if runs:\n"
    "    with open(runs, 'a') as f: f.write(line + '\\n')\n"
    "time.sleep(float(sys.argv[3]))\n"
    "sys.exit(1 if sys.argv[1] == 'fail' else 0)\n"
)


def argv(a: str, b: str, sleep: float = 0.0, runs_file: str = "", image: str = "python:3") -> specs.AppDef:
    """Prints ``[a, b]`` as JSON; exits 1 when ``a`` is ``fail``.

    Args:
        a: first value
        b: second value
        sleep: seconds to sleep after printing
        runs_file: a file each run appends its arguments to
        image: the container image (ignored by local_cwd)
    """
    env = {"RUNS_FILE": runs_file} if runs_file else {}
    return specs.AppDef(
        name="argv",
        roles=[
            specs.Role(
                name="argv",
                image=image,
                entrypoint="python3",
                args=["-c", SCRIPT, a, b, str(sleep)],
                env=env,
                resource=specs.Resource(cpu=1, gpu=0, memMB=128),
            )
        ],
    )


def typed(n: int, image: str = "python:3") -> specs.AppDef:
    """Exits 0; ``n`` must be an int.

    Args:
        n: a number
        image: the container image
    """
    return specs.AppDef(
        name="typed",
        roles=[specs.Role(name="t", image=image, entrypoint="true", args=[str(n)], resource=specs.Resource(1, 0, 64))],
    )
