"""App handles ``{scheduler}://{session_name}/{app_id}`` and the errors about apps and schedulers."""

from __future__ import annotations

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


class ParsedAppHandle(tuple[str, str, str]):
    """The parts of an app handle: a ``(scheduler_backend, session_name, app_id)`` tuple."""

    __slots__ = ()

    def __new__(cls, scheduler_backend: str, session_name: str, app_id: str) -> ParsedAppHandle:
        return tuple.__new__(cls, (scheduler_backend, session_name, app_id))

    @property
    def scheduler_backend(self) -> str:
        """The scheduler's name."""
        return self[0]

    @property
    def session_name(self) -> str:
        """The session (runner) name; may be empty."""
        return self[1]

    @property
    def app_id(self) -> str:
        """The app's id in the scheduler."""
        return self[2]

    def __repr__(self) -> str:
        return f"ParsedAppHandle(scheduler_backend={self[0]!r}, session_name={self[1]!r}, app_id={self[2]!r})"


def parse_app_handle(app_handle: AppHandle) -> ParsedAppHandle:
    """Splits an app handle into its parts.

    Raises:
        MalformedAppHandleException: the string is not ``{scheduler}://{session_name}/{app_id}``
    """
    if not isinstance(app_handle, str):
        raise MalformedAppHandleException(repr(app_handle))
    import re

    match = re.match(_HANDLE, app_handle)
    if not match:
        raise MalformedAppHandleException(app_handle)
    return ParsedAppHandle(match["scheduler"], match["session"], match["app_id"])


def make_app_handle(scheduler_backend: str, session_name: str, app_id: str) -> AppHandle:
    """Builds ``{scheduler}://{session_name}/{app_id}``."""
    return f"{scheduler_backend}://{session_name}/{app_id}"
