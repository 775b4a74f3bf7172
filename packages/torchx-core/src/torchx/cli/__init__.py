"""The ``torchx`` command line."""
