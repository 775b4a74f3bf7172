"""Generates the dummy plugin distributions the plugin-overhead scenario installs.

Two flavours, each a tiny hatchling project:

* ``ours``: registers a scheduler, a named resource and a component source as entry points
  of the ``torchx`` group (our plugin API: read from metadata, nothing imported);
* ``legacy``: registers a scheduler and a named resource through upstream TorchX's
  ``torchx.schedulers`` / ``torchx.named_resources`` entry-point groups;
* ``namespace``: one module of the ``torchx_plugins.schedulers`` namespace package (no entry
  point) registering a scheduler and one of ``torchx_plugins.named_resources`` registering a
  fractional named resource, with upstream's ``@register`` decorators (the nightly's way).

Nothing in them is ever called by ``torchx --help``; they exist to be discovered.
"""

from __future__ import annotations

import shutil
from pathlib import Path

#: bump when the generated files change (it is part of the venv stamps)
FORMAT = 3

_PYPROJECT = """\
[build-system]
requires = ["hatchling>=1.18"]
build-backend = "hatchling.build"

[project]
name = "{dist}"
version = "0.0.{format}"
description = "torchx benchmark dummy plugin {index}"
requires-python = ">=3.10"

{entry_points}
[tool.hatch.build.targets.wheel]
packages = ["src/{module}"]
"""

_OURS_ENTRY_POINTS = """\
[project.entry-points.torchx]
"scheduler.bench_dummy_{index}" = "{module}.impl:create_scheduler  # benchmark dummy"
"named_resource.bench_dummy_{index}" = "{module}.impl:resource"
"component.bench_dummy_{index}" = "{module}.components"
"""

_OURS_COMPONENTS = '''\
"""Benchmark dummy components."""

from torchx import specs


def hello(msg: str = "hi") -> specs.AppDef:
    """Echoes ``msg``.

    Args:
        msg: what to echo
    """
    return specs.AppDef("hello", roles=[specs.Role("hello", image="/tmp", entrypoint="echo", args=[msg])])
'''

_LEGACY_ENTRY_POINTS = """\
[project.entry-points."torchx.schedulers"]
bench_legacy_{index} = "{module}.impl:create_scheduler"

[project.entry-points."torchx.named_resources"]
bench_legacy_{index} = "{module}.impl:resource"
"""

_IMPL = '''\
"""Benchmark dummy implementations (never called by the benchmark)."""


def create_scheduler(session_name, **kwargs):
    raise NotImplementedError("benchmark dummy scheduler")


def resource():
    from torchx.specs import Resource

    return Resource(cpu=1, gpu=0, memMB=1024)
'''


_NAMESPACE_PYPROJECT_TAIL = """\
[tool.hatch.build.targets.wheel]
packages = ["src/torchx_plugins"]
"""

_NAMESPACE_SCHEDULER = '''\
"""Benchmark dummy namespace plugin {index}: one scheduler (never created by the benchmark)."""

from torchx.plugins import register


@register.scheduler()
def bench_ns_{index}(session_name, **kwargs):
    raise NotImplementedError("benchmark dummy scheduler")
'''

_NAMESPACE_RESOURCE = '''\
"""Benchmark dummy namespace plugin {index}: a named resource and its power-of-two slices."""

from torchx.plugins import WHOLE, powers_of_two_gpus, register
from torchx.specs import Resource


@register.named_resource(fractionals=powers_of_two_gpus)
def bench_ns_{index}(fractional: float = WHOLE) -> Resource:
    return Resource(cpu=int(8 * fractional), gpu=int(8 * fractional), memMB=int(8192 * fractional))
'''


def _namespace_project(project: Path, fields: dict[str, object]) -> None:
    """A distribution with one namespace module; even indexes register a scheduler, odd ones a
    named resource (so ``count`` projects install ``count`` namespace modules)."""
    kind, text = (
        ("schedulers", _NAMESPACE_SCHEDULER)
        if int(str(fields["index"])) % 2 == 0
        else (
            "named_resources",
            _NAMESPACE_RESOURCE,
        )
    )
    folder = project / "src" / "torchx_plugins" / kind
    folder.mkdir(parents=True)
    pyproject = _PYPROJECT.format(entry_points="", **fields)
    (project / "pyproject.toml").write_text(pyproject.split("[tool.hatch")[0] + _NAMESPACE_PYPROJECT_TAIL)
    (folder / f"bench_ns_{fields['index']}.py").write_text(text.format(**fields))


def generate(root: Path, flavour: str, count: int) -> list[Path]:
    """Writes ``count`` dummy projects of ``flavour`` (``ours``, ``legacy`` or ``namespace``) under ``root``.

    Returns:
        the project directories
    """
    if flavour not in ("ours", "legacy", "namespace"):
        raise ValueError(f"unknown dummy flavour {flavour!r}: use 'ours', 'legacy' or 'namespace'")
    shutil.rmtree(root, ignore_errors=True)
    projects = []
    for i in range(count):
        index = f"{i:02d}"
        dist = f"torchx-bench-{flavour}-dummy-{index}"
        module = f"torchx_bench_{flavour}_dummy_{index}"
        project = root / dist
        fields = {"index": index, "module": module, "dist": dist, "format": FORMAT}
        if flavour == "namespace":
            _namespace_project(project, fields)
            projects.append(project)
            continue
        pkg = project / "src" / module
        pkg.mkdir(parents=True)
        entry_points = (_OURS_ENTRY_POINTS if flavour == "ours" else _LEGACY_ENTRY_POINTS).format(**fields)
        (project / "pyproject.toml").write_text(_PYPROJECT.format(entry_points=entry_points, **fields))
        (pkg / "__init__.py").write_text("")
        (pkg / "impl.py").write_text(_IMPL)
        if flavour == "ours":
            (pkg / "components.py").write_text(_OURS_COMPONENTS)
        projects.append(project)
    return projects
