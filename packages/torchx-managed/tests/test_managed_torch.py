"""The README's PyTorch training loop, run for real through ``managed`` on local_cwd: each
attempt trains one epoch, checkpoints and asks to be requeued (exit 33), the next resumes."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from torchx.runner import get_runner
from torchx.specs import AppState
from torchx.testing.apps import command_app

pytestmark = pytest.mark.torch

README = Path(__file__).parents[1] / "README.md"


def training_loop() -> str:
    text = README.read_text()
    found = re.search(r'```python\n("""train\.py.*?)```', text, re.DOTALL)
    assert found is not None, "the README lost its training loop"
    return found.group(1)


def test_readme_training_loop_requeues_and_resumes(isolated: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("torchx_sched_local", reason="needs torchx-sched-local (the local_cwd scheduler)")
    (isolated / "train.py").write_text(training_loop())
    app = command_app(sys.executable, "train.py", name="train", env={"EPOCHS": "3", "MAX_SECONDS": "0"})
    with get_runner("torchtest") as runner:
        handle = runner.run(app, "managed", {"targets": ["local_cwd"], "recover_on_exit_codes": ["33"]})
        status = runner.wait(handle, wait_interval=0.2, timeout=300)
        assert status is not None and status.state == AppState.SUCCEEDED, status
        desc = runner.describe_app(handle)
        assert desc is not None
        assert [(a["state"], a["exit_code"]) for a in desc.metadata["attempts"]] == [
            ("FAILED", 33),
            ("FAILED", 33),
            ("SUCCEEDED", 0),
        ]
        lines = "".join(runner.log_lines(handle, "r", 0))
    starts = re.findall(r"attempt (\d): starting at epoch (\d)", lines)
    assert starts == [("0", "0"), ("1", "1"), ("2", "2")], lines
    assert lines.rstrip().endswith("done")
