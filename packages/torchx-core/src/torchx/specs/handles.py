"""App handles ``{scheduler}://{session_name}/{app_id}`` and the errors about apps and schedulers."""

from __future__ import annotations

from torchx.util.record import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

#: ``{scheduler}://{session_name}/{app_id}``
AppHandle = str

#: compiled on first use (re caches it): keeps import time down
_HANDLE = r"^(?P<scheduler>[A-Za-z0-9_][A-Za-z0-9_.\-]*)://(?P<session>[^/\s]*)/(?P<app_id>[^\s]+)$"


class MalformedAppHandleException(Exception):
    """A string is not an app handle."""

    def __init__(self, app_handle: str) -> None:
        super().__init__(
            f"{app_handle!r} is not an app handle: expected {{scheduler}}://{{session_name}}/{{app_id}},"
            " e.g. local_cwd://torchx/echo-1a2b3c (the handle `torchx run` printed)"
        )
        self.app_handle = app_handle


class UnknownSchedulerException(Exception):
    """No installed plugin provides the scheduler."""


class UnknownAppException(Exception):
    """The scheduler does not know the app (it never existed or was deleted)."""

    def __init__(self, app_handle: str, detail: str = "") -> None:
        super().__init__(
            f"unknown app {app_handle!r}"
            + (f": {detail}" if detail else "")
            + "; check the handle, or `torchx list -s <scheduler>` for the known apps"
        )
        self.app_handle = app_handle


@record(frozen=True)
class ParsedAppHandle:
    """The parts of an app handle; unpacks as ``scheduler_backend, session_name, app_id = ...``.

    Attributes:
        scheduler_backend: the scheduler's name
        session_name: the session (runner) name; may be empty
        app_id: the app's id in the scheduler
    """

    scheduler_backend: str
    session_name: str
    app_id: str

    if TYPE_CHECKING:  # what @record(frozen=True) adds, told to type checkers (upstream's was a NamedTuple)

        def __iter__(self) -> Iterator[str]: ...
        def __getitem__(self, index: int) -> str: ...
        def __len__(self) -> int: ...


def parse_app_handle(app_handle: AppHandle) -> ParsedAppHandle:
    """Splits an app handle into its parts.

    Raises:
        MalformedAppHandleException: the string is not ``{scheduler}://{session_name}/{app_id}``
    """
    if not isinstance(app_handle, str):
        raise MalformedAppHandleException(repr(app_handle))
    import re

    match = re.fullmatch(_HANDLE, app_handle)
    if not match:
        raise MalformedAppHandleException(app_handle)
    return ParsedAppHandle(match["scheduler"], match["session"], match["app_id"])


def make_app_handle(scheduler_backend: str, session_name: str, app_id: str) -> AppHandle:
    """Builds ``{scheduler}://{session_name}/{app_id}``."""
    return f"{scheduler_backend}://{session_name}/{app_id}"
