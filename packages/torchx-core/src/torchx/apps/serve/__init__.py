"""Upstream TorchX's in-job programs of the serve components (``torchx.apps.serve``)."""
