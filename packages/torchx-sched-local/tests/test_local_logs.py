"""local_cwd logs: streams, whole lines of any length, regex, since/until, and following a running job."""

from __future__ import annotations

import sys
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from torchx.runner import get_runner
from torchx.schedulers.streams import Stream
from torchx.specs import AppState
from torchx.testing import command_app, eventually, python_app
from torchx_sched_local.local_scheduler import LocalScheduler


def _finished(sched: LocalScheduler, application) -> str:  # type: ignore[no-untyped-def]
    app_id = sched.submit(application, {})
    desc = sched.wait(app_id, timeout=30)
    assert desc is not None, desc
    assert desc.state == AppState.SUCCEEDED, desc
    return app_id


def test_streams(sched: LocalScheduler) -> None:
    app_id = _finished(sched, command_app("sh", "-c", "echo out1; echo err1 >&2; echo out2; echo err2 >&2"))
    assert list(sched.log_iter(app_id, "r", 0, streams=Stream.STDOUT)) == ["out1\n", "out2\n"]
    assert list(sched.log_iter(app_id, "r", 0, streams=Stream.STDERR)) == ["err1\n", "err2\n"]
    combined = list(sched.log_iter(app_id, "r", 0))
    assert sorted(combined) == ["err1\n", "err2\n", "out1\n", "out2\n"]
    assert list(sched.log_iter(app_id, "r", 0, streams=Stream.COMBINED)) == combined


def test_a_megabyte_line_is_never_split(sched: LocalScheduler) -> None:
    code = (
        "import sys, os\n"
        "big = 'x' * (1 << 20)\n"
        "for i in range(3):\n"
        "    for j in range(0, len(big), 4096):\n"
        "        os.write(1, big[j:j + 4096].encode())\n"
        "        if j % (1 << 16) == 0: os.write(2, b'interleaved\\n')\n"
        "    os.write(1, b'\\n')\n"
        "os.write(1, b'tail without newline')\n"
    )
    app_id = _finished(sched, python_app(code))
    big = "x" * (1 << 20) + "\n"
    assert list(sched.log_iter(app_id, "r", 0, streams=Stream.STDOUT)) == [
        big,
        big,
        big,
        "tail without newline",
    ]  # kept as written (issue 20)
    combined = list(sched.log_iter(app_id, "r", 0))
    assert combined.count(big) == 3
    assert combined.count("interleaved\n") == 3 * 16
    assert combined[-1] == "tail without newline"
    assert len(combined) == 3 + 48 + 1


def test_every_line_arrives_and_only_newline_breaks_lines(sched: LocalScheduler) -> None:
    code = (
        "import sys\nfor i in range(100000): sys.stdout.write(f'{i}\\n')\nsys.stdout.write('a\\rb\\x0bc\\u2028d\\r\\n')"
    )
    app_id = _finished(sched, python_app(code))
    lines = list(sched.log_iter(app_id, "r", 0, streams=Stream.STDOUT))
    assert lines[:100000] == [f"{i}\n" for i in range(100000)]
    assert lines[100000:] == ["a\rb\x0bc\u2028d\r\n"]


def test_regex(sched: LocalScheduler) -> None:
    app_id = _finished(sched, command_app("sh", "-c", "echo apple; echo banana; echo apricot"))
    assert list(sched.log_iter(app_id, "r", 0, regex="^ap")) == ["apple\n", "apricot\n"]


def _timed(path: Path, *lines: str) -> str:
    """A replica's code that writes its clock to ``path``, then prints ``lines`` 1 s apart
    (windows around its own clock, not the submission's: a loaded machine may start it late)."""
    prints = "; time.sleep(1.0); ".join(f"print({line!r}, flush=True)" for line in lines)
    return f"import time; open({str(path)!r}, 'w').write(repr(time.time())); {prints}"


def test_since_and_until(sched: LocalScheduler, tmp_path: Path) -> None:
    clock = tmp_path / "clock"
    app_id = _finished(sched, python_app(_timed(clock, "early", "late")))
    middle = datetime.fromtimestamp(float(clock.read_text()) + 0.5)
    for stream in (Stream.STDOUT, Stream.COMBINED):
        lines = list(sched.log_iter(app_id, "r", 0, streams=stream))
        assert lines == ["early\n", "late\n"]
        assert list(sched.log_iter(app_id, "r", 0, since=middle, streams=stream)) == ["late\n"]
        assert list(sched.log_iter(app_id, "r", 0, until=middle, streams=stream)) == ["early\n"]
        assert list(sched.log_iter(app_id, "r", 0, since=datetime.now() + timedelta(hours=1), streams=stream)) == []


def test_follow_streams_lines_as_written_and_ends_with_the_replica(sched: LocalScheduler, tmp_path: Path) -> None:
    # the job prints line i+1 only once the follower has yielded line i (the test then makes
    # go<i>): lines are streamed as written, whatever the machine's load; a follower that held
    # them back would leave the job waiting (it gives up after 60 s and says so)
    code = (
        "import os, sys, time\n"
        f"gate = {str(tmp_path)!r}\n"
        "for i in range(5):\n"
        "    print(i, flush=True)\n"
        "    deadline = time.time() + 60\n"
        "    while not os.path.exists(os.path.join(gate, f'go{i}')):\n"
        "        if time.time() > deadline:\n"
        "            print('line', i, 'was not followed', flush=True); sys.exit(1)\n"
        "        time.sleep(0.01)\n"
        "print('bye', time.time(), flush=True)\n"
    )
    app_id = sched.submit(python_app(code), {})
    got: list[str] = []
    for line in sched.log_iter(app_id, "r", 0, should_tail=True):
        if len(got) < 5:
            (tmp_path / f"go{len(got)}").touch()
        got.append(line)
    end = time.time()
    assert got[:5] == [f"{i}\n" for i in range(5)] and got[-1].startswith("bye "), got
    exited = float(got[-1].split()[1])
    # the tail notices the end at once (measured ~ms); the bound leaves room for a loaded machine
    # while still failing a follower that only notices the end after polling for seconds
    assert end - exited < 2.0
    assert sched.wait(app_id).state == AppState.SUCCEEDED  # type: ignore[union-attr]


@pytest.mark.parametrize("command", ["echo hi", "echo hi; exit 3"], ids=["succeeds", "fails"])
def test_after_the_follow_of_the_last_replica_ends_the_job_reads_as_ended(sched: LocalScheduler, command: str) -> None:
    # as upstream's tail, which ends when the app is terminal: a describe right after never reads RUNNING
    for _ in range(30):
        app_id = sched.submit(command_app("sh", "-c", command), {})
        assert list(sched.log_iter(app_id, "r", 0, should_tail=True)) == ["hi\n"]
        desc = sched.describe(app_id)
        assert desc is not None
        assert desc.state == (AppState.SUCCEEDED if command == "echo hi" else AppState.FAILED), desc


def test_follow_stops_when_its_replica_is_done_even_if_others_run(sched: LocalScheduler) -> None:
    code = "import sys, time; print('hi', flush=True); time.sleep(0 if sys.argv[1] == '0' else 300)"
    from torchx import specs

    app_id = sched.submit(
        command_app(sys.executable, "-c", code, specs.macros.replica_id, replicas=2), {"stop_grace_period": 1}
    )
    t = time.monotonic()
    assert list(sched.log_iter(app_id, "r", 0, should_tail=True)) == ["hi\n"]
    assert time.monotonic() - t < 5
    assert sched.describe(app_id).state == AppState.RUNNING  # type: ignore[union-attr]
    follower: list[str] = []
    thread = threading.Thread(target=lambda: follower.extend(sched.log_iter(app_id, "r", 1, should_tail=True)))
    thread.start()
    time.sleep(0.2)
    sched.cancel(app_id)
    thread.join(5)
    assert not thread.is_alive()
    assert follower == ["hi\n"]


def test_follow_a_finished_job_returns_everything(sched: LocalScheduler) -> None:
    app_id = _finished(sched, command_app("sh", "-c", "echo a; echo b"))
    assert list(sched.log_iter(app_id, "r", 0, should_tail=True)) == ["a\n", "b\n"]


def test_follow_with_since_until(sched: LocalScheduler, tmp_path: Path) -> None:
    clock = tmp_path / "clock"
    app_id = sched.submit(python_app(_timed(clock, "early", "late", "later")), {})
    eventually(lambda: clock.exists() and clock.stat().st_size > 0)
    start = float(clock.read_text())
    since, until = datetime.fromtimestamp(start + 0.5), datetime.fromtimestamp(start + 1.5)
    lines = list(sched.log_iter(app_id, "r", 0, should_tail=True, since=since, until=until))
    assert lines == ["late\n"]
    sched.cancel(app_id)


def test_unknown_replica_or_role(sched: LocalScheduler) -> None:
    app_id = _finished(sched, command_app("/bin/true", replicas=2))
    with pytest.raises(ValueError, match=r"has no replica r/2; it has: r \(replicas 0..1\)"):
        list(sched.log_iter(app_id, "r", 2))
    with pytest.raises(ValueError, match="has no replica nope/0"):
        list(sched.log_iter(app_id, "nope", 0))


def test_runner_log_lines_accepts_time_filters_and_streams() -> None:
    with get_runner() as runner:
        handle = runner.run(command_app("sh", "-c", "echo o; echo e >&2"), "local_cwd")
        runner.wait(handle)
        assert list(
            runner.log_lines(handle, "r", 0, streams=Stream.STDERR, since=datetime.now() - timedelta(minutes=1))
        ) == ["e\n"]


def test_many_followers_in_threads_each_end_with_their_replica(sched: LocalScheduler) -> None:
    from torchx import specs

    code = "import sys, time\nk = int(sys.argv[1])\nfor i in range(3):\n    print(k, i, flush=True); time.sleep(0.05 * k)\nprint('end', time.time(), flush=True)"
    app_id = sched.submit(command_app(sys.executable, "-c", code, specs.macros.replica_id, replicas=6), {})
    results: dict[int, tuple[list[str], float]] = {}

    def follow(k: int) -> None:
        lines = list(sched.log_iter(app_id, "r", k, should_tail=True))
        results[k] = (lines, time.time())

    threads = [threading.Thread(target=follow, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sched.wait(app_id).state == AppState.SUCCEEDED  # type: ignore[union-attr]
    assert len(results) == 6
    for k, (lines, ended) in sorted(results.items()):
        assert lines[:3] == [f"{k} {i}\n" for i in range(3)]
        assert lines[3].startswith("end ")
        assert ended - float(lines[3].split()[1]) < 1.0, (k, ended - float(lines[3].split()[1]))
    # each follows its own replica, not the job: the early ones end before the last replica does
    # (replica k ends ~0.15 k s in; an ordering, which a loaded machine's latency does not break)
    last_end = float(results[5][0][3].split()[1])
    assert all(results[k][1] < last_end for k in range(3)), {k: results[k][1] - last_end for k in range(3)}
