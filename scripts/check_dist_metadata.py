"""check_dist_metadata.py DIST_DIR NAME... - the metadata every torchx distribution publishes.

For each NAME (a directory under packages/), DIST_DIR must hold exactly one wheel and one sdist
of it, and both must declare: a summary, a Markdown long description (the README), Requires-Python,
an SPDX license expression with its license file inside the archive, an author, at least one
classifier, and Source, Documentation and Issues URLs. `twine check --strict` (run before this
by build-dists.sh) checks only that the description renders. Prints one line per problem and
exits 1 if there is any.
"""

from __future__ import annotations

import sys
import tarfile
import zipfile
from email.message import Message
from email.parser import Parser
from pathlib import Path

REQUIRED_URLS = ("Source", "Documentation", "Issues")


def read_wheel(path: Path) -> tuple[Message, set[str]]:
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
        meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
        return Parser().parsestr(z.read(meta).decode()), names


def read_sdist(path: Path) -> tuple[Message, set[str]]:
    with tarfile.open(path) as t:
        names = set(t.getnames())
        top = min(names, key=len).split("/")[0]
        member = t.extractfile(f"{top}/PKG-INFO")
        assert member is not None
        # names relative to the sdist's top directory, like a wheel's
        return Parser().parsestr(member.read().decode()), {n.split("/", 1)[-1] for n in names}


def problems(name: str, kind: str, meta: Message, names: set[str]) -> list[str]:
    out = []

    def need(ok: bool, what: str) -> None:
        if not ok:
            out.append(f"{name} ({kind}): {what}")

    need(meta.get("Name") == name, f"Name is {meta.get('Name')!r}")
    need(bool(meta.get("Summary")), "no summary (project.description)")
    need(meta.get("Description-Content-Type") == "text/markdown", "no Markdown README (project.readme)")
    need(len(meta.get_payload() or "") > 200, "README too short to describe the package")
    need(bool(meta.get("Requires-Python")), "no requires-python")
    need(bool(meta.get("License-Expression")), 'no SPDX license expression (license = "BSD-3-Clause")')
    files = meta.get_all("License-File") or []
    need(bool(files), 'no license file (license-files = ["LICENSE"])')
    for f in files:
        need(any(n == f or n.endswith(f"/licenses/{f}") for n in names), f"license file {f} not in the archive")
    need(bool(meta.get("Author") or meta.get("Author-email")), "no author (project.authors)")
    need(bool(meta.get_all("Classifier")), "no classifiers (project.classifiers)")
    labels = {u.split(",", 1)[0].strip() for u in meta.get_all("Project-URL") or []}
    for label in REQUIRED_URLS:
        need(label in labels, f"no {label} URL (project.urls)")
    return out


def main(argv: list[str]) -> int:
    dist, names = Path(argv[0]), argv[1:]
    found: list[str] = []
    for name in names:
        stem = name.replace("-", "_")
        wheels = sorted(dist.glob(f"{stem}-*.whl"))
        sdists = sorted(dist.glob(f"{stem}-*.tar.gz"))
        if len(wheels) != 1 or len(sdists) != 1:
            found.append(f"{name}: expected one wheel and one sdist in {dist}, found {len(wheels)} and {len(sdists)}")
            continue
        found += problems(name, "wheel", *read_wheel(wheels[0]))
        found += problems(name, "sdist", *read_sdist(sdists[0]))
    for line in found:
        print(line, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
