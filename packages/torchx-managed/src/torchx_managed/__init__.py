"""torchx-managed: the ``managed`` scheduler, jobs that finish.

It runs an app on other installed schedulers (``targets``) and restarts it after preemption,
node loss and application errors, within budgets, resuming from ``TORCHX_CHECKPOINT_DIR``
(see the package's README for the checkpoint contract).
"""

from torchx_managed.attempts import ENV_ATTEMPT, ENV_CHECKPOINT_DIR

__all__ = ["ENV_ATTEMPT", "ENV_CHECKPOINT_DIR"]
