"""Upstream TorchX's in-job utility programs (``torchx.apps.utils``)."""
