"""The docker-image workspace of ``aws_batch``: the installed ``docker`` workspace plugin, or a
stand-in that explains how to get it."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from torchx.specs.roles import AppDef, Role
from torchx.specs.runopts import CfgVal
from torchx.workspace.api import WorkspaceMixin

logger: logging.Logger = logging.getLogger(__name__)


class MissingDockerWorkspace(WorkspaceMixin[dict[str, Any]]):
    """Stands in for the ``docker`` workspace when no plugin provides it.

    Roles without a workspace run their image as it is; a role with one gets an error
    that says what to install (or how to opt out).
    """

    reason: str = "no workspace plugin 'docker' is installed (pip install 'torchx-sched-local[docker]')"

    def build_workspace_and_update_role(self, role: Role, workspace: str, cfg: Mapping[str, CfgVal]) -> None:
        """Raises: shipping a workspace needs the docker workspace plugin."""
        raise RuntimeError(
            f"cannot ship workspace {workspace!r} with role {role.name!r}: {self.reason};"
            " or run the image as it is (torchx run --workspace '' ...)"
        )

    def dryrun_push_images(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> dict[str, Any]:
        """Nothing to push: no image was built."""
        return {}

    def push_images(self, images_to_push: dict[str, Any]) -> None:
        """Nothing to push."""


def docker_workspace_mixin() -> type[WorkspaceMixin[Any]]:
    """The class of the installed ``docker`` workspace, else :class:`MissingDockerWorkspace`."""
    from torchx.workspace.api import get_workspace_mixin

    try:
        return get_workspace_mixin("docker")
    except Exception as e:  # not installed, or its plugin failed to import
        logger.debug("docker workspace unavailable: %s", e)
        reason = str(e).split("\n", 1)[0]
        return type("MissingDockerWorkspace", (MissingDockerWorkspace,), {"reason": reason})
