"""Upstream TorchX's ``torchx.runner.events``: usage events of the runner API.

``with log_event("run", "local_cwd") as ctx: ...`` times the block and, when it ends, logs a
:class:`TorchxEvent` (JSON) at INFO to the ``torchx.runner.events`` logger; the exception that
left the block, if any, is recorded in it. The :class:`~torchx.runner.api.Runner` records one
event per call of ``dryrun``, ``schedule``, ``status``, ``wait``, ``cancel``, ``describe``,
``list`` and ``log_lines``. To receive them, attach a handler to that logger
(``logging.getLogger("torchx.runner.events").addHandler(h)``). As TorchX's, the logger lets INFO
through and does not pass events on to the root logger, so ``torchx --verbose`` or a
``logging.basicConfig(level=INFO)`` does not print them. While no handler is attached (the
default), an event is neither timed nor serialized, and this module does not even import
:mod:`logging` (the CLI starts faster without it).
"""

from __future__ import annotations

import enum
import sys
import time

# `record` below is upstream's event logger: the data-class decorator goes by another name here
from torchx.util.record import record as data_class
from torchx.util.record import to_dict

TYPE_CHECKING = False
if TYPE_CHECKING:
    import logging
    from types import TracebackType

__all__ = ["SourceType", "TorchxEvent", "log_event", "record"]


def _listener() -> logging.Logger | None:
    """The events logger if a handler is attached to it (and it lets INFO through), else None
    (no ``logging`` imported yet means no handler can exist)."""
    logging = sys.modules.get("logging")
    if logging is None:
        return None
    logger = logging.getLogger(__name__)
    if logger.propagate:  # first use: set it up as TorchX's (its own handlers only, INFO and up)
        logger.propagate = False
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.INFO)
    return logger if logger.handlers and logger.isEnabledFor(logging.INFO) else None


class SourceType(str, enum.Enum):
    """Who called the API."""

    UNKNOWN = "UNKNOWN"
    EXTERNAL = "EXTERNAL"


@data_class
class TorchxEvent:
    """One call of a runner API (fields as upstream's dataclass)."""

    session: str
    scheduler: str
    api: str
    app_id: str | None = None
    app_image: str | None = None
    runcfg: str | None = None
    raw_exception: str | None = None
    source: SourceType = SourceType.UNKNOWN
    cpu_time_usec: int | None = None
    wall_time_usec: int | None = None
    start_epoch_time_usec: int | None = None
    workspace: str | None = None

    def serialize(self) -> str:
        """The event as a JSON object."""
        import json  # only when an event is recorded: ``json`` imports ``re``

        return json.dumps({k: (v.value if isinstance(v, SourceType) else v) for k, v in to_dict(self).items()})

    @staticmethod
    def deserialize(data: str | TorchxEvent) -> TorchxEvent:
        """Inverse of :meth:`serialize` (an event is returned as is)."""
        if isinstance(data, TorchxEvent):
            return data
        import json

        fields = json.loads(data)
        fields["source"] = SourceType(fields.get("source", "UNKNOWN"))
        return TorchxEvent(**fields)

    def __str__(self) -> str:
        return self.serialize()


def record(event: TorchxEvent, destination: str = "null") -> None:
    """Logs ``event`` (``destination`` is accepted as upstream's; the logger's handlers decide)."""
    logger = _listener()
    if logger is not None:
        logger.info(event.serialize())


class log_event:
    """Context manager that records one :class:`TorchxEvent` for the block it wraps."""

    def __init__(
        self,
        api: str,
        scheduler: str | None = None,
        app_id: str | None = None,
        app_image: str | None = None,
        runcfg: str | None = None,
        workspace: str | None = None,
    ) -> None:
        self._torchx_event = TorchxEvent(
            session=app_id or "",
            scheduler=scheduler or "",
            api=api,
            app_id=app_id,
            app_image=app_image,
            runcfg=runcfg,
            workspace=workspace,
        )
        self._start_cpu = 0.0
        self._start_wall = 0.0
        self._listened = False

    @property
    def event(self) -> TorchxEvent:
        """The event being recorded (fill in what the block learns, such as ``app_id``)."""
        return self._torchx_event

    def __enter__(self) -> log_event:
        self._listened = _listener() is not None
        if not self._listened:
            return self
        self._start_cpu = time.process_time()
        self._start_wall = time.perf_counter()
        self._torchx_event.start_epoch_time_usec = int(time.time() * 1e6)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        if not self._listened:
            return None
        event = self._torchx_event
        event.cpu_time_usec = int((time.process_time() - self._start_cpu) * 1e6)
        event.wall_time_usec = int((time.perf_counter() - self._start_wall) * 1e6)
        if exc is not None:
            event.raw_exception = f"{type(exc).__name__}: {exc}"
        record(event)
        return None
