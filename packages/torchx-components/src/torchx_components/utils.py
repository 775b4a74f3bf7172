"""General-purpose components: run a command, a python program or a binary, copy a file, and small test apps.

Examples::

    torchx run utils.echo --msg hello
    torchx run utils.sh -- ls -l /tmp
    torchx run utils.python hello.py --name world
    torchx run utils.python -m http.server 8080
    torchx run utils.copy --src s3://bucket/model.pt --dst /tmp/model.pt
"""

from __future__ import annotations

from torchx import specs
from torchx.specs.macros import macros
from torchx.version import TORCHX_IMAGE

from torchx_components.component_helpers import as_given, macro_env, resource
from torchx_components.component_helpers import mounts as parse_mounts

_APPS = "torchx_components.apps"


def echo(msg: str = "hello world", image: str = TORCHX_IMAGE, num_replicas: int = 1) -> specs.AppDef:
    """Prints a message to stdout (a quick check that a scheduler runs jobs).

    Args:
        msg: the message to print
        image: the image to run in (ignored by local_cwd, which runs in the current directory)
        num_replicas: how many copies to run
    """
    return specs.AppDef(
        name="echo",
        roles=[
            specs.Role(
                name="echo",
                image=image,
                entrypoint="echo",
                args=[as_given(msg)],
                num_replicas=num_replicas,
                resource=specs.Resource(cpu=1, gpu=0, memMB=1024),
            )
        ],
    )


def touch(file: str, image: str = TORCHX_IMAGE) -> specs.AppDef:
    """Creates an empty file (or updates its modification time) on the machine the job runs on.

    Args:
        file: path of the file to touch
        image: the image to run in (ignored by local_cwd, which runs in the current directory)
    """
    return specs.AppDef(
        name="touch",
        roles=[
            specs.Role(
                name="touch",
                image=image,
                entrypoint="touch",
                args=[as_given(file)],
                resource=specs.Resource(cpu=1, gpu=0, memMB=1024),
            )
        ],
    )


def sh(
    *args: str,
    image: str = TORCHX_IMAGE,
    num_replicas: int = 1,
    cpu: int = 1,
    gpu: int = 0,
    memMB: int = 1024,
    h: str | None = None,
    env: dict[str, str] | None = None,
    max_retries: int = 0,
    mounts: list[str] | None = None,
    entrypoint: str | None = None,
) -> specs.AppDef:
    """Runs a command through a shell (``sh -c '"$@"' sh ARGS...``), each argument passed through unchanged.

    Each argument is one word for the shell, so ``$VAR``, ``|`` and ``;`` reach the command
    literally; for shell syntax run a shell explicitly: ``torchx run utils.sh -- sh -c 'ls | wc -l'``.
    Macros (``${app_id}``, ``${replica_id}``, ``${img_root}``) in an argument are filled in as
    data: a quote or ``$(...)`` in their values is never run.

    Args:
        args: the command and its arguments
        image: the image to run in (ignored by local_cwd, which runs in the current directory)
        num_replicas: how many copies to run
        cpu: CPUs per replica
        gpu: GPUs per replica
        memMB: memory per replica in MB
        h: a named resource (e.g. cpu.small); overrides cpu, gpu and memMB
        env: environment variables, e.g. A=1,B=2
        max_retries: how many times to restart the job after a failure
        mounts: mounts, e.g. type=bind,src=/host/dir,dst=/data[,readonly]
        entrypoint: the shell to run the command with (default: sh)
    """
    if not args:
        raise ValueError("utils.sh needs a command to run, e.g. `torchx run utils.sh -- echo hello`")
    return specs.AppDef(
        name="sh",
        roles=[
            specs.Role(
                name="sh",
                image=image,
                entrypoint=as_given(entrypoint or "sh"),
                args=macros.shell_args('"$@"', args),
                num_replicas=num_replicas,
                resource=resource(cpu, gpu, memMB, h),
                env=macro_env(env or {}),
                max_retries=max_retries,
                mounts=parse_mounts(mounts),
            )
        ],
    )


def python(
    *args: str,
    m: str | None = None,
    c: str | None = None,
    script: str | None = None,
    image: str = TORCHX_IMAGE,
    name: str = "torchx_utils_python",
    cpu: int = 1,
    gpu: int = 0,
    memMB: int = 1024,
    h: str | None = None,
    num_replicas: int = 1,
    mounts: list[str] | None = None,
) -> specs.AppDef:
    """Runs a python module (-m), code (-c) or script (--script, or a first argument ending in .py).

    Examples: ``torchx run utils.python hello.py world``,
    ``torchx run utils.python -m http.server 8080``,
    ``torchx run utils.python -c 'import sys; print(sys.version)'``.

    Args:
        args: arguments to the program (the first one is the script when it ends in .py and
            none of -m, -c, --script is given)
        m: the module to run, as ``python -m``
        c: the code to run, as ``python -c``
        script: the script file to run
        image: the image to run in (ignored by local_cwd, which runs in the current directory)
        name: the job's name
        cpu: CPUs per replica
        gpu: GPUs per replica
        memMB: memory per replica in MB
        h: a named resource (e.g. cpu.small); overrides cpu, gpu and memMB
        num_replicas: how many copies to run
        mounts: mounts, e.g. type=bind,src=/host/dir,dst=/data[,readonly]
    """
    given = {flag: value for flag, value in (("-m", m), ("-c", c), ("--script", script)) if value is not None}
    if not given and args and args[0].endswith(".py"):
        script, args = args[0], args[1:]
        given = {"--script": script}
    if len(given) != 1:
        got = f"got {' and '.join(given)}" if given else "got none"
        raise ValueError(
            f"give exactly one of -m MODULE, -c CODE or --script FILE (or a .py file as the first argument); {got}"
        )
    if m is not None:
        program = ["-m", m]
    elif c is not None:
        program = ["-c", c]
    else:
        program = [str(script)]
    return specs.AppDef(
        name=name,
        roles=[
            specs.Role(
                name="python",
                image=image,
                entrypoint="python",
                args=[as_given(a) for a in (*program, *args)],
                num_replicas=num_replicas,
                resource=resource(cpu, gpu, memMB, h),
                mounts=parse_mounts(mounts),
            )
        ],
    )


def binary(
    *args: str,
    entrypoint: str,
    image: str = TORCHX_IMAGE,
    name: str = "torchx_utils_binary",
    num_replicas: int = 1,
    cpu: int = 1,
    gpu: int = 0,
    memMB: int = 1024,
    h: str | None = None,
) -> specs.AppDef:
    """Runs an executable directly (no shell) with the given arguments.

    Args:
        args: arguments to the executable
        entrypoint: the executable (a path, or a name looked up on PATH)
        image: the image to run in (ignored by local_cwd, which runs in the current directory)
        name: the job's name
        num_replicas: how many copies to run
        cpu: CPUs per replica
        gpu: GPUs per replica
        memMB: memory per replica in MB
        h: a named resource (e.g. cpu.small); overrides cpu, gpu and memMB
    """
    return specs.AppDef(
        name=name,
        roles=[
            specs.Role(
                name="binary",
                image=image,
                entrypoint=as_given(entrypoint),
                args=[as_given(a) for a in args],
                num_replicas=num_replicas,
                resource=resource(cpu, gpu, memMB, h),
            )
        ],
    )


def copy(src: str, dst: str, image: str = TORCHX_IMAGE, mounts: list[str] | None = None) -> specs.AppDef:
    """Copies a file or directory between fsspec URLs (s3://, gs://, file paths, ...).

    The job runs ``python -m torchx_components.apps.copy``, so its image needs
    ``torchx-components[copy]`` (fsspec) and the fsspec backend of each URL (e.g. s3fs).

    Args:
        src: the source URL or path
        dst: the destination URL or path (a directory source is copied into it)
        image: the image to run in (ignored by local_cwd, which runs in the current directory)
        mounts: mounts, e.g. type=bind,src=/host/dir,dst=/data[,readonly]
    """
    return specs.AppDef(
        name="torchx-utils-copy",
        roles=[
            specs.Role(
                name="torchx-utils-copy",
                image=image,
                entrypoint="python",
                args=["-m", f"{_APPS}.copy", "--src", as_given(src), "--dst", as_given(dst)],
                resource=specs.Resource(cpu=1, gpu=0, memMB=1024),
                mounts=parse_mounts(mounts),
            )
        ],
    )


def booth(
    x1: float,
    x2: float,
    trial_idx: int = 0,
    tracker_base: str = "/tmp/torchx-util-booth",
    image: str = TORCHX_IMAGE,
) -> specs.AppDef:
    """Evaluates the Booth function at (x1, x2), a test objective for hyper-parameter optimization.

    ``(x1 + 2*x2 - 7)^2 + (2*x1 + x2 - 5)^2``, minimal (0) at (1, 3). The job writes
    ``{"booth_eval": value}`` as JSON to ``<tracker_base>/<trial_idx>.json`` (a local path,
    or an fsspec URL when the image has fsspec).

    Args:
        x1: the first coordinate
        x2: the second coordinate
        trial_idx: the trial's index (names the result file)
        tracker_base: directory or URL the result is written under
        image: the image to run in (ignored by local_cwd, which runs in the current directory)
    """
    return specs.AppDef(
        name="booth",
        roles=[
            specs.Role(
                name="booth",
                image=image,
                entrypoint="python",
                args=[
                    "-m",
                    f"{_APPS}.booth",
                    "--x1",
                    repr(float(x1)),
                    "--x2",
                    repr(float(x2)),
                    "--trial_idx",
                    str(trial_idx),
                    "--tracker_base",
                    as_given(tracker_base),
                ],
                resource=specs.Resource(cpu=1, gpu=0, memMB=1024),
            )
        ],
    )
