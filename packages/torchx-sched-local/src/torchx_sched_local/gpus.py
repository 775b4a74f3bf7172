"""Counting this machine's GPUs and giving each local replica its own (``CUDA_VISIBLE_DEVICES``)."""

from __future__ import annotations

import os

_PROC_GPUS = "/proc/driver/nvidia/gpus"


def count_gpus() -> int:
    """How many NVIDIA GPUs this machine has: ``nvidia-smi -L``, else ``/proc/driver/nvidia/gpus``; 0 if neither."""
    import shutil

    smi = shutil.which("nvidia-smi")
    if smi:
        import subprocess

        try:
            out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30, check=True).stdout
            return sum(1 for line in out.splitlines() if line.startswith("GPU "))
        except (OSError, subprocess.SubprocessError):
            pass
    try:
        return len(os.listdir(_PROC_GPUS))
    except OSError:
        return 0


def assign_gpus(requests: list[tuple[int, int]], device_count: int) -> list[list[str]]:
    """Distinct device lists for every replica, in order.

    Args:
        requests: per role, ``(gpus per replica, number of replicas)``
        device_count: GPUs on the machine

    Returns:
        per role, per replica, the ``CUDA_VISIBLE_DEVICES`` value (``""`` for replicas without GPUs)

    Raises:
        ValueError: the replicas ask for more GPUs than the machine has
    """
    total = sum(max(gpu, 0) * replicas for gpu, replicas in requests)
    if total > device_count:
        raise ValueError(
            f"auto_set_cuda_visible_devices: the app needs {total} GPUs (gpus per replica x replicas)"
            f" but this machine has {device_count}; lower the roles' resource.gpu or num_replicas,"
            " or run without auto_set_cuda_visible_devices"
        )
    out: list[list[str]] = []
    next_device = 0
    for gpu, replicas in requests:
        per_role: list[str] = []
        for _ in range(replicas):
            if gpu > 0:
                per_role.append(",".join(str(d) for d in range(next_device, next_device + gpu)))
                next_device += gpu
            else:
                per_role.append("")
        out.append(per_role)
    return out
