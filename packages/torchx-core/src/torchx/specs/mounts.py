"""Mounts a role asks for: host bind mounts, named volumes and devices."""

from __future__ import annotations

import os
from enum import Enum

from torchx.util.record import record


class MountType(str, Enum):
    """The kinds of mount :func:`parse_mounts` understands."""

    BIND = "bind"
    VOLUME = "volume"
    DEVICE = "device"


@record
class BindMount:
    """Mounts a host path into the worker environment.

    Args:
        src_path: the path on the host
        dst_path: the path in the worker environment/container
        read_only: whether the mount should be read only
    """

    src_path: str
    dst_path: str
    read_only: bool = False


@record
class VolumeMount:
    """Mounts a persistent volume (a docker volume, a Kubernetes PVC, ...) into the worker.

    Args:
        src: the name or ID of the volume to mount
        dst_path: the path in the worker environment/container
        read_only: whether the mount should be read only
    """

    src: str
    dst_path: str
    read_only: bool = False


@record
class DeviceMount:
    """Mounts a host device into the container.

    Args:
        src_path: the path on the host
        dst_path: the path in the worker environment/container
        permissions: cgroup permissions: ``r`` read, ``w`` write, ``m`` mknod
    """

    src_path: str
    dst_path: str
    permissions: str = "rwm"


Mount = BindMount | VolumeMount | DeviceMount

_KEY_ALIASES = {
    "type": "type",
    "source": "src",
    "src": "src",
    "destination": "dst",
    "dst": "dst",
    "target": "dst",
    "read_only": "readonly",
    "readonly": "readonly",
    "perm": "perm",
    "permissions": "perm",
}


class MountParseError(ValueError, KeyError):
    """A mount option string is malformed. Also a ``KeyError``, which TorchX raises here."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""  # not KeyError's quoted repr


def _parse_one(group: list[str]) -> Mount:
    opts: dict[str, str] = {}
    for i, item in enumerate(group):
        key, sep, value = item.partition("=")
        key = key.strip().lower()
        if key not in _KEY_ALIASES:
            raise MountParseError(
                f"unknown mount option {key}, must be one of {', '.join(sorted(set(_KEY_ALIASES)))}"
                f" (in {','.join(group)!r})"
            )
        canonical = _KEY_ALIASES[key]
        if i == 0 and canonical != "type":
            raise MountParseError(
                f"type must be specified first: a mount must start with type=bind|volume|device, got {item!r}"
            )
        if canonical == "readonly":
            opts[canonical] = value if sep else "true"
        else:
            if not sep or not value:
                raise MountParseError(f"mount option {key!r} needs a value (e.g. {key}=...)")
            opts[canonical] = value
    kind = opts.get("type", "")
    read_only = opts.get("readonly", "false").lower() in ("true", "1", "yes", "")
    try:
        mount_type = MountType(kind)
    except ValueError:
        raise MountParseError(f"invalid mount type {kind!r}, must be one of bind, volume, device") from None
    if mount_type == MountType.DEVICE:
        if "src" not in opts:
            raise MountParseError("a device mount needs src=/dev/...")
        src = opts["src"]
        return DeviceMount(src_path=src, dst_path=opts.get("dst", src), permissions=opts.get("perm", "rwm"))
    missing = [k for k in ("src", "dst") if k not in opts]
    if missing:
        raise MountParseError(f"a {kind} mount needs {' and '.join(k + '=' for k in missing)}")
    if mount_type == MountType.BIND:
        return BindMount(src_path=os.path.expanduser(opts["src"]), dst_path=opts["dst"], read_only=read_only)
    return VolumeMount(src=opts["src"], dst_path=opts["dst"], read_only=read_only)


def parse_mounts(opts: list[str]) -> list[Mount]:
    """Parses docker-style mount options into mount objects.

    Each mount starts with ``type=``; options may be given as one list item per key or
    comma-joined: ``["type=bind,src=/data,dst=/mnt/data,readonly", "type=volume", "src=v", "dst=/v"]``.

    Args:
        opts: the option strings

    Returns:
        one mount per ``type=`` group

    Raises:
        MountParseError: an option is unknown, missing or malformed
    """
    groups: list[list[str]] = []
    for chunk in opts:
        for item in chunk.split(","):
            item = item.strip()
            if not item:
                continue
            if item.lower().startswith("type=") or not groups:
                groups.append([])
            groups[-1].append(item)
    return [_parse_one(g) for g in groups]
