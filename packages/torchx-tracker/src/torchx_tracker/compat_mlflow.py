"""``torchx.tracker.mlflow``: upstream TorchX's module path of the MLflow tracker backend.

Code written for TorchX imports from here (through core's import hook) unchanged; the
backend needs ``torchx-tracker[mlflow]`` only when a tracker is created.
"""

from torchx_tracker.mlflow_backend import MlflowTracker as MLflowTracker
from torchx_tracker.mlflow_backend import create as create_tracker

__all__ = ["MLflowTracker", "create_tracker"]
