"""Runs TorchX 0.7's own unit tests against the installed torchx and counts what passes.

Usage (from a TorchX source tree at tag v0.7.0, e.g. ``git clone -b v0.7.0
https://github.com/pytorch/torchx``)::

    python scripts/compat/upstream_tests.py /path/to/torchx [--round1] [TEST_FILE ...] [-- PYTEST_ARG ...]

Each test file (default: :data:`FILES`, the tests of the documented API this project mirrors;
``--round1``: the seven of :data:`ROUND1`)
is copied into a scratch tree with every module-level ``from X import a, b`` split into one
guarded import per name: a name torchx does not provide (most are private helpers upstream's
tests reach into) becomes a stand-in that fails the tests using it, not the whole file. Each
``torchx/<pkg>/test`` directory becomes ``torchx.<pkg>.test`` of the installed package (its
helpers and fixtures). ``importlib_metadata`` is the standard library's. Each file runs in a
pytest process of its own. A failure is counted against the documented API unless it comes
from upstream's internals (:data:`INTERNALS`: a name or attribute torchx does not provide, a
patch of one); the last line gives both figures.

Replicas run with the interpreter's directory first on ``PATH``, as in an activated virtualenv.
The ``local_docker`` live tests need the Docker SDK importable and ``busybox`` on the engine
(``local_docker`` would pull it from Docker Hub): when a selected file runs them and the
``docker`` CLI is there, ``busybox-image.sh`` beside this script first makes a real
``busybox:latest`` from Debian's ``busybox-static`` (idempotent; a failure is reported and the
count goes on, with those tests failing on the missing image).
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

#: the upstream test files of the documented API: specs (AppDef, runopts, named resources,
#: builders, the component linter and finder), the runner and ``.torchxconfig``, the Scheduler API
#: and the public scheduler modules, components, workspaces, trackers
FILES = [
    "torchx/specs/test/api_test.py",
    "torchx/specs/test/finder_test.py",
    "torchx/specs/test/builders_test.py",
    "torchx/specs/test/file_linter_test.py",
    "torchx/specs/test/named_resources_test.py",
    "torchx/specs/test/named_resources_aws_test.py",
    "torchx/specs/test/named_resources_generic_test.py",
    "torchx/runner/test/api_test.py",
    "torchx/runner/test/config_test.py",
    "torchx/schedulers/test/api_test.py",
    "torchx/schedulers/test/devices_test.py",
    "torchx/schedulers/test/streams_test.py",
    "torchx/schedulers/test/local_scheduler_test.py",
    "torchx/schedulers/test/docker_scheduler_test.py",
    "torchx/schedulers/test/slurm_scheduler_test.py",
    "torchx/schedulers/test/lsf_scheduler_test.py",
    "torchx/schedulers/test/kubernetes_scheduler_test.py",
    "torchx/schedulers/test/kubernetes_mcad_scheduler_test.py",
    "torchx/schedulers/test/aws_batch_scheduler_test.py",
    "torchx/schedulers/test/ray_scheduler_test.py",
    "torchx/components/test/utils_test.py",
    "torchx/components/test/dist_test.py",
    "torchx/components/test/serve_test.py",
    "torchx/components/test/metrics_test.py",
    "torchx/components/test/structured_arg_test.py",
    "torchx/workspace/test/dir_workspace_test.py",
    "torchx/workspace/test/docker_workspace_test.py",
    "torchx/runtime/tracking/test/api_test.py",
    "torchx/tracker/test/api_test.py",
    "torchx/tracker/backend/test/fsspec_test.py",
]

#: the seven files round 1 of issue 31 measured (``--round1`` selects them, for comparison)
ROUND1 = [FILES[i] for i in (0, 1, 9, 12, 14, 16, 17)]

#: upstream's shared test helpers whose module-level imports are guarded too: ``fixtures`` imports
#: ``torch`` (for its elastic-launch helpers) besides ``TestWithTmpDir``, which the runner tests use
HELPERS = ["torchx/test/fixtures.py"]

CONFTEST = '''
import importlib, importlib.metadata, os, sys

sys.modules.setdefault("importlib_metadata", importlib.metadata)
HERE = os.path.dirname(os.path.abspath(__file__))
for root, dirs, files in os.walk(os.path.join(HERE, "torchx")):
    if os.path.basename(root) == "test" and "__init__.py" in files:
        pkg = os.path.relpath(os.path.dirname(root), HERE).replace(os.sep, ".")
        try:
            mod = importlib.import_module(pkg)
        except ImportError:
            continue
        if os.path.dirname(root) not in list(mod.__path__):
            mod.__path__.append(os.path.dirname(root))


class Missing:
    """A name torchx does not provide: any use fails the test that makes it."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        raise AssertionError(f"torchx does not provide {self._name}")

    def __call__(self, *args, **kwargs):
        raise AssertionError(f"torchx does not provide {self._name}")


import builtins
builtins.__torchx_missing__ = Missing
'''


def guard_imports(source: str, package: str) -> str:
    """``source`` (a module of ``package``) with each module-level import (also those inside a
    module-level ``if``, such as ``if has_ray():``) split into guarded single-name imports,
    relative ones made absolute."""
    tree = ast.parse(source)
    tree.body = _guard_body(tree.body, package)
    return ast.unparse(ast.fix_missing_locations(tree))


def _guard_body(stmts: list[ast.stmt], package: str) -> list[ast.stmt]:
    body: list[ast.stmt] = []
    for node in stmts:
        if isinstance(node, ast.ImportFrom) and node.level > 0:  # a sibling helper of the test
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            node = ast.ImportFrom(module=f"{base}.{node.module}" if node.module else base, names=node.names, level=0)
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module != "__future__":
            for alias in node.names:
                bound = alias.asname or alias.name
                single = ast.ImportFrom(module=node.module, names=[alias], level=0)
                body.append(_guarded(single, bound, f"{node.module}.{alias.name}"))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                body.append(_guarded(ast.Import(names=[alias]), bound, alias.name))
        elif isinstance(node, ast.If):
            node.body = _guard_body(node.body, package)
            node.orelse = _guard_body(node.orelse, package)
            body.append(node)
        else:
            body.append(node)
    return body


def _guarded(stmt: ast.stmt, bound: str, name: str) -> ast.stmt:
    fallback = ast.parse(f"{bound} = __torchx_missing__({name!r})").body
    handler = ast.ExceptHandler(type=ast.Name("ImportError", ast.Load()), name=None, body=fallback)
    return ast.Try(body=[stmt], handlers=[handler], orelse=[], finalbody=[])


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    round1 = "--round1" in argv
    argv = [a for a in argv if a != "--round1"]
    upstream = Path(argv[0])
    files = argv[1:] or (ROUND1 if round1 else FILES)
    if any("docker" in name for name in files):
        _ensure_busybox()
    with tempfile.TemporaryDirectory(prefix="torchx-upstream-tests-") as scratch:
        root = Path(scratch)
        for test_dir in (upstream / "torchx").rglob("test"):
            if (test_dir / "__init__.py").is_file():
                shutil.copytree(test_dir, root / test_dir.relative_to(upstream))
        for name in [*files, *HELPERS]:
            path = root / name
            package = str(Path(name).parent).replace(os.sep, ".")
            path.write_text(guard_imports(path.read_text(), package))
        (root / "conftest.py").write_text(CONFTEST)
        (root / "pytest.ini").write_text("[pytest]\npython_files = *_test.py\naddopts = -p no:cacheprovider\n")
        # as in an activated virtualenv: a replica's ``python`` is the one torchx is installed in
        path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PATH": path}
        outcomes: dict[str, int] = {"passed": 0, "failed (documented API)": 0, "failed (internals)": 0}
        for name in files:  # one process per file: two files named api_test.py would collide
            report = root / (name.replace("/", "_") + ".xml")
            cmd = [sys.executable, "-m", "pytest", "-q", "--import-mode=importlib", "--tb=line"]
            cmd += [f"--junitxml={report}", name, *extra]
            proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, check=False)
            counts = _outcomes(report) if report.is_file() else {}
            if not counts:
                print(proc.stdout + proc.stderr)
            print(f"== {name}: {counts}")
            for key, n in counts.items():
                outcomes[key] += n
        api = outcomes["passed"] + outcomes["failed (documented API)"]
        print(f"== all: {outcomes}")
        print(
            f"== upstream tests of the documented API passed: {outcomes['passed']} of {api}"
            f" ({100 * outcomes['passed'] / max(api, 1):.1f}%); of every test: {outcomes['passed']}"
            f" of {sum(outcomes.values())}"
        )
        return 0 if outcomes["passed"] == api else 1


def _ensure_busybox() -> None:
    """Runs ``busybox-image.sh`` (``busybox:latest`` on the engine) when the docker CLI is there."""
    if shutil.which("docker") is None:
        print("== no docker CLI: upstream's local_docker live tests run without busybox")
        return
    script = Path(__file__).with_name("busybox-image.sh")
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        print(f"== {script.name} failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")


#: a failure that comes from reaching into upstream's internals, not from its documented API:
#: a name torchx does not provide (a stand-in was used), a patched attribute that does not exist,
#: a private attribute, an attribute of a module's namespace (``entrypoints.metadata``), or a
#: mock of the library upstream calls underneath (``subprocess.run`` answering a MagicMock, the
#: ``kubernetes`` client patched while torchx talks to the API server itself, so it finds no
#: cluster)
INTERNALS = re.compile(
    r"torchx does not provide|does not have the attribute|has no attribute '_"
    r"|module '[\w.]+' has no attribute|'Missing' is not iterable|'Missing' object"
    r"|MagicMock|no usable Kubernetes configuration"
)


def _outcomes(report: Path) -> dict[str, int]:
    """Passed / failed-on-documented-API / failed-on-internals counts of a JUnit XML report."""
    import xml.etree.ElementTree as ET

    counts = {"passed": 0, "failed (documented API)": 0, "failed (internals)": 0}
    for case in ET.parse(report).getroot().iter("testcase"):
        bad = [c for c in case if c.tag in ("failure", "error")]
        if any(c.tag == "skipped" for c in case):
            continue
        if not bad:
            counts["passed"] += 1
            continue
        text = " ".join(f"{c.get('message', '')} {c.text or ''}" for c in bad)
        internal = bool(INTERNALS.search(text))
        counts["failed (internals)" if internal else "failed (documented API)"] += 1
        collection = any("collection failure" in (c.get("message") or "") for c in bad)
        if not internal or collection:  # a file that cannot be collected hides all its tests: always say so
            first = (bad[0].get("message") or "").strip().splitlines()[:1]
            if collection:  # the error that stopped it
                first = [line for line in (bad[0].text or "").splitlines() if line.startswith("E ")][-1:] or first
            kind = "INTERNALS, a whole file" if internal else "API"
            print(f"   {kind}  {case.get('classname', '')}::{case.get('name')}: {first[0][:200] if first else ''}")
    return counts


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
