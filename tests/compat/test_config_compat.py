"""``.torchxconfig`` files and ``torchx.runner.config`` as a TorchX 0.7 user has them."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from torchx.testing import run_torchx

pytest.importorskip("torchx_sched_local")
pytest.importorskip("torchx_components")


def test_project_config_drives_the_cli(isolated: Path, write: Callable[[Path, str], Path]) -> None:
    logs = isolated / "logs"
    write(
        isolated / ".torchxconfig",
        f"""\
        [local_cwd]
        log_dir = {logs}
        prepend_cwd = True
        auto_set_cuda_visible_devices: false
        not_an_option = 1

        [component:utils.echo]
        msg = hello from config

        [cli:run]
        component = utils.echo
        scheduler = local_cwd
        """,
    )
    proc = run_torchx("run")
    assert proc.returncode == 0, proc.stderr
    handle = proc.stdout.splitlines()[0]
    assert handle.startswith("local_cwd://torchx/echo-")
    assert "hello from config" in proc.stdout
    assert "not_an_option" in proc.stderr
    assert "Traceback" not in proc.stderr  # warned, not fatal
    app_id = handle.rsplit("/", 1)[1]
    assert "hello from config" in (logs / "torchx" / app_id / "echo" / "0" / "stdout.log").read_text()  # <session>/


def test_wrongly_typed_value_is_one_clear_error(isolated: Path, write: Callable[[Path, str], Path]) -> None:
    write(isolated / ".torchxconfig", "[local_cwd]\nstop_grace_period = soon\n")
    proc = run_torchx("run", "--dryrun", "-s", "local_cwd", "utils.echo")
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1
    assert "stop_grace_period = soon" in proc.stderr
    assert "float" in proc.stderr


def test_programmatic_apply_as_in_the_torchx_docs(
    isolated: Path, script: Callable[..., subprocess.CompletedProcess[str]], write: Callable[[Path, str], Path]
) -> None:
    bob = isolated / "bob"
    bob.mkdir()
    write(bob / ".torchxconfig", "[local_cwd]\nlog_dir = /from/bob\nprepend_cwd = true\nstop_grace_period = 2\n")
    proc = script(
        isolated / "launch.py",
        f"""\
        from torchx.runner import get_runner
        from torchx.runner.config import apply
        import torchx.specs as specs

        def my_component(a: int) -> specs.AppDef:
            return specs.AppDef(
                name="my_component",
                roles=[specs.Role(name="echo", image="/tmp", entrypoint="echo", args=[str(a)],
                                  resource=specs.Resource(cpu=1, gpu=0, memMB=128))],
            )

        scheduler = "local_cwd"
        cfg = {{"log_dir": "{isolated}/logs"}}
        apply(scheduler, cfg, dirs=["{bob}"])  # looks for {bob}/.torchxconfig
        assert cfg == {{"log_dir": "{isolated}/logs", "prepend_cwd": True, "stop_grace_period": 2.0}}, cfg
        with get_runner() as runner:
            handle = runner.run(my_component(1), scheduler, cfg)
            print(runner.wait(handle, wait_interval=0.1).state)
        """,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "SUCCEEDED"


def test_configure_then_load_round_trip(
    isolated: Path, script: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    proc = run_torchx("configure", "-s", "local_cwd", "--print", "-a")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (
        "[local_cwd]\nlog_dir = None\nprepend_cwd = False\nauto_set_cuda_visible_devices = False\n"
        "stop_grace_period = 5.0\n\n"
    )
    assert run_torchx("configure", "-s", "local_cwd", "--print").stdout == "[local_cwd]\n\n"  # nothing required
    assert run_torchx("configure").returncode == 0
    assert (isolated / ".torchxconfig").read_text().startswith("[")
    proc = script(
        isolated / "roundtrip.py",
        """\
        import io
        from torchx.runner.config import dump, load, load_sections, get_configs, get_config, find_configs

        out = io.StringIO()
        dump(out, schedulers=["local_cwd"], required_only=False)
        cfg = {"prepend_cwd": True}
        load("local_cwd", io.StringIO(out.getvalue()), cfg)
        assert cfg == {"prepend_cwd": True, "log_dir": None, "auto_set_cuda_visible_devices": False,
                       "stop_grace_period": 5.0}, cfg
        everything = io.StringIO()
        dump(everything)  # every installed scheduler
        assert "[local_cwd]" in everything.getvalue()
        assert find_configs() == [find_configs()[0]] and find_configs()[0].endswith(".torchxconfig")
        assert load_sections("component") == {} and get_configs("component", "x") == {}
        assert get_config("cli", "run", "scheduler") is None
        print("ok")
        """,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok", proc.stderr


def test_one_cfg_for_several_schedulers(
    isolated: Path, script: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    proc = script(
        isolated / "multi.py",
        """\
        from torchx.runner import get_runner
        from torchx.specs import runopts, InvalidRunConfigException

        cfg = {"log_dir": "logs", "partition": "debug", "queue": "default"}  # slurm and k8s keys too
        with get_runner() as runner:
            resolved = runner.scheduler_run_opts("local_cwd").resolve(cfg)
            assert resolved["partition"] == "debug" and resolved["prepend_cwd"] is False
            handle = runner.run_component("utils.echo", ["--msg", "multi"], "local_cwd", cfg=cfg)
            print(runner.wait(handle, wait_interval=0.1).state)
            try:
                runner.run_component("utils.echo", [], "local_cwd", cfg={"prepend_cwd": 3})
            except InvalidRunConfigException as e:
                print("rejected", e.cfg_key)
        """,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["SUCCEEDED", "rejected", "prepend_cwd"]


def test_torchxconfig_variable(isolated: Path, write: Callable[[Path, str], Path]) -> None:
    other = write(isolated / "team.ini", "[component:utils.echo]\nmsg = from TORCHXCONFIG\n")
    write(isolated / ".torchxconfig", "[component:utils.echo]\nmsg = from cwd\n")
    proc = run_torchx("run", "-s", "local_cwd", "utils.echo", env={"TORCHXCONFIG": str(other)})
    assert "from TORCHXCONFIG" in proc.stdout, proc.stderr
    missing = run_torchx("run", "-s", "local_cwd", "utils.echo", env={"TORCHXCONFIG": str(isolated / "nope")})
    assert missing.returncode == 1
    assert "TORCHXCONFIG" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_percent_and_typos_in_values(isolated: Path, write: Callable[[Path, str], Path]) -> None:
    write(isolated / ".torchxconfig", "[component:utils.echo]\nmsg = 100% done\n")
    proc = run_torchx("run", "-s", "local_cwd", "utils.echo")
    assert proc.returncode == 0, proc.stderr
    assert "100% done" in proc.stdout, proc.stderr
    typo = run_torchx("run", "--dryrun", "-s", "local_cwd", "-cfg", "prepend_cwd=ture", "utils.echo")
    assert typo.returncode == 1
    assert "prepend_cwd" in typo.stderr  # TorchX would silently read False
