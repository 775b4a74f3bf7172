"""The :class:`WorkspaceMixin` interface schedulers mix in to build a role's workspace."""

from __future__ import annotations

from collections.abc import Mapping

from torchx.specs.roles import AppDef, Role
from torchx.specs.runopts import CfgVal, runopts
from torchx.specs.workspace import Workspace
from torchx.workspace.files import IGNORE_FILE, copy_workspace, project_files, walk_workspace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar, Generic, TypeVar
else:
    from torchx.util.runtime_typing import Generic, TypeVar

T = TypeVar("T")


class WorkspaceMixin(Generic[T]):
    """Builds a role's workspace into something the scheduler can run, and updates the role.

    Implement :meth:`caching_build_workspace_and_update_role` (or the older
    :meth:`build_workspace_and_update_role`); add options in :meth:`workspace_opts`.
    ``T`` is the type of the images-to-push description (see :meth:`dryrun_push_images`).
    """

    #: False for a stand-in that cannot build anything (see :func:`workspace_mixin_or_placeholder`)
    available: ClassVar[bool] = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)

    def workspace_opts(self) -> runopts:
        """Run options the workspace understands."""
        return runopts()

    def build_workspace_and_update_role(self, role: Role, workspace: str, cfg: Mapping[str, CfgVal]) -> None:
        """Builds ``workspace`` and points ``role`` (its image) at the result."""
        raise NotImplementedError(f"{type(self).__name__} does not build workspaces")

    def caching_build_workspace_and_update_role(
        self, role: Role, cfg: Mapping[str, CfgVal], build_cache: dict[object, object]
    ) -> None:
        """Builds ``role.workspace`` (reusing ``build_cache`` across roles) and updates ``role``."""
        if role.workspace is None:
            return
        key = (str(role.workspace), role.image)
        if key in build_cache:
            role.image = str(build_cache[key])
            return
        self.build_workspace_and_update_role(role, str(role.workspace), cfg)
        build_cache[key] = role.image

    def build_workspaces(self, roles: list[Role], cfg: Mapping[str, CfgVal]) -> None:
        """Builds the workspace of every role that has one.

        A role whose image is already what this scheduler built from that workspace is left
        as it is, so building first and then dry-running (which builds too, unless asked not
        to, see :mod:`torchx.schedulers.submission`) builds once.
        """
        built: set[tuple[str, str]] = self.__dict__.setdefault("_torchx_built_workspaces", set())
        cache: dict[object, object] = {}
        for role in roles:
            if role.workspace is not None and (str(role.workspace), role.image) not in built:
                self.caching_build_workspace_and_update_role(role, cfg, cache)
                built.add((str(role.workspace), role.image))

    def forget_build(self, role: Role) -> None:
        """Makes :meth:`build_workspaces` build ``role``'s workspace even if ``role.image`` is what
        this scheduler built from it before (a workspace given again builds the current files)."""
        self.__dict__.get("_torchx_built_workspaces", set()).discard((str(role.workspace), role.image))

    def describe_workspaces(self, roles: list[Role], cfg: Mapping[str, CfgVal]) -> list[str]:
        """What :meth:`build_workspaces` would do, without doing it: one line per role with a
        workspace. A dry run that does not build calls this instead (nothing is built, copied or
        imported); each such role's image is pointed at what the build would make, where that
        is known before building, else at a stand-in naming the build."""
        return [self.describe_workspace_build(role, cfg) for role in roles if role.workspace is not None]

    def describe_workspace_build(self, role: Role, cfg: Mapping[str, CfgVal]) -> str:
        """What building ``role``'s workspace would do (one line), and points ``role.image`` at
        what the build would make or a stand-in naming it. Override it where the build is known
        better; this one names the workspace and the base image."""
        line = f"role {role.name!r}: build workspace {role.workspace} on image {role.image}"
        role.image = f"<image built from {role.image} + workspace {role.workspace}>"
        return line

    def dryrun_push_images(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> T:
        """Describes the images :meth:`push_images` would push (and retags the roles)."""
        raise NotImplementedError

    def push_images(self, images_to_push: T) -> None:
        """Pushes what :meth:`dryrun_push_images` described."""
        raise NotImplementedError


def get_workspace_mixin(name: str) -> type[WorkspaceMixin[Any]]:
    """The workspace mixin class a plugin registered as ``name`` (e.g. ``"docker"``).

    Raises:
        LookupError: no installed plugin provides it (the message names the package to install)
    """
    from torchx.plugins import Ref, get_registry

    record = get_registry().workspaces.get(name)
    if record is None:
        from torchx.util import distributions
        from torchx.util.distributions import pip_install

        hint = f" ({pip_install(distributions.LOCAL_DOCKER)})" if name == "docker" else ""
        raise LookupError(f"no workspace plugin {name!r} is installed{hint}")
    cls: type[WorkspaceMixin[Any]] = Ref(record.mixin).load()
    return cls


class WorkspaceUnavailableError(RuntimeError):
    """A role has a workspace but no installed plugin can build it."""


class UnavailableWorkspace(WorkspaceMixin[None]):
    """Stands in for a workspace plugin that is not installed: roles without a workspace run
    their image as it is; a role with one gets an error saying what to install."""

    available: ClassVar[bool] = False
    workspace_name: ClassVar[str] = ""
    install_hint: ClassVar[str] = ""
    reason: ClassVar[str] = ""

    def build_workspace_and_update_role(self, role: Role, workspace: str, cfg: Mapping[str, CfgVal]) -> None:
        """Always fails: nothing can build the workspace."""
        raise self._unavailable(role, workspace)

    def describe_workspace_build(self, role: Role, cfg: Mapping[str, CfgVal]) -> str:
        """Fails as the real build would: a dry run says now what the run would say."""
        raise self._unavailable(role, str(role.workspace))

    def _unavailable(self, role: Role, workspace: str) -> WorkspaceUnavailableError:
        from torchx.util.distributions import pip_install

        return WorkspaceUnavailableError(
            f"role {role.name!r} has a workspace ({workspace}) but no {self.workspace_name!r} workspace plugin can"
            f" build it ({self.reason}): {pip_install(self.install_hint)}, or run the image as it is with"
            " --workspace ''"
        )

    def dryrun_push_images(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> None:
        """Nothing was built, so nothing is pushed."""
        return None

    def push_images(self, images_to_push: None) -> None:
        """Nothing to push."""


def workspace_mixin_or_placeholder(name: str, install_hint: str) -> type[WorkspaceMixin[Any]]:
    """The workspace mixin registered as ``name``, or an :class:`UnavailableWorkspace` that
    explains (with ``install_hint``) why it is missing. For schedulers that mix it in."""
    from torchx.plugins import PluginLoadError

    try:
        return get_workspace_mixin(name)
    except (LookupError, PluginLoadError) as e:
        reason = " ".join(str(e).split())
        attrs = {"workspace_name": name, "install_hint": install_hint, "reason": reason}
        return type(f"Unavailable_{name}_Workspace", (UnavailableWorkspace,), attrs)


__all__ = [
    "IGNORE_FILE",
    "UnavailableWorkspace",
    "Workspace",
    "WorkspaceMixin",
    "WorkspaceUnavailableError",
    "copy_workspace",
    "get_workspace_mixin",
    "walk_workspace",
    "workspace_mixin_or_placeholder",
    "project_files",
]
