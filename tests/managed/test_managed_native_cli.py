"""``controller=native`` refused from the CLI on a target that recovers by itself (local_cwd)
when the job asks for what only a controller gives: one line, nothing recorded or submitted.

Here, not in torchx-managed: it needs torchx-sched-local (a target that recovers jobs) and
torchx-components (``utils.echo``); torchx-managed's own test of this refusal runs on the
test scheduler ``procs``, which cannot recover jobs."""

from __future__ import annotations

from typing import Any

from torchx.testing import run_cli


def test_cli_controller_native_on_a_job_that_needs_a_controller_submits_nothing(tmp_path: Any) -> None:
    code, out, err = run_cli(
        "run", "-s", "managed", "-cfg", "targets=local_cwd,controller=native,notify=http://127.0.0.1:9/hook", "utils.echo",
        env={"TORCHX_MANAGED_STATE_DIR": str(tmp_path / "managed"), "XDG_STATE_HOME": str(tmp_path / "state")},
    )  # fmt: skip
    assert code != 0
    assert "controller=native: notify needs a controller" in err
    assert "Traceback" not in err and not out.strip()
    assert not (tmp_path / "managed").exists() or not any((tmp_path / "managed").iterdir())
