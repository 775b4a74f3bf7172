"""Scheduler backends: the :class:`Scheduler` interface and lookup of installed schedulers.

Schedulers come from plugins (``torchx_schedulers`` hook, or the legacy
``torchx.schedulers`` entry points); nothing here imports a backend until it is used.
"""

from __future__ import annotations

from torchx.schedulers.api import DescribeAppResponse, ListAppResponse, Scheduler, Stream
from torchx.schedulers.capabilities import SchedulerCapabilities, UnsupportedFeatureError
from torchx.util.distributions import SCHEDULER_DISTRIBUTIONS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.schedulers.factory import SchedulerFactory

__all__ = [
    "DescribeAppResponse",
    "ListAppResponse",
    "Scheduler",
    "SchedulerCapabilities",
    "SchedulerFactory",
    "Stream",
    "UnsupportedFeatureError",
    "get_default_scheduler_name",
    "get_scheduler_factories",
]

#: schedulers the core knows the package of, for "install X" hints
KNOWN_SCHEDULER_PACKAGES: dict[str, str] = SCHEDULER_DISTRIBUTIONS


def get_scheduler_factories(
    group: str = "torchx.schedulers", skip_defaults: bool = False
) -> dict[str, SchedulerFactory]:
    """Name -> factory of every installed scheduler (importing none of them).

    ``group`` and ``skip_defaults`` are accepted for compatibility and ignored: installed
    plugins and legacy entry points are always merged.
    """
    from torchx.plugins import Ref, get_registry

    return {name: Ref(rec.factory) for name, rec in sorted(get_registry().schedulers.items())}


def get_default_scheduler_name() -> str:
    """``local_cwd`` when installed, else the first installed scheduler by name.

    Raises:
        UnknownSchedulerException: no scheduler plugin is installed
    """
    from torchx.specs.handles import UnknownSchedulerException

    names = sorted(get_scheduler_factories())
    if not names:
        from torchx.util import distributions
        from torchx.util.distributions import pip_install

        raise UnknownSchedulerException(
            f"no scheduler is installed; install one, e.g. `{pip_install(distributions.LOCAL)}`"
        )
    return "local_cwd" if "local_cwd" in names else names[0]


def __getattr__(name: str) -> object:
    if name == "SchedulerFactory":  # a typing.Protocol: imported when asked for, as typing is not free
        from torchx.schedulers.factory import SchedulerFactory

        return SchedulerFactory
    raise AttributeError(f"module 'torchx.schedulers' has no attribute {name!r}")
