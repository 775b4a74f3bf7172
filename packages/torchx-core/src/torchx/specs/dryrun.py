"""The result of a dry run: the scheduler's native request, printable."""

from __future__ import annotations

from collections.abc import Callable, Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Generic, TypeVar

    from torchx.specs.roles import AppDef
    from torchx.specs.runopts import CfgVal
else:
    from torchx.util.runtime_typing import Generic, TypeVar

T = TypeVar("T")


class AppDryRunInfo(Generic[T]):
    """What a scheduler would submit, without submitting it.

    ``request`` is the scheduler's native request (an sbatch script, a Kubernetes object,
    a Batch job definition ...); ``str(info)`` renders it with ``fmt``. Pass the object to
    :meth:`torchx.runner.Runner.schedule` to submit exactly this request. Its fields are set by
    the submit pipeline (:mod:`torchx.schedulers.submission`) only.
    """

    def __init__(self, request: T, fmt: Callable[[T], str] = repr) -> None:
        self.request = request
        self._fmt = fmt
        self._app: AppDef | None = None
        self._cfg: Mapping[str, CfgVal] = {}
        self._scheduler: str | None = None
        self._parent_run_id: str | None = None
        #: the apps of a job-array request, one per element (empty otherwise)
        self._elements: list[AppDef] = []
        #: what a dry run made without building would build first (see :attr:`workspace_builds`)
        self._workspace_builds: list[str] = []

    @property
    def app(self) -> AppDef | None:
        """The (resolved) app this request was made for."""
        return self._app

    @property
    def cfg(self) -> Mapping[str, CfgVal]:
        """The resolved run options."""
        return self._cfg

    @property
    def scheduler(self) -> str | None:
        """The name of the scheduler that made this request."""
        return self._scheduler

    @property
    def workspace_builds(self) -> list[str]:
        """What a real run would build first, one line per role with a workspace, when this dry
        run was made without building (``torchx run --dryrun``); empty when it built them (then
        ``request`` names the built images). Such a dry run cannot be scheduled."""
        return self._workspace_builds

    def __repr__(self) -> str:
        return self._fmt(self.request)

    __str__ = __repr__

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_fmt"] = repr
        return state
