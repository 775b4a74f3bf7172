"""``torchx.schedulers.local_scheduler`` as TorchX 0.7 documents it: the constructor, the image
providers and ``SignalException``."""

from __future__ import annotations

import os
import signal
import stat
import time
from pathlib import Path

import pytest
from torchx import specs

pytest.importorskip("torchx_sched_local")

from torchx.schedulers.local_scheduler import (
    CWDImageProvider,
    LocalDirectoryImageProvider,
    LocalScheduler,
    SignalException,
    create_scheduler,
)


def echo_app(image: str, entrypoint: str = "echo") -> specs.AppDef:
    return specs.AppDef("a", roles=[specs.Role("r", image=image, entrypoint=entrypoint, args=["hi"])])


def test_constructor_positional_and_keyword(isolated: Path) -> None:
    LocalScheduler("s", CWDImageProvider)
    LocalScheduler("s", CWDImageProvider, 10, ["/opt/bin"])
    LocalScheduler(session_name="s", image_provider_class=CWDImageProvider, cache_size=1, extra_paths=None)
    create_scheduler("s", cache_size=5, extra_paths=["/x"], image_provider_class=CWDImageProvider)
    for bad in (0, -1):
        with pytest.raises(ValueError):
            LocalScheduler("s", CWDImageProvider, cache_size=bad)


def test_create_scheduler_s_attributes_are_torchx_s(isolated: Path) -> None:
    sched = create_scheduler("s", cache_size=20, extra_paths=["/x"])
    assert sched._image_provider_class is CWDImageProvider  # the default provider, as TorchX
    assert sched._cache_size == 20 and sched._extra_paths == ["/x"]
    given = create_scheduler("s", image_provider_class=LocalDirectoryImageProvider)
    assert given._image_provider_class is LocalDirectoryImageProvider


def test_extra_paths_come_first_on_path(isolated: Path) -> None:
    sched = LocalScheduler("s", CWDImageProvider, extra_paths=["/opt/tools/bin"])
    info = sched.submit_dryrun(echo_app("ignored"), {})
    assert "PATH=/opt/tools/bin:" in str(info)


def test_cwd_image_provider(isolated: Path) -> None:
    provider = CWDImageProvider({})
    role = specs.Role("r", image="anything", entrypoint="python")
    assert provider.fetch("anything") == os.getcwd()
    assert provider.fetch_role(role) == os.getcwd()
    assert provider.get_cwd("anything") == os.getcwd()
    assert provider.get_entrypoint(os.getcwd(), role) == "python"


def test_local_directory_image_provider(isolated: Path) -> None:
    image = isolated / "img"
    image.mkdir()
    provider = LocalDirectoryImageProvider({})
    role = specs.Role("r", image=str(image), entrypoint="bin/run.sh")
    assert provider.fetch(str(image)) == str(image)
    assert provider.get_cwd(str(image)) == str(image)
    assert provider.get_entrypoint(str(image), role) == "bin/run.sh"  # as TorchX: relative to the cwd below
    with pytest.raises(ValueError):
        provider.fetch(str(isolated / "missing"))
    param = provider.get_replica_param(str(image), role, stdout="/tmp/o")
    assert param.args[0] == "bin/run.sh"
    assert param.cwd == str(image)


def test_scheduler_runs_from_the_local_directory_image(isolated: Path) -> None:
    image = isolated / "img"
    (image / "bin").mkdir(parents=True)
    script = image / "bin" / "whereami.sh"
    script.write_text("#!/bin/sh\npwd > where.txt\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    sched = LocalScheduler("s", LocalDirectoryImageProvider)
    app_id = sched.submit(echo_app(str(image), "bin/whereami.sh"), {})
    deadline = time.monotonic() + 60
    while (desc := sched.describe(app_id)) is not None and not specs.is_terminal(desc.state):
        assert time.monotonic() < deadline, desc
        time.sleep(0.1)
    assert desc is not None and desc.state == specs.AppState.SUCCEEDED, desc
    assert (image / "where.txt").read_text().strip() == str(image)


def test_a_bare_entrypoint_in_the_local_directory_image_is_found_there(isolated: Path) -> None:
    """A bare name is looked up on PATH, which ends with the image directory (as in TorchX)."""
    image = isolated / "img"
    image.mkdir()
    script = image / "torchx-compat-only-here.sh"
    script.write_text("#!/bin/sh\necho found > found.txt\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    sched = LocalScheduler("s", LocalDirectoryImageProvider)
    app_id = sched.submit(echo_app(str(image), script.name), {})
    deadline = time.monotonic() + 60
    while (desc := sched.describe(app_id)) is not None and not specs.is_terminal(desc.state):
        assert time.monotonic() < deadline, desc
        time.sleep(0.1)
    assert desc is not None and desc.state == specs.AppState.SUCCEEDED, desc
    assert (image / "found.txt").read_text() == "found\n"


def test_signal_exception() -> None:
    e = SignalException("got SIGTERM", signal.SIGTERM)
    assert isinstance(e, Exception)
    assert e.sigval == signal.SIGTERM
    assert str(e) == "got SIGTERM"
