"""torchx.specs.status.aggregate_states: an app's state from its replicas'."""

from __future__ import annotations

import pytest
from torchx.specs.status import AppState, aggregate_states, fail_fast_state


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


@pytest.mark.parametrize(
    ("states", "cancelled", "expected"),
    [
        ([AppState.RUNNING, AppState.FAILED], False, AppState.FAILED),  # fail fast: the rest is being stopped
        ([AppState.SUCCEEDED, AppState.SUCCEEDED], False, AppState.SUCCEEDED),
        ([AppState.SUCCEEDED, AppState.PENDING], False, AppState.RUNNING),
        ([AppState.PENDING, AppState.PENDING], False, AppState.PENDING),
        ([AppState.RUNNING, AppState.SUCCEEDED], True, AppState.CANCELLED),
        ([AppState.SUCCEEDED, AppState.SUCCEEDED], True, AppState.SUCCEEDED),  # ended before the cancel
    ],
)
def test_fail_fast_state(states: list[AppState], cancelled: bool, expected: AppState) -> None:
    assert fail_fast_state(states, cancelled) == expected
    # the other rule, for backends that decide failure themselves, keeps it running
    assert aggregate_states([AppState.RUNNING, AppState.FAILED]) == AppState.RUNNING
