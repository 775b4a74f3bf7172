"""The :class:`Runner`: submit apps to schedulers and manage them by app handle.

Usage::

    from torchx.runner import get_runner

    with get_runner() as runner:
        handle = runner.run_component("utils.echo", ["--msg", "hi"], scheduler="local_cwd")
        print(runner.wait(handle))
"""

from torchx.runner.api import Runner, get_runner

__all__ = ["Runner", "get_runner"]
