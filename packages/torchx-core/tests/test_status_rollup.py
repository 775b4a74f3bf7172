"""torchx.specs.status.aggregate_states: an app's state from its replicas'."""

from __future__ import annotations

import pytest
from torchx.specs.status import AppState, aggregate_states


@pytest.mark.parametrize(
    ("states", "app"),
    [
        ([AppState.RUNNING, AppState.PENDING], AppState.RUNNING),
        ([AppState.PENDING, AppState.SUCCEEDED], AppState.PENDING),
        ([AppState.FAILED, AppState.SUCCEEDED], AppState.FAILED),
        ([AppState.FAILED, AppState.CANCELLED], AppState.CANCELLED),
        ([AppState.SUCCEEDED, AppState.SUCCEEDED], AppState.SUCCEEDED),
        ([AppState.UNKNOWN, AppState.SUCCEEDED], AppState.UNKNOWN),
        ([], AppState.UNKNOWN),
    ],
)
def test_aggregate_states(states: list[AppState], app: AppState) -> None:
    assert aggregate_states(states) == app
