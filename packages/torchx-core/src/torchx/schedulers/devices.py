"""Upstream TorchX's ``torchx.schedulers.devices``: host devices behind named resource devices.

A :class:`~torchx.specs.Resource` may ask for devices by name (``devices={"vpc.amazonaws.com/efa":
1}``, as the ``aws_p4d.24xlarge`` named resource does); container schedulers mount the host's
device files for them.
"""

from __future__ import annotations

from torchx.specs.mounts import DeviceMount
from torchx.specs.named_resources_aws import EFA_DEVICE, NEURON_DEVICE

__all__ = ["DEVICES", "DEVICE_PATHS", "get_device_mounts", "to_devicemounts"]

#: device name -> path pattern of its ``i``-th device file on the host
DEVICE_PATHS: dict[str, str] = {EFA_DEVICE: "/dev/infiniband/uverbs{}", NEURON_DEVICE: "/dev/neuron{}"}


def to_devicemounts(num_devices: int, device_type: str) -> list[DeviceMount]:
    """``num_devices`` read-write-mknod mounts of the device files of ``device_type`` (same path
    in the container as on the host)."""
    pattern = DEVICE_PATHS[device_type]
    return [DeviceMount(src_path=pattern.format(i), dst_path=pattern.format(i)) for i in range(num_devices)]


#: device name -> ``(count) -> mounts``, as upstream
DEVICES: dict[str, object] = {name: (lambda n, _t=name: to_devicemounts(n, _t)) for name in DEVICE_PATHS}


def get_device_mounts(devices: dict[str, int]) -> list[DeviceMount]:
    """The mounts for every known device in ``devices``; unknown names are skipped with a
    ``UserWarning`` (as TorchX)."""
    mounts: list[DeviceMount] = []
    for name, count in devices.items():
        if name in DEVICE_PATHS:
            mounts += to_devicemounts(count, name)
        else:
            import warnings

            warnings.warn(f"no device files known for {name!r}; skipping it", UserWarning, stacklevel=2)
    return mounts
