"""The ``torchx`` command line."""

from torchx.cli.stop_signals import remember_interrupts as _remember_interrupts

# first thing: a Ctrl-C while the CLI's modules are imported may be dropped by Python (raised in
# an import's weakref callback); remembered, it still stops the command (see stop_signals)
_remember_interrupts()
