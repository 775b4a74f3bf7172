"""``torchx.schedulers.api.Scheduler`` extension points as plugins written for TorchX call them."""

from __future__ import annotations

from typing import Any

import pytest
from torchx import specs
from torchx.schedulers.api import DescribeAppResponse, ListAppResponse, Scheduler
from torchx.specs import AppDryRunInfo


class TwoArgValidate(Scheduler):  # type: ignore[type-arg]
    """A plugin of the TorchX releases whose ``_validate`` took ``(app, scheduler)``."""

    def __init__(self, session_name: str) -> None:
        super().__init__("two_arg", session_name)

    def _validate(self, app: specs.AppDef, scheduler: str) -> None:  # type: ignore[override]
        if len(app.roles) > 1:
            raise ValueError("one role only")
        super()._validate(app, scheduler)  # the base's checks, called with two arguments

    def _submit_dryrun(self, app: specs.AppDef, cfg: Any) -> AppDryRunInfo[str]:
        return AppDryRunInfo(app.name, str)

    def schedule(self, dryrun_info: AppDryRunInfo[Any]) -> str:
        return "id"

    def describe(self, app_id: str) -> DescribeAppResponse | None:
        return None

    def list(self) -> list[ListAppResponse]:  # type: ignore[override]
        return []

    def _cancel_existing(self, app_id: str) -> None:
        pass


def role(**kw: Any) -> specs.Role:
    return specs.Role("r", image="i", entrypoint="e", **kw)


def test_base_validate_called_with_two_arguments() -> None:
    sched = TwoArgValidate("s")
    sched._validate(specs.AppDef("ok", roles=[role(resource=specs.resource(cpu=1))]), "two_arg")
    with pytest.raises(ValueError, match="resource"):  # the base still checks the resource
        sched._validate(specs.AppDef("nores", roles=[role()]), "two_arg")
    with pytest.raises(ValueError, match="one role only"):
        sched._validate(specs.AppDef("two", roles=[role(), role()]), "two_arg")
