"""Upstream module paths this package provides, and the result tracker behind one of them."""

from __future__ import annotations

from pathlib import Path


def test_upstream_paths_are_this_packages_modules() -> None:
    import torchx.cli.cmd_tracker
    import torchx.runtime.tracking
    import torchx.tracker.backend.fsspec
    import torchx_tracker.cli
    import torchx_tracker.fsspec_backend
    import torchx_tracker.result_tracker

    assert torchx.tracker.backend.fsspec is torchx_tracker.fsspec_backend
    assert torchx.cli.cmd_tracker.CmdTracker is torchx_tracker.cli.CmdTracker
    assert torchx.runtime.tracking.FsspecResultTracker is torchx_tracker.result_tracker.FsspecResultTracker


def test_fsspec_result_tracker_round_trip(tmp_path: Path, memory_root: str) -> None:
    from torchx.runtime.tracking import FsspecResultTracker

    for base in (str(tmp_path / "results"), memory_root):
        tracker = FsspecResultTracker(base)
        assert tracker.get(0) == {}
        tracker[0] = {"loss": 0.25, "name": "trial"}
        tracker.put(1, acc=0.9)
        assert FsspecResultTracker(base)[0] == {"loss": 0.25, "name": "trial"}
        assert FsspecResultTracker(base).get(1) == {"acc": 0.9}
    assert (tmp_path / "results" / "0.json").is_file()
