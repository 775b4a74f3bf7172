"""Compatibility sources of plugin registrations, each feeding :class:`torchx.plugins.registry.Registry`
through its one clash rule (``SOURCE_RANKS``), and upstream TorchX's plugin API:

* :mod:`torchx.compat.legacy`: upstream's entry-point groups (``torchx.schedulers`` ...);
* :mod:`torchx.compat.namespace`: the ``torchx_plugins.*`` namespace packages;
* :mod:`torchx.compat.authoring` and :mod:`torchx.compat.plugin_registry`: ``@register``,
  ``registry()``, ``PluginRegistry``, ``PluginType`` (re-exported by :mod:`torchx.plugins`);
* :mod:`torchx.compat.legacy_import`: upstream module paths (``torchx.schedulers.slurm_scheduler``);
* :mod:`torchx.compat.hook_modules`: hook modules of the entry-point group ``torchx`` (its
  entries named without a dot).

The native way to register is :mod:`torchx.plugins` (``<kind>.<name>`` entry points of the group
``torchx``, read from metadata).
"""
