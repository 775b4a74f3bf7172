"""``torchx.runtime.tracking.api``: where upstream TorchX defines the result tracker."""

from torchx_tracker.result_tracker import FsspecResultTracker, KeyType, ResultTracker, ResultType

__all__ = ["FsspecResultTracker", "KeyType", "ResultTracker", "ResultType"]
