"""TorchX's image providers: where a ``local_cwd`` role's replicas run from (its image root,
program and working directory). :mod:`.compat_local` exports them under TorchX's module path; the
scheduler reads ``CWDImageProvider`` from here (no import of that module on its own path)."""

import abc
import os
from collections.abc import Mapping

from torchx.specs.roles import Role
from torchx.specs.runopts import CfgVal

from torchx_sched_local.replica_param import ReplicaParam


class ImageProvider(abc.ABC):
    """Turns a role's image into a local directory the replica runs from (upstream's interface).

    ``LocalScheduler(session, image_provider_class=...)`` calls the class with the run options
    (``cfg``) once per dry run and asks the provider, for each role, for its image root
    (``fetch_role``, the ``img_root`` macro), its program (``get_entrypoint``) and its working
    directory (``get_cwd``; None: the current one). ``local_cwd`` uses ``CWDImageProvider``.

    Args:
        cfg: the run options of the dry run
    """

    def __init__(self, cfg: Mapping[str, CfgVal] | None = None) -> None:
        self.cfg: Mapping[str, CfgVal] = cfg or {}

    @abc.abstractmethod
    def fetch(self, image: str) -> str:
        """Makes ``image`` available locally and returns its directory (the ``img_root``)."""

    def fetch_role(self, role: Role) -> str:
        """``fetch`` of the role's image."""
        return self.fetch(role.image)

    @abc.abstractmethod
    def get_cwd(self, image: str) -> str | None:
        """The working directory replicas of ``image`` run in (None: the caller's)."""

    @abc.abstractmethod
    def get_entrypoint(self, img_root: str, role: Role) -> str:
        """The program to execute for ``role`` given the fetched ``img_root``."""

    def get_replica_param(
        self,
        img_root: str,
        role: Role,
        stdout: str | None = None,
        stderr: str | None = None,
        combined: str | None = None,
    ) -> ReplicaParam:
        """The ``ReplicaParam`` running ``role`` from ``img_root`` with the given log files."""
        args = [self.get_entrypoint(img_root, role), *role.args]
        return ReplicaParam(args, dict(role.env), stdout, stderr, combined, self.get_cwd(role.image))


class LocalDirectoryImageProvider(ImageProvider):
    """The image is an existing local directory; replicas run in it."""

    def fetch(self, image: str) -> str:
        """Returns ``image``; raises ValueError when it is not a directory."""
        if not os.path.isdir(image):
            raise ValueError(f"invalid image {image!r}: not a directory")
        return image

    def get_cwd(self, image: str) -> str | None:
        """Replicas run in the image directory."""
        return image

    def get_entrypoint(self, img_root: str, role: Role) -> str:
        """``role.entrypoint`` as it is, as in TorchX: replicas run in ``img_root``, so a relative
        path (``bin/run.sh``) is found there, and a bare name on ``PATH``, which ends with it."""
        return role.entrypoint


class CWDImageProvider(ImageProvider):
    """The image is ignored: replicas run from the current working directory (``local_cwd``)."""

    def fetch(self, image: str) -> str:
        """``os.getcwd()``."""
        return os.getcwd()

    def get_cwd(self, image: str) -> str | None:
        """``os.getcwd()``."""
        return os.getcwd()

    def get_entrypoint(self, img_root: str, role: Role) -> str:
        """``role.entrypoint`` unchanged (looked up on PATH)."""
        return role.entrypoint
