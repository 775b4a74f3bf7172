"""``torchx.runtime.tracking`` (upstream TorchX's package path of the result tracker): the names
of :mod:`torchx_tracker.result_tracker`, also as ``torchx.runtime.tracking.api``."""

from torchx_tracker.result_tracker import FsspecResultTracker, KeyType, ResultTracker, ResultType

__all__ = ["FsspecResultTracker", "KeyType", "ResultTracker", "ResultType"]
