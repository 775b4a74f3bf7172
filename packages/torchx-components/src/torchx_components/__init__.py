"""The builtin torchx components.

Each public module is a group of components named ``<module>.<function>``:

* ``utils``: ``echo``, ``touch``, ``sh``, ``python``, ``binary``, ``copy``, ``booth``
* ``dist``: ``ddp``, ``spmd`` (``torchrun`` launchers)
* ``serve``: ``torchserve`` (registers a model with a TorchServe management API)
* ``metrics``: ``tensorboard``

``torchx`` lists them from source without importing them; a component's module is
imported only when that component is run. Shared helpers live in ``_``-prefixed modules
(never listed); the programs some components run inside the job live in
:mod:`torchx_components.apps` and are started as ``python -m torchx_components.apps.<name>``.
"""
