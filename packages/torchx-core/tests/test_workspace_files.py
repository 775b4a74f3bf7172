"""Which files a workspace ships: .torchxignore by Docker's .dockerignore rules, and the projects walk."""

from __future__ import annotations

from pathlib import Path

import pytest
from torchx.specs.workspace import Workspace
from torchx.workspace.files import IgnoreRules, project_files, walk_workspace

TREE = [
    "a.pyc",
    "main.py",
    "pkg/b.pyc",
    "pkg/mod.py",
    "pkg/deep/c.pyc",
    "pkg/deep/keep.txt",
    "data/big.bin",
    "data/small.txt",
    "logs/x.log",
    ".git/config",
    "notes.md",
    "README.md",
]


def make_tree(root: Path, ignore: str) -> Path:
    for rel in TREE:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    (root / ".torchxignore").write_text(ignore)
    return root


@pytest.mark.parametrize(
    ("ignore", "left_out"),
    [
        # '*' does not cross '/': *.pyc is the top level only, **/*.pyc every depth
        ("*.pyc\n", {"a.pyc"}),
        ("**/*.pyc\n", {"a.pyc", "pkg/b.pyc", "pkg/deep/c.pyc"}),
        # a directory pattern leaves out everything below it; slashes around it do not matter
        ("/data/\n", {"data/big.bin", "data/small.txt"}),
        # an exception re-includes a file inside an excluded directory
        ("data\n!data/small.txt\n", {"data/big.bin"}),
        # the last matching line wins
        ("*.md\n!README.md\n", {"notes.md"}),
        ("!README.md\n*.md\n", {"notes.md", "README.md"}),
        # comments, blank lines, surrounding spaces, ?, classes, ** in the middle, escapes
        ("# comment\n\n  logs  \n.git\n", {"logs/x.log", ".git/config"}),
        ("pkg/?od.py\n", {"pkg/mod.py"}),
        ("[a-b].pyc\n", {"a.pyc"}),
        ("pkg/**/*.txt\n", {"pkg/deep/keep.txt"}),
        ("pkg/**\n!pkg/deep\n", {"pkg/b.pyc", "pkg/mod.py"}),
        ("main\\.py\n", {"main.py"}),
        ("./pkg/../main.py\n", {"main.py"}),
    ],
)
def test_dockerignore_rules(tmp_path: Path, ignore: str, left_out: set[str]) -> None:
    root = make_tree(tmp_path, ignore)
    kept = set(walk_workspace(str(root)))
    assert kept == (set(TREE) | {".torchxignore"}) - left_out


def test_excluded_directories_are_not_walked_without_exceptions(tmp_path: Path) -> None:
    rules = IgnoreRules(["data"])
    assert rules.prunable("data")
    assert not rules.prunable("pkg")
    assert not IgnoreRules(["data", "!data/small.txt"]).prunable("data")


def test_project_files_maps_projects_and_refuses_missing_ones(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "proj", "**/*.pyc\ndata\n.git\nlogs\n")
    single = tmp_path / "conf.yaml"
    single.write_text("x")
    files = dict((arc, path) for path, arc in project_files(Workspace({str(root): "code", str(single): ""})))
    assert sorted(files) == [
        "code/.torchxignore",
        "code/README.md",
        "code/main.py",
        "code/notes.md",
        "code/pkg/deep/keep.txt",
        "code/pkg/mod.py",
        "conf.yaml",
    ]
    assert files["code/main.py"] == str(root / "main.py")
    with pytest.raises(FileNotFoundError, match="workspace project '.*nope' does not exist"):
        list(project_files(Workspace({str(tmp_path / "nope"): ""})))


def test_a_named_pipe_in_the_workspace_is_refused_with_the_way_out(tmp_path: Path) -> None:
    """A FIFO (fish's notifier in /tmp, say) would block a copy forever: it is named, with the
    ignore file that leaves it out; once ignored, the rest ships."""
    import os

    (tmp_path / "main.py").write_text("print('hi')\n")
    os.mkfifo(tmp_path / "notifier")
    with pytest.raises(ValueError, match=r"notifier', which is not a regular file.*add 'notifier' to"):
        list(project_files(Workspace({str(tmp_path): ""})))
    (tmp_path / ".torchxignore").write_text("notifier\n")
    shipped = sorted(rel for _, rel in project_files(Workspace({str(tmp_path): ""})))
    assert shipped == [".torchxignore", "main.py"]


def test_a_large_workspace_is_shipped_with_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from torchx.workspace import files

    for k in range(5):
        (tmp_path / f"f{k}").write_bytes(b"x" * 100)
    monkeypatch.setattr(files, "LARGE_FILES", 3)
    with caplog.at_level("WARNING"):
        shipped = list(project_files(Workspace({str(tmp_path): ""})))
    assert len(shipped) == 5  # all of it, still
    (warning,) = [r.getMessage() for r in caplog.records]
    assert "is large (3 files" in warning and ".torchxignore" in warning and "--workspace" in warning
    monkeypatch.setattr(files, "LARGE_FILES", 100)
    monkeypatch.setattr(files, "LARGE_BYTES", 250)
    caplog.clear()
    with caplog.at_level("WARNING"):
        list(project_files(Workspace({str(tmp_path): ""})))
    (warning,) = [r.getMessage() for r in caplog.records]
    assert "(3 files, 0.0 GB so far)" in warning  # the third file passed 250 bytes
    (tmp_path / ".torchxignore").write_text("f*\n")
    caplog.clear()
    with caplog.at_level("WARNING"):
        list(project_files(Workspace({str(tmp_path): ""})))
    assert caplog.records == []  # what it leaves out does not count


def test_an_fsspec_url_project_is_copied_then_shipped_with_its_torchxignore() -> None:
    fsspec = pytest.importorskip("fsspec")
    import uuid

    root = f"memory://torchx-ws-{uuid.uuid4().hex}"
    fs = fsspec.filesystem("memory")
    try:
        for rel, text in {
            "main.py": "print(1)\n",
            "pkg/mod.py": "x = 1\n",
            "logs/x.log": "noise",
            ".torchxignore": "logs\n",
        }.items():
            with fsspec.open(f"{root}/{rel}", "w") as f:
                f.write(text)
        with fsspec.open(f"{root}-file/run.sh", "w") as f:
            f.write("exit 0\n")
        ws = Workspace.from_str(f"{root}/;{root}-file/run.sh:bin/run.sh")
        assert ws is not None
        shipped: dict[str, str] = {}
        copies = []
        for path, rel in project_files(ws):
            shipped[rel] = Path(path).read_text()
            copies.append(Path(path))
        assert shipped == {
            ".torchxignore": "logs\n",
            "main.py": "print(1)\n",
            "pkg/mod.py": "x = 1\n",
            "bin/run.sh": "exit 0\n",
        }
        assert all("torchx-workspace-" in str(p) for p in copies)
        assert not any(p.exists() for p in copies)  # the local copies are gone once shipped
    finally:
        for path in (root, f"{root}-file"):
            fs.rm(path.removeprefix("memory://"), recursive=True)


def test_a_missing_fsspec_url_project_is_refused() -> None:
    pytest.importorskip("fsspec")
    ws = Workspace({"memory://torchx-ws-does-not-exist": ""})
    with pytest.raises(FileNotFoundError, match="workspace project 'memory://torchx-ws-does-not-exist' does not exist"):
        list(project_files(ws))


def test_an_fsspec_url_project_without_fsspec_is_one_line_saying_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "fsspec", None)  # as if not installed: its import fails
    with pytest.raises(ModuleNotFoundError) as e:
        list(project_files(Workspace({"s3://bucket/proj": ""})))
    assert str(e.value) == (
        "workspace 's3://bucket/proj' is an fsspec URL and fsspec is not installed: pip install fsspec"
        " (and the package of its scheme), or pass a local directory"
    )


def test_also_ignore_files_leave_files_out_too(tmp_path: Path) -> None:
    root = make_tree(tmp_path, "*.pyc\n")
    (root / ".dockerignore").write_text("data\nlogs/*.log\n")
    kept = {rel for _, rel in project_files(Workspace({str(root): ""}), also_ignore=(".dockerignore",))}
    assert not any(rel.startswith(("data/", "logs/")) or rel == "a.pyc" for rel in kept)
    assert {"main.py", "pkg/mod.py", ".dockerignore", ".torchxignore"} <= kept
    assert "data/small.txt" in {rel for _, rel in project_files(Workspace({str(root): ""}))}
