"""The job model: :class:`AppDef` made of :class:`Role` s, each with a :class:`Resource`."""

from __future__ import annotations

from enum import Enum

from torchx.specs.mounts import BindMount, DeviceMount, VolumeMount
from torchx.specs.workspace import Workspace
from torchx.util.record import field, record

# names used in field annotations exist at run time, so typing.get_type_hints(Role) works
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from torchx.specs.dryrun import AppDryRunInfo
else:
    from torchx.util.runtime_typing import Any

#: Sentinel for a value that must be set but is not.
MISSING: str = "<MISSING>"
#: Sentinel for "no value" where ``None`` is meaningful.
NONE: str = "<NONE>"
#: Sentinel meaning "every" (e.g. every replica).
ALL: str = "all"
#: Sentinel for a value that cannot be determined.
UNKNOWN: str = "<UNKNOWN>"

#: Memory units: ``4 * GiB`` MB.
GiB: int = 1024

# the tags ``torchx.plugins.resource_tags`` names (kept here so Resource needs no plugin import)
_TAG_RESOURCE_NAME = "torchx/named_resources.name"
_TAG_IS_FRACTIONAL = "torchx/named_resources.is_fractional"


@record
class Resource:
    """What one replica of a role needs.

    Prefer named resources (``resource(h="gpu.small")``) to raw numbers.

    Args:
        cpu: logical CPU cores
        gpu: GPUs
        memMB: memory in MB
        capabilities: extra hardware specs the scheduler interprets (e.g. an instance type)
        devices: named devices and their count (e.g. ``{"vpc.amazonaws.com/efa": 1}``)
        tags: free-form tags (e.g. the named resource this came from)
    """

    cpu: int
    gpu: int
    memMB: int
    capabilities: dict[str, Any] = field(default_factory=dict)
    devices: dict[str, int] = field(default_factory=dict)
    tags: dict[str, object] = field(default_factory=dict)

    def is_fractional(self) -> bool:
        """True when this resource is a slice of a host (set by ``register.named_resource`` fractionals)."""
        return bool(self.tags.get(_TAG_IS_FRACTIONAL, False))

    def get_resource_name(self) -> str | None:
        """The named resource this came from (set by ``register.named_resource``), or None."""
        name = self.tags.get(_TAG_RESOURCE_NAME)
        return None if name is None else str(name)

    @staticmethod
    def copy(original: Resource, **capabilities: Any) -> Resource:
        """Copies ``original`` and sets ``capabilities`` on the copy (they win over the original's)."""
        res = Resource(
            cpu=original.cpu,
            gpu=original.gpu,
            memMB=original.memMB,
            capabilities={**original.capabilities, **capabilities},
            devices=dict(original.devices),
            tags=dict(original.tags),
        )
        return res


#: A resource that was not set: most schedulers refuse it.
NULL_RESOURCE: Resource = Resource(cpu=-1, gpu=-1, memMB=-1)


class RetryPolicy(str, Enum):
    """What is restarted when a replica fails.

    * ``REPLICA``: only the failed replica; the others keep running.
    * ``APPLICATION``: every replica of every role (all schedulers support this).
    * ``ROLE``: every replica of the failed replica's role.
    """

    REPLICA = "REPLICA"
    APPLICATION = "APPLICATION"
    ROLE = "ROLE"


@record
class Role:
    """A set of identical replicas inside an :class:`AppDef`.

    Args:
        name: role name, unique within the app
        image: what the replica runs from: a container image, or a directory for local schedulers
        min_replicas: fewest replicas the job can run with (elastic jobs); ``None`` = ``num_replicas``
        base_image: deprecated, ignored
        entrypoint: the command to run
        args: arguments to the entrypoint (macros are substituted)
        env: environment variables (values may use macros)
        num_replicas: how many replicas to run
        max_retries: how many times to restart after failures before giving up
        retry_policy: what restarts on a failure
        resource: what each replica needs
        port_map: named ports, e.g. ``{"tensorboard": 6006}``
        metadata: free-form, scheduler-specific data (keys ``<scheduler>.<key>``)
        mounts: bind, volume and device mounts
        workspace: local directories to ship with the role
    """

    name: str
    image: str
    min_replicas: int | None = None
    base_image: str | None = None
    entrypoint: str = MISSING
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    num_replicas: int = 1
    max_retries: int = 0
    retry_policy: RetryPolicy = RetryPolicy.APPLICATION
    resource: Resource = field(default_factory=lambda: Resource(cpu=-1, gpu=-1, memMB=-1))
    port_map: dict[str, int] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    mounts: list[BindMount | VolumeMount | DeviceMount] = field(default_factory=list)
    workspace: Workspace | None = None

    def pre_proc(self, scheduler: str, dryrun_info: AppDryRunInfo[Any]) -> AppDryRunInfo[Any]:
        """Lets a role amend the scheduler request; called per role by ``submit_dryrun``."""
        return dryrun_info


@record
class AppDef:
    """A job: one or more :class:`Role` s and app-level metadata.

    Args:
        name: the job's name
        roles: its roles
        metadata: scheduler-specific metadata
    """

    name: str
    roles: list[Role] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)
