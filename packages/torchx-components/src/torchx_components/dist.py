"""Distributed PyTorch jobs: ``dist.ddp`` and ``dist.spmd`` start ``torchrun`` on every node.

Examples::

    torchx run dist.ddp -j 2x4 --script train.py -- --lr 0.1     # 2 nodes, 4 processes each
    torchx run dist.ddp -j 1:4x8 -m my.trainer                   # elastic: 1 to 4 nodes
    torchx run -s kubernetes dist.spmd -h gpu.large -j 2 --script train.py   # 2 nodes x 4 GPUs

Each node runs ``bash -c 'exec torchrun --rdzv_backend B --rdzv_endpoint E "$@"' torchrun
ARGS...`` (every argument, macros and user text, is passed to the shell as data); the nodes meet at the c10d rendezvous on
the rank-0 node, whose host the scheduler puts in the variable named by ``macros.rank0_env``.
"""

from __future__ import annotations

from torchx import specs
from torchx.version import TORCHX_IMAGE

from torchx_components.component_helpers import macro_env, resource
from torchx_components.component_helpers import mounts as parse_mounts
from torchx_components.torchrun_args import DEBUG_ENV, entry_name, parse_j, split_name, torchrun_args


def ddp(
    *script_args: str,
    script: str | None = None,
    m: str | None = None,
    image: str = TORCHX_IMAGE,
    name: str = "/",
    h: str | None = None,
    cpu: int = 2,
    gpu: int = 0,
    memMB: int = 1024,
    j: str = "1x2",
    env: dict[str, str] | None = None,
    max_retries: int = 0,
    rdzv_port: int = 29500,
    rdzv_backend: str = "c10d",
    mounts: list[str] | None = None,
    debug: bool = False,
    tee: int = 3,
) -> specs.AppDef:
    """Distributed data parallel training: runs a script or module with torchrun on NNODES x NPROC processes.

    Every process gets the torchrun environment (RANK, LOCAL_RANK, WORLD_SIZE,
    MASTER_ADDR, MASTER_PORT). Give the program with exactly one of --script and -m;
    arguments for it go after ``--``.

    Args:
        script_args: arguments to the script or module
        script: the script to run (a path in the image; local_cwd: relative to the current directory)
        m: the python module to run (as ``python -m``)
        image: the image to run in (ignored by local_cwd, which runs in the current directory)
        name: ``EXPERIMENT/RUN``, ``RUN`` or ``EXPERIMENT/``; the run names the job (default: the
            script's or module's name), the experiment goes to TORCHX_TRACKING_EXPERIMENT_NAME
        h: a named resource per node (e.g. gpu.small); overrides cpu, gpu and memMB
        cpu: CPUs per node
        gpu: GPUs per node
        memMB: memory per node in MB
        j: NNODESxNPROC_PER_NODE (e.g. 2x4), or MIN:MAXxNPROC_PER_NODE for an elastic job
        env: environment variables, e.g. A=1,B=2
        max_retries: how many times to restart the job after a failure
        rdzv_port: port of the c10d rendezvous on the rank-0 node (multi-node jobs)
        rdzv_backend: rendezvous backend: c10d (elastic) or static (fixed nodes, --node_rank from the replica id)
        mounts: mounts, e.g. type=bind,src=/host/dir,dst=/data[,readonly]
        debug: set torch.distributed and CUDA debug environment variables
        tee: torchrun --tee: which worker streams to also write to log files (1 stdout, 2 stderr, 3 both)
    """
    if (script is None) == (m is None):
        given = "both --script and -m" if script is not None else "neither --script nor -m"
        raise ValueError(f"give exactly one of --script FILE or -m MODULE; got {given}")
    shape = parse_j(j)
    role = entry_name(script, m)
    experiment, run = split_name(name, role)
    role_env = {"LOGLEVEL": "WARNING", **(DEBUG_ENV if debug else {}), **(env or {})}
    role_env.setdefault("TORCHX_TRACKING_EXPERIMENT_NAME", experiment)
    role_env.setdefault("TORCHX_TRACKING_RUN_NAME", run)
    args = torchrun_args(
        shape,
        script=script,
        m=m,
        script_args=list(script_args),
        rdzv_backend=rdzv_backend,
        rdzv_port=rdzv_port,
        tee=tee,
    )
    return specs.AppDef(
        name=run,
        roles=[
            specs.Role(
                name=role,
                image=image,
                entrypoint="bash",
                args=args,
                num_replicas=shape.max_nnodes,
                min_replicas=shape.min_nnodes,
                resource=resource(cpu, gpu, memMB, h),
                env=macro_env(role_env),
                max_retries=max_retries,
                port_map={"c10d": rdzv_port},
                mounts=parse_mounts(mounts),
            )
        ],
    )


def spmd(
    *args: str,
    script: str | None = None,
    m: str | None = None,
    image: str = TORCHX_IMAGE,
    name: str = "/",
    h: str = "gpu.small",
    j: str = "1",
    env: dict[str, str] | None = None,
    max_retries: int = 0,
    rdzv_port: int = 29500,
    mounts: list[str] | None = None,
    debug: bool = False,
) -> specs.AppDef:
    """Single-program multiple-data job: one torchrun process per GPU of the named resource on each node.

    ``-j 2 -h gpu.medium`` is ``dist.ddp -j 2x2 -h gpu.medium``. An explicit ``-j NxP`` may
    use fewer processes than the resource has GPUs, never more.

    Args:
        args: arguments to the script or module
        script: the script to run (a path in the image; local_cwd: relative to the current directory)
        m: the python module to run (as ``python -m``)
        image: the image to run in (ignored by local_cwd, which runs in the current directory)
        name: ``EXPERIMENT/RUN``, ``RUN`` or ``EXPERIMENT/`` (see dist.ddp)
        h: the named resource of each node; its GPU count sets the processes per node (1 without GPUs)
        j: NNODES or MIN:MAX nodes (processes per node from h), or NNODESxNPROC_PER_NODE
        env: environment variables, e.g. A=1,B=2
        max_retries: how many times to restart the job after a failure
        rdzv_port: port of the c10d rendezvous on the rank-0 node (multi-node jobs)
        mounts: mounts, e.g. type=bind,src=/host/dir,dst=/data[,readonly]
        debug: set torch.distributed and CUDA debug environment variables
    """
    gpus = resource(0, 0, 0, h).gpu
    shape = parse_j(j, default_nproc=max(gpus, 1))
    if gpus > 0 and shape.nproc_per_node > gpus:
        raise ValueError(
            f"-j {j} starts {shape.nproc_per_node} processes per node but {h} has {gpus} GPU(s);"
            f" use -j {shape.nnodes} to start one per GPU"
        )
    return ddp(
        *args,
        script=script,
        m=m,
        image=image,
        name=name,
        h=h,
        j=shape.j,
        env=env,
        max_retries=max_retries,
        rdzv_port=rdzv_port,
        mounts=mounts,
        debug=debug,
    )
