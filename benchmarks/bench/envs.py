"""Creates and reuses the benchmark virtualenvs under ``.bench/`` (git-ignored).

========================  ============================================================
venv                      contents
========================  ============================================================
``ours``                  our core, local scheduler and components (those present)
``ours-full``             every distribution under ``packages/`` that installs
``ours-50plugins``        ``ours`` + 50 dummy ``torchx``-group plugin distributions
``ours-20namespace``      ``ours`` + 20 dummy distributions of one ``torchx_plugins.*`` module each
``upstream``              ``torchx==0.7.0`` from PyPI
``upstream-full``         ``upstream`` + ``kubernetes`` + ``boto3`` (its k8s/Batch extras)
``upstream-50plugins``    ``upstream`` + 50 dummy legacy entry-point distributions
========================  ============================================================

Our distributions are built once per source hash into wheels (non-editable installs) by a
``builder`` venv that has hatchling. A venv is rebuilt from scratch when what it should
contain changed (a package's source hash, the set of packages, the interpreter); its
``bench-stamp.json`` records what it was built from.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import tomllib

from bench import dummies

UPSTREAM_REQUIREMENT = "torchx==0.7.0"
UPSTREAM_EXTRAS = ("kubernetes", "boto3")
#: our distributions every ``ours*`` venv gets (when present under packages/)
BASE_PACKAGES = ("torchx-core", "torchx-sched-local", "torchx-components")
#: extras ``ours-full`` installs where a distribution declares them (they bring docker and fsspec)
FULL_EXTRAS = ("docker", "copy")
DUMMY_COUNT = 50
#: dummy distributions of the ``namespace`` flavour (one ``torchx_plugins.*`` module each)
NAMESPACE_DUMMY_COUNT = 20
#: bump when the way venvs are built changes
_FORMAT = 3
_HASH_SKIP_DIRS = {
    "__pycache__",
    "tests",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    "build",
    "dist",
    ".hypothesis",
}


class EnvError(Exception):
    """A benchmark venv could not be built."""


@dataclass
class Venv:
    """A ready benchmark venv.

    Attributes:
        name: ``ours``, ``upstream-full`` ...
        path: its directory
        packages: our distributions installed in it (empty for upstream venvs)
        failed: our distributions that are present but did not build or install -> why
    """

    name: str
    path: Path
    packages: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)

    @property
    def python(self) -> str:
        """The venv's interpreter (never a pyenv shim)."""
        return str(self.path / "bin" / "python")

    def exe(self, name: str) -> str:
        """A console script installed in the venv."""
        return str(self.path / "bin" / name)


def _reason(text: str) -> str:
    """The line of pip's output that says what went wrong (not pip's generic epilogue)."""
    rows = [r.strip() for r in text.strip().splitlines() if r.strip() and not r.startswith("WARNING: Location")]
    errors = [r for r in rows if r.startswith("ERROR:") or re.match(r"^[\w.]*(Error|Exception)\b", r)]
    return errors[-1] if errors else " | ".join(rows[-3:]) or "(no output)"


def _run(argv: list[str], what: str) -> None:
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    if proc.returncode != 0:
        raise EnvError(f"{what} failed (exit {proc.returncode}): {_reason(proc.stdout)}")


def source_hash(project: Path) -> str:
    """Hash of a distribution's sources (tests and caches excluded)."""
    digest = hashlib.sha256()
    for root, dirs, files in os.walk(project):
        dirs[:] = sorted(d for d in dirs if d not in _HASH_SKIP_DIRS and not d.endswith(".egg-info"))
        for name in sorted(files):
            if name.endswith((".pyc", ".pyo")):
                continue
            path = Path(root) / name
            digest.update(str(path.relative_to(project)).encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


class Envs:
    """Builds the benchmark venvs on demand and remembers them for the run."""

    def __init__(self, repo: Path, base_python: str, log: Callable[[str], None]) -> None:
        self.repo = repo
        self.root = repo / ".bench"
        self.base_python = base_python
        self.log = log
        self._venvs: dict[str, Venv] = {}
        self._errors: dict[str, str] = {}
        self._wheels: dict[str, Path] = {}
        self._wheel_errors: dict[str, str] = {}

    # ---------------------------------------------------------------- our sources
    def present_packages(self) -> dict[str, Path]:
        """Distribution name -> project dir of every ``packages/*`` with a pyproject.toml."""
        return {name: path for name, (path, _) in self._projects().items()}

    def _projects(self) -> dict[str, tuple[Path, list[str]]]:
        """Distribution name -> (project dir, declared extras) of every ``packages/*``."""
        found = {}
        for pyproject in sorted((self.repo / "packages").glob("*/pyproject.toml")):
            try:
                project = tomllib.loads(pyproject.read_text())["project"]
                name, extras = str(project["name"]), list(project.get("optional-dependencies", {}))
            except (OSError, KeyError, tomllib.TOMLDecodeError):
                name, extras = pyproject.parent.name, []
            found[name] = (pyproject.parent, extras)
        return found

    def _builder(self) -> Venv:
        return self._ensure("builder", ["hatchling>=1.18", "wheel"], [])

    def _wheel(self, dist: str, project: Path) -> Path:
        """The wheel of one of our distributions, built once per source hash."""
        if dist in self._wheels:
            return self._wheels[dist]
        if dist in self._wheel_errors:
            raise EnvError(self._wheel_errors[dist])
        out = self.root / "wheels" / f"{dist}-{source_hash(project)}"
        wheels = list(out.glob("*.whl")) if out.is_dir() else []
        if not wheels:
            for old in (self.root / "wheels").glob(f"{dist}-*"):
                if old.name[len(dist) + 1 :].isalnum() and len(old.name) == len(dist) + 17:
                    shutil.rmtree(old, ignore_errors=True)
            self.log(f"building wheel of {dist}")
            try:
                self._build_wheels(out, [project], f"building {dist}")
            except EnvError as e:
                shutil.rmtree(out, ignore_errors=True)
                self._wheel_errors[dist] = str(e)
                raise
            wheels = list(out.glob("*.whl"))
        self._wheels[dist] = wheels[0]
        return wheels[0]

    def _dummy_wheels(self, flavour: str, count: int = DUMMY_COUNT) -> list[Path]:
        """The wheels of the ``count`` dummy plugin distributions (generated and built once)."""
        out = self.root / "wheels" / f"dummy-{flavour}-v{dummies.FORMAT}-{count}"
        wheels = sorted(out.glob("*.whl")) if out.is_dir() else []
        if len(wheels) == count:
            return wheels
        shutil.rmtree(out, ignore_errors=True)
        projects = dummies.generate(self.root / "dummy-plugins" / flavour, flavour, count)
        self.log(f"building {count} dummy {flavour} plugin wheels")
        self._build_wheels(out, projects, f"building the dummy {flavour} plugins")
        return sorted(out.glob("*.whl"))

    def _build_wheels(self, out: Path, projects: list[Path], what: str) -> None:
        """``pip wheel`` of ``projects`` into ``out`` with the builder venv (no deps, no isolation)."""
        pip_wheel = [self._builder().python, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
        _run([*pip_wheel, "--wheel-dir", str(out), *map(str, projects)], what)

    # ---------------------------------------------------------------- venvs
    def get(self, name: str) -> Venv:
        """The venv ``name``, built or rebuilt if needed.

        Raises:
            EnvError: it cannot be built (the message says why)
        """
        if name in self._venvs:
            return self._venvs[name]
        if name in self._errors:
            raise EnvError(self._errors[name])
        try:
            venv = self._make(name)
        except EnvError as e:
            self._errors[name] = str(e)
            raise
        self._venvs[name] = venv
        return venv

    def _make(self, name: str) -> Venv:
        if name == "upstream":
            return self._ensure(name, [UPSTREAM_REQUIREMENT], [])
        if name == "upstream-full":
            return self._ensure(name, [UPSTREAM_REQUIREMENT, *UPSTREAM_EXTRAS], [])
        if name == "upstream-50plugins":
            return self._ensure(name, [UPSTREAM_REQUIREMENT], self._dummy_wheels("legacy"))
        present = self.present_packages()
        if name in ("ours", "ours-50plugins", "ours-20namespace"):
            wanted = [d for d in BASE_PACKAGES if d in present]
        elif name == "ours-full":
            wanted = list(present)
        else:
            raise EnvError(f"unknown benchmark venv {name!r}")
        if "torchx-core" not in present:
            raise EnvError("packages/torchx-core is missing")
        failed: dict[str, str] = {}
        wheels: dict[str, Path] = {}
        for dist in wanted:
            try:
                wheels[dist] = self._wheel(dist, present[dist])
            except EnvError as e:
                failed[dist] = str(e)
        if "torchx-core" in failed:
            raise EnvError(failed["torchx-core"])
        extra = self._dummy_wheels("ours") if name == "ours-50plugins" else []
        if name == "ours-20namespace":
            extra = self._dummy_wheels("namespace", NAMESPACE_DUMMY_COUNT)
        extras = {}
        if name == "ours-full":
            extras = {d: [e for e in declared if e in FULL_EXTRAS] for d, (_, declared) in self._projects().items()}
        return self._ensure(name, [], extra, wheels, failed, extras)

    def _ensure(
        self,
        name: str,
        requirements: list[str],
        extra_wheels: list[Path],
        our_wheels: dict[str, Path] | None = None,
        failed: dict[str, str] | None = None,
        extras: dict[str, list[str]] | None = None,
    ) -> Venv:
        failed = dict(failed or {})
        # the pip requirement of each of our wheels, with the extras to install
        ours = {
            d: str(w) + (f"[{','.join(extras[d])}]" if extras and extras.get(d) else "")
            for d, w in (our_wheels or {}).items()
        }
        path = self.root / name
        stamp = {
            "format": _FORMAT,
            "python": os.path.realpath(self.base_python),
            "requirements": requirements,
            "wheels": sorted(
                [*(Path(r).name + "@" + Path(r).parent.name for r in ours.values()), *(w.name for w in extra_wheels)]
            ),
            "failed_builds": sorted(failed),
        }
        stamp_file = path / "bench-stamp.json"
        try:
            old = json.loads(stamp_file.read_text())
        except (OSError, ValueError):
            old = None
        if old is not None and old.get("stamp") == stamp:
            return Venv(name, path, old.get("packages", []), {**failed, **old.get("failed", {})})
        self.log(f"creating venv .bench/{name}")
        shutil.rmtree(path, ignore_errors=True)
        _run([self.base_python, "-m", "venv", str(path)], f"creating venv {name}")
        pip = [str(path / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        if requirements:
            _run([*pip, *requirements], f"pip install {' '.join(requirements)} into {name}")
        installed: list[str] = []
        if ours:
            try:
                _run([*pip, *ours.values()], f"installing our packages into {name}")
                installed = list(ours)
            except EnvError:
                # one broken package must not hide the others: core first, then one by one,
                # each able to find the others' wheels
                links = [arg for w in (our_wheels or {}).values() for arg in ("--find-links", str(w.parent))]
                for dist, req in sorted(ours.items(), key=lambda kv: kv[0] != "torchx-core"):
                    try:
                        _run([*pip, *links, req], f"installing {dist}")
                        installed.append(dist)
                    except EnvError as e:
                        if dist == "torchx-core":
                            raise
                        failed[dist] = str(e)
        if extra_wheels:
            _run(
                [*pip, "--no-deps", *map(str, extra_wheels)],
                f"installing {len(extra_wheels)} dummy plugins into {name}",
            )
        stamp_file.write_text(json.dumps({"stamp": stamp, "packages": installed, "failed": failed}, indent=1))
        return Venv(name, path, installed, failed)
