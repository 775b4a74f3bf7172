"""The ``docker`` workspace: builds an image ``FROM role.image`` with the workspace copied in.

Schedulers that run containers mix :class:`DockerWorkspaceMixin` in (``local_docker``
here; the Kubernetes and AWS schedulers get it with
``torchx.workspace.get_workspace_mixin("docker")``). The build uses the Docker engine's
classic builder through the ``docker`` SDK (no BuildKit needed); remote schedulers then
retag and push the image to ``image_repo`` (:meth:`DockerWorkspaceMixin.dryrun_push_images`,
:meth:`DockerWorkspaceMixin.push_images`).

A workspace may bring its own ``Dockerfile.torchx``; it gets the build argument ``IMAGE``
(the role's image). Files matched by the workspace's ``.torchxignore`` or ``.dockerignore``
are left out.
"""

from __future__ import annotations

import io
import logging
import tarfile
import tempfile
from collections.abc import Iterable, Mapping
from typing import IO, TYPE_CHECKING, Any, ClassVar

from torchx.specs.roles import AppDef, Role
from torchx.specs.runopts import CfgVal, runopts
from torchx.specs.workspace import Workspace
from torchx.workspace.api import WorkspaceMixin, project_files

if TYPE_CHECKING:
    from docker import DockerClient

logger: logging.Logger = logging.getLogger(__name__)

#: label on every image and container torchx makes: the torchx version that made it
LABEL_VERSION = "torchx.pytorch.org/version"
#: the Dockerfile a workspace may provide
TORCHX_DOCKERFILE = "Dockerfile.torchx"
_DEFAULT_DOCKERFILE = b"ARG IMAGE\nFROM $IMAGE\nCOPY . .\n"
#: what a workspace's ``.dockerignore`` leaves out is not in the image either (as in TorchX)
DOCKER_IGNORE_FILE = ".dockerignore"

#: local image id -> (repository, tag) to push
ImagesToPush = dict[str, tuple[str, str]]


def torchx_version() -> str:
    """The installed torchx-core version (for image and container labels)."""
    from torchx.version import __version__

    return str(__version__)


def docker_client() -> DockerClient:
    """A client for the engine the environment names (``DOCKER_HOST`` or the local socket).

    Raises:
        ModuleNotFoundError: the ``docker`` SDK is not installed or cannot be imported (the message
            says how to install it)
    """
    try:
        import docker
    except ImportError as e:
        missing = isinstance(e, ModuleNotFoundError) and e.name == "docker"
        what = "is not installed" if missing else f"cannot be imported ({' '.join(str(e).split())})"
        raise ModuleNotFoundError(f"the docker SDK {what}: pip install 'torchx-sched-local[docker]'") from None
    return docker.from_env()


def build_context(workspace: Workspace, out: IO[bytes]) -> bool:
    """Writes the build context of ``workspace`` as a tar to ``out``.

    Returns True if the workspace brings its own ``Dockerfile.torchx``.
    """
    own_dockerfile = False
    with tarfile.open(fileobj=out, mode="w") as tar:
        for path, arcname in project_files(workspace, also_ignore=(DOCKER_IGNORE_FILE,)):
            own_dockerfile = own_dockerfile or arcname == TORCHX_DOCKERFILE
            tar.add(path, arcname=arcname, recursive=False)
        if not own_dockerfile:
            info = tarfile.TarInfo(TORCHX_DOCKERFILE)
            info.size = len(_DEFAULT_DOCKERFILE)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(_DEFAULT_DOCKERFILE))
    return own_dockerfile


class MissingImageRepoError(KeyError, ValueError):
    """A locally built image must be pushed but ``image_repo`` is not set. A ``KeyError`` (the
    missing run option), as TorchX raises, and a ``ValueError`` (bad input); it reads as its
    message, not as a quoted key."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class DockerWorkspaceMixin(WorkspaceMixin[ImagesToPush]):
    """Builds a role's workspace into a Docker image and points ``role.image`` at it.

    Args:
        docker_client: the client to use (default: one from the environment, made when first needed)
    """

    #: whether the scheduler runs roles without the docker SDK (Kubernetes, Batch: the SDK only
    #: builds the workspace), so a missing SDK's error may suggest running without a workspace
    runs_without_docker_sdk: ClassVar[bool] = True

    def __init__(self, *args: Any, docker_client: DockerClient | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._docker: DockerClient | None = docker_client

    @property
    def _docker_client(self) -> DockerClient:
        if self._docker is None:
            self._docker = docker_client()
        return self._docker

    def workspace_opts(self) -> runopts:
        """``image_repo`` (where remote schedulers push built images) and ``quiet``."""
        opts = runopts()
        opts.add(
            "image_repo",
            type_=str,
            help="repository to push workspace images to, e.g. registry.example.com/team/app"
            " (needed by remote schedulers when a workspace is built)",
        )
        opts.add("quiet", type_=bool, default=False, help="do not log the image build output")
        return opts

    def build_workspace_and_update_role(self, role: Role, workspace: str, cfg: Mapping[str, CfgVal]) -> None:
        """Builds ``FROM role.image`` + the workspace; sets ``role.image`` to the new image id.

        Raises:
            docker.errors.BuildError: the build failed (its log is in the message)
        """
        ws = role.workspace if role.workspace is not None else Workspace.from_str(workspace)
        if ws is None:
            return
        try:
            client = self._docker_client
        except ModuleNotFoundError as e:
            if not self.runs_without_docker_sdk:
                raise
            raise ModuleNotFoundError(f'{e}; or run the image as it is, without a workspace: --workspace ""') from None
        with tempfile.TemporaryFile() as context:
            build_context(ws, context)
            context.seek(0)
            image, log = client.images.build(
                fileobj=context,
                custom_context=True,
                dockerfile=TORCHX_DOCKERFILE,
                buildargs={"IMAGE": role.image},
                pull=False,
                rm=True,
                labels={LABEL_VERSION: torchx_version()},
            )
        if not cfg.get("quiet"):
            for entry in log:
                text = str(entry.get("stream", "")).rstrip()
                if text:
                    logger.info("workspace build: %s", text)
        logger.info("built workspace %s on %s as %s", ws, role.image, image.id)
        role.image = str(image.id)

    def describe_workspace_build(self, role: Role, cfg: Mapping[str, CfgVal]) -> str:
        """The image the build would make and, with ``image_repo``, where it would be pushed; the
        docker SDK is not needed (``role.image`` becomes a stand-in: the id is known once built)."""
        line = f"role {role.name!r}: build an image FROM {role.image} with workspace {role.workspace} copied in"
        role.image = f"<image built from {role.image} + workspace {role.workspace}>"
        repo = cfg.get("image_repo")
        return f"{line}, then push it to {repo}:<its image id>" if repo else line

    def dryrun_push_images(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> ImagesToPush:
        """Retags roles that run a locally built image to ``image_repo:<image hash>``.

        Returns what :meth:`push_images` must push.

        Raises:
            MissingImageRepoError: an image was built but ``image_repo`` is not set (a
                ``KeyError``, as TorchX raises, and a ``ValueError``)
        """
        images: ImagesToPush = {}
        for role in app.roles:
            if not role.image.startswith("sha256:"):
                continue
            repo = cfg.get("image_repo")
            if not repo:
                raise MissingImageRepoError(
                    f"role {role.name!r} runs a locally built workspace image; set -cfg image_repo=<registry/repo>"
                    " so it can be pushed where the scheduler can pull it"
                )
            tag = role.image.split(":", 1)[1]
            images[role.image] = (str(repo), tag)
            role.image = f"{repo}:{tag}"
        return images

    def push_images(self, images_to_push: ImagesToPush) -> None:
        """Tags and pushes the images.

        Raises:
            RuntimeError: the registry refused a push (``failed to push docker image: <its error>``;
                the image being pushed is logged before)
        """
        client = self._docker_client
        for local, (repo, tag) in images_to_push.items():
            client.images.get(local).tag(repo, tag=tag)
            logger.info("pushing image %s:%s", repo, tag)
            print_push_events(client.images.push(repo, tag=tag, stream=True, decode=True))


#: ``docker push`` in blue, the prefix of every line :func:`print_push_events` writes
_PUSH_HEADER = "\033[34mdocker push \033[0m"


def print_push_events(events: Iterable[Mapping[str, Any]], stream: IO[str] | None = None) -> None:
    """Writes the progress of a ``docker push`` (the decoded events of
    ``client.images.push(..., stream=True, decode=True)``) to ``stream`` (default stderr), as
    TorchX does: a blue ``docker push`` prefix, one line per layer that is redrawn in place
    (cursor moves and a line clear) as its status and progress change, and the push's own
    status lines.

    Raises:
        RuntimeError: an event reports an error (``failed to push docker image: <error>``)
    """
    import sys

    out = stream or sys.stderr
    layers: list[str] = []  # in the order their lines were written
    for event in events:
        if "error" in event:
            raise RuntimeError(f"failed to push docker image: {event['error']}")
        status = event.get("status")
        if not status:
            continue
        layer = event.get("id")
        if not layer:
            out.write(f"{_PUSH_HEADER}{status}\n")
            continue
        line = f"{_PUSH_HEADER}{layer}: {status} {event.get('progress', '')}"
        if layer not in layers:
            layers.append(layer)
            out.write(f"{line}\n")
        else:
            up = len(layers) - layers.index(layer)  # lines between the cursor and the layer's line
            out.write(f"\033[{up}F\033[2K{line}\033[{up}E")
