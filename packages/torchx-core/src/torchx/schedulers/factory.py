"""The type of a scheduler factory, as plugins register them."""

from __future__ import annotations

from typing import Any, Protocol

from torchx.schedulers.api import Scheduler


class SchedulerFactory(Protocol):
    """``create_scheduler(session_name, **kwargs) -> Scheduler``."""

    def __call__(self, session_name: str, **kwargs: Any) -> Scheduler[Any, Any, Any]: ...
