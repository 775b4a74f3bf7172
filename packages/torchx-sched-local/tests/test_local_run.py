"""local_cwd: what a replica runs (command, arguments, environment, directory) and bad input."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
from torchx import specs
from torchx.runner import get_runner
from torchx.schedulers.streams import Stream
from torchx.specs import AppState
from torchx.testing import command_app
from torchx_sched_local.local_scheduler import LocalScheduler
from torchx_sched_local.store import InvalidAppIdError


def _output(sched: LocalScheduler, app_id: str, role: str = "r", k: int = 0, stream: str = "stdout") -> str:
    return "".join(sched.log_iter(app_id, role, k, streams=Stream(stream)))


def test_args_reach_the_process_byte_identical(sched: LocalScheduler) -> None:
    args = [
        "plain",
        "two words",
        "'single'",
        '"double"',
        "$HOME",
        "`id`",
        "a;b|c&d",
        "",
        "tab\there",
        "new\nline",
        "ünï€😀",
        "*",
    ]
    app_id = sched.submit(
        command_app(sys.executable, "-c", "import json, sys; print(json.dumps(sys.argv[1:]))", *args), {}
    )
    assert sched.wait(app_id).state == AppState.SUCCEEDED  # type: ignore[union-attr]
    assert json.loads(_output(sched, app_id)) == args


def test_env_and_macros(tmp_path: Path, isolated: Path) -> None:
    code = (
        "import json, os, sys; keys = ['TORCHX_RANK0_HOST', 'TORCHX_ROLE_NAME', 'TORCHX_REPLICA_IDX', 'TORCHX_JOB_ID',"
        " 'PET_LOG_DIR', 'TORCHELASTIC_ERROR_FILE', 'MINE', 'PYTHONUNBUFFERED'];"
        " print(json.dumps({'env': {k: os.environ.get(k) for k in keys}, 'argv': sys.argv[1:], 'cwd': os.getcwd()}))"
    )
    image = tmp_path / "img"
    image.mkdir()
    role = specs.Role(
        "trainer",
        image=str(image),
        entrypoint=sys.executable,
        args=["-c", code, specs.macros.app_id, specs.macros.replica_id, specs.macros.img_root, specs.macros.rank0_env],
        env={"MINE": "id=${app_id}/${replica_id}"},
        num_replicas=2,
    )
    with get_runner("sess") as runner:
        handle = runner.run(specs.AppDef("macro", [role]), "local_cwd")
        assert runner.wait(handle).state == AppState.SUCCEEDED  # type: ignore[union-attr]
        app_id = handle.rsplit("/", 1)[1]
        for k in (0, 1):
            out = json.loads("".join(runner.log_lines(handle, "trainer", k, streams=Stream.STDOUT)))
            # local_cwd: the image is the launcher's working directory, whatever role.image says
            assert out["argv"] == [app_id, str(k), str(isolated), "TORCHX_RANK0_HOST"]
            assert out["cwd"] == str(isolated)
            env = out["env"]
            assert env["TORCHX_RANK0_HOST"] == "localhost"
            assert env["TORCHX_ROLE_NAME"] == "trainer"
            assert env["TORCHX_REPLICA_IDX"] == str(k)
            assert env["TORCHX_JOB_ID"] == handle
            assert env["MINE"] == f"id={app_id}/{k}"
            assert env["PET_LOG_DIR"].endswith(f"/{app_id}/logs/torchelastic/trainer")  # per role, as TorchX
            assert env["TORCHELASTIC_ERROR_FILE"].endswith(f"/{app_id}/logs/trainer/{k}/error.json")
            assert env["PYTHONUNBUFFERED"] == "1"


@pytest.mark.parametrize(
    "make, expected",
    [
        (lambda: command_app("no-such-command-xyz"), "entrypoint 'no-such-command-xyz' not found on PATH"),
        (lambda: command_app("./missing.sh"), "not found"),
        (lambda: command_app("./plain.txt"), "is not executable"),
        (lambda: command_app("./noshebang"), "Exec format error"),
    ],
    ids=["not-on-path", "missing-path", "not-executable", "exec-format"],
)
def test_bad_input_fails_the_job_with_a_reason(sched: LocalScheduler, isolated: Path, make, expected: str) -> None:  # type: ignore[no-untyped-def]
    (isolated / "plain.txt").write_text("hello\n")
    (isolated / "noshebang").write_bytes(b"\x00\x01binary")
    (isolated / "noshebang").chmod(0o755)
    app_id = sched.submit(make(), {})
    desc = sched.wait(app_id, timeout=10)
    assert desc is not None
    assert desc.state == AppState.FAILED
    assert expected in desc.msg
    assert "Traceback" not in desc.msg
    replica = desc.roles_statuses[0].replicas[0]
    assert replica.state == AppState.FAILED
    assert expected in replica.structured_error_msg


def test_failure_reports_exit_code_and_error_file(sched: LocalScheduler) -> None:
    code = (
        "import os, sys; open(os.environ['TORCHELASTIC_ERROR_FILE'], 'w').write('{\"message\": \"boom\"}')"
        " if sys.argv[1] == '1' else None; sys.exit(3 if sys.argv[1] == '1' else 0)"
    )
    app_id = sched.submit(command_app(sys.executable, "-c", code, specs.macros.replica_id, replicas=2), {})
    desc = sched.wait(app_id)
    assert desc is not None
    assert desc.state == AppState.FAILED
    assert desc.msg == "r/1 exited with code 3"
    replicas = {r.id: r for r in desc.roles_statuses[0].replicas}
    assert replicas[1].state == AppState.FAILED
    assert replicas[1].structured_error_msg == '{"message": "boom"}'
    assert desc.structured_error_msg == '{"message": "boom"}'


def test_killed_by_signal_message(sched: LocalScheduler) -> None:
    app_id = sched.submit(command_app("sh", "-c", "kill -9 $$$$"), {})  # macros turn $$ into $
    desc = sched.wait(app_id)
    assert desc is not None
    assert desc.state == AppState.FAILED
    assert desc.msg == "r/0 killed by signal 9 (SIGKILL)"


def test_describe_returns_the_submitted_roles_from_another_process(sched: LocalScheduler) -> None:
    role = specs.Role(
        "trainer",
        image="/tmp",
        entrypoint="/bin/true",
        args=["--lr", "0.1"],
        env={"A": "1"},
        num_replicas=3,
        max_retries=2,
        retry_policy=specs.RetryPolicy.REPLICA,
        resource=specs.Resource(cpu=2, gpu=0, memMB=1024, capabilities={"x": "y"}),
        port_map={"tb": 6006},
        metadata={"local_cwd.k": "v"},
    )  # no mounts: local_cwd declares none, and Scheduler.submit refuses them as Runner.run does
    app_id = sched.submit(specs.AppDef("described", [role], metadata={"team": "ml"}), {})
    sched.wait(app_id)
    other = LocalScheduler("other", state_dir=sched.store.root)
    desc = other.describe(app_id)
    assert desc is not None
    assert desc.roles == [role]
    assert desc.metadata == {"team": "ml"}
    assert [r.state for r in desc.roles_statuses[0].replicas] == [AppState.SUCCEEDED] * 3
    assert desc.ui_url is not None
    assert desc.ui_url.startswith("file://")


def test_app_ids_cannot_escape_the_state_dir(sched: LocalScheduler, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    for bad in ("..", "../outside", "a/b", "/etc", ".hidden", "-x", "a\0b", ""):
        assert sched.describe(bad) is None
        assert not sched.exists(bad)
        sched.cancel(bad)
        sched.delete(bad)
        with pytest.raises(ValueError):
            list(sched.log_iter(bad, "r"))
        with pytest.raises(InvalidAppIdError):
            sched.store.job_dir(bad)
    assert outside.exists()
    assert list(outside.iterdir()) == []
    with get_runner() as runner:
        assert runner.status("local_cwd://torchx/../outside") is None


def test_schedule_twice_is_refused(sched: LocalScheduler) -> None:
    info = sched.submit_dryrun(command_app("/bin/true"), {})
    app_id = sched.schedule(info)
    with pytest.raises(ValueError, match="already exists"):
        sched.schedule(info)
    assert sched.wait(app_id).state == AppState.SUCCEEDED  # type: ignore[union-attr]


def test_dryrun_shows_the_commands() -> None:
    with get_runner() as runner:
        info = runner.dryrun(command_app("echo", "hello world", replicas=2), "local_cwd")
    text = str(info)
    assert "echo 'hello world'" in text
    assert "# r/1" in text


def test_log_dir_option(sched: LocalScheduler, tmp_path: Path) -> None:
    logs = tmp_path / "mylogs"
    app_id = sched.submit(command_app("echo", "to the log dir"), {"log_dir": str(logs)})
    assert sched.wait(app_id).state == AppState.SUCCEEDED  # type: ignore[union-attr]
    app_logs = logs / "test" / app_id  # <log_dir>/<session>/<app_id>, as TorchX
    assert (app_logs / "r" / "0" / "stdout.log").read_text() == "to the log dir\n"
    assert stat.S_IMODE(os.stat(app_logs / "r" / "0" / "stdout.log").st_mode) == 0o600
    sched.delete(app_id)
    assert not app_logs.exists()


@pytest.mark.parametrize("fail", [False, True])
def test_a_log_dir_gets_torchx_s_success_summary_once_the_app_ends(
    sched: LocalScheduler, tmp_path: Path, fail: bool
) -> None:
    logs = tmp_path / "logs"
    script = "echo hello_world; echo oops >&2" + ("; exit 3" if fail else "")
    n = 1 if fail else 2  # (a failure would stop the other replica, maybe before it printed)
    app_id = sched.submit(command_app("sh", "-c", script, replicas=n), {"log_dir": str(logs)})
    desc = sched.wait(app_id, timeout=30)
    assert desc is not None
    assert desc.state == (AppState.FAILED if fail else AppState.SUCCEEDED)
    app_logs = logs / "test" / app_id
    summary_file = app_logs / "SUCCESS"  # TorchX's name, whatever the final state
    assert stat.S_IMODE(os.stat(summary_file).st_mode) == 0o600
    info = json.loads(summary_file.read_text())
    assert (info["app_id"], info["log_dir"], info["final_state"]) == (app_id, str(app_logs), desc.state.name)
    replicas = info["roles"]["r"]
    assert [r["replica_id"] for r in replicas] == list(range(n))
    for r in replicas:
        assert Path(r["stdout"]).read_text() == "hello_world\n"
        assert Path(r["stderr"]).read_text() == "oops\n"
        assert r["error_file"] == os.path.join(app_logs, "r", str(r["replica_id"]), "error.json")
        assert isinstance(r["pid"], int)
    assert [r["exitcode"] for r in replicas] == ([3] if fail else [0, 0])
    # without log_dir, the logs stay in the job's state dir with no summary
    other = sched.submit(command_app("true"), {})
    assert sched.wait(other, timeout=30).state == AppState.SUCCEEDED  # type: ignore[union-attr]
    assert not os.path.exists(os.path.join(sched.store.job_dir(other), "logs", "SUCCESS"))


def test_the_summary_is_never_written_through_a_symlink(sched: LocalScheduler, tmp_path: Path) -> None:
    target = tmp_path / "victim"
    target.write_text("precious\n")
    code = (
        "import os; root = os.path.dirname(os.path.dirname(os.path.dirname(os.environ['TORCHELASTIC_ERROR_FILE'])));"
        f" os.symlink({str(target)!r}, os.path.join(root, 'SUCCESS'))"
    )
    app_id = sched.submit(command_app(sys.executable, "-c", code), {"log_dir": str(tmp_path / "logs")})
    assert sched.wait(app_id, timeout=30).state == AppState.SUCCEEDED  # type: ignore[union-attr]
    assert target.read_text() == "precious\n"


def test_unsafe_role_names_get_safe_log_paths(sched: LocalScheduler) -> None:
    role = specs.Role("../../evil role", image="/tmp", entrypoint="echo", args=["x"])
    app_id = sched.submit(specs.AppDef("t", [role]), {})
    assert sched.wait(app_id).state == AppState.SUCCEEDED  # type: ignore[union-attr]
    assert list(sched.log_iter(app_id, "../../evil role", 0)) == ["x\n"]
    assert os.path.isdir(os.path.join(sched.store.job_dir(app_id), "logs", "_role0", "0"))


def test_unwritable_log_dir_is_a_clear_error_and_leaves_nothing(sched: LocalScheduler, tmp_path: Path) -> None:
    blocked = tmp_path / "blocked"
    blocked.write_text("a file, not a directory")
    with pytest.raises(OSError, match=r"^cannot record local_cwd app t-\S+: Not a directory: .*blocked$"):
        sched.submit(command_app("/bin/true"), {"log_dir": str(blocked)})
    assert sched.list() == []
    assert os.listdir(sched.store.root) == []
