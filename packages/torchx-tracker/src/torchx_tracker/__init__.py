"""torchx experiment trackers.

* ``fsspec``: records runs as small JSON files under any fsspec URL
  (:mod:`torchx_tracker.fsspec_backend`);
* ``torchx tracker list ...``: queries the configured tracker (:mod:`torchx_tracker.cli`).

Backends are created by name through :func:`torchx.tracker.build_trackers`; importing this
package imports no backend library.
"""
