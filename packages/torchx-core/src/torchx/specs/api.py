"""All of :mod:`torchx.specs` in one module, for code that imports from ``torchx.specs.api``."""

from torchx.specs.dryrun import AppDryRunInfo
from torchx.specs.handles import (
    AppHandle,
    MalformedAppHandleException,
    ParsedAppHandle,
    UnknownAppException,
    UnknownSchedulerException,
    make_app_handle,
    parse_app_handle,
)
from torchx.specs.macros import macros
from torchx.specs.mounts import BindMount, DeviceMount, Mount, MountType, VolumeMount, parse_mounts
from torchx.specs.roles import ALL, MISSING, NONE, NULL_RESOURCE, UNKNOWN, AppDef, Resource, RetryPolicy, Role
from torchx.specs.runopts import CfgVal, InvalidRunConfigException, get_type_name, runopt, runopts
from torchx.specs.status import (
    AppState,
    AppStatus,
    AppStatusError,
    ReplicaState,
    ReplicaStatus,
    RoleStatus,
    is_started,
    is_terminal,
)
from torchx.specs.workspace import Workspace

__all__ = [
    "ALL",
    "MISSING",
    "NONE",
    "NULL_RESOURCE",
    "UNKNOWN",
    "AppDef",
    "AppDryRunInfo",
    "AppHandle",
    "AppState",
    "AppStatus",
    "AppStatusError",
    "BindMount",
    "CfgVal",
    "DeviceMount",
    "InvalidRunConfigException",
    "MalformedAppHandleException",
    "Mount",
    "MountType",
    "ParsedAppHandle",
    "ReplicaState",
    "ReplicaStatus",
    "Resource",
    "RetryPolicy",
    "Role",
    "RoleStatus",
    "UnknownAppException",
    "UnknownSchedulerException",
    "VolumeMount",
    "Workspace",
    "get_type_name",
    "is_started",
    "is_terminal",
    "macros",
    "make_app_handle",
    "parse_app_handle",
    "parse_mounts",
    "runopt",
    "runopts",
]
