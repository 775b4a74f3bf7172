"""The Ray job's driver: runs a torchx app as one gang of actors, one per replica.

Runs on the cluster (``python -m torchx_ray_driver``), where torchx is not installed: it
imports only Ray and the stdlib. It reads the app (``app.json`` next to this file, written
by the scheduler) and, per attempt:

1. reserves one placement-group bundle per replica (all or none) and waits for it;
2. starts one :class:`~torchx_ray_driver.replica.ReplicaProcess` actor per replica in its bundle;
3. asks replica 0 of the first role for its node's address (the rank-0 host), then starts
   every replica's command;
4. writes every output line and state change as a record (:mod:`torchx_ray_driver.records`)
   to stdout, which is the job's log;
5. when a replica fails, stops the others; the attempt fails.

A failed attempt is retried (the whole app) while attempts remain (``max_retries``). A job
that recovers (``recovery`` in ``app.json``, from ``torchx-managed``) is retried by budgets
instead (:meth:`Driver.run_recovering`): application errors against ``max_restarts``, a
replica whose actor died (its node or worker lost) or that a signal from outside killed, and a
placement that timed out against ``max_recoveries``, exit codes of ``recover_on_exit_codes``
uncounted; every replica gets ``TORCHX_ATTEMPT`` and ``TORCHX_CHECKPOINT_DIR``, and each end
is recorded (``x`` records). SIGTERM (the Jobs API's stop) stops every replica, and the
driver exits.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any

from . import records
from .replica import ReplicaProcess

#: seconds each poll of a replica waits for output
POLL_SECONDS = 0.5
#: seconds a stopped replica has between SIGTERM and SIGKILL (the Jobs API kills the driver 3 s after its SIGTERM)
STOP_GRACE = 2.0


class Stopped(Exception):
    """The job was stopped (SIGTERM)."""


class Driver:
    """Runs the app described by ``spec`` (the JSON the scheduler wrote)."""

    def __init__(self, spec: dict[str, Any], out: Any = None) -> None:
        self.spec = spec
        self.out = out or sys.stdout
        self.replicas = [(role, k) for role in spec["roles"] for k in range(role["num_replicas"])]
        self.stopping = False
        #: variables every replica of the running attempt gets besides its role's
        self.attempt_env: dict[str, str] = {}
        #: the attempt's first failure: ("app", exit code) or ("infra", None)
        self.failure: tuple[str, int | None] | None = None

    def emit(self, text: str) -> None:
        """Writes records to the job's log."""
        self.out.write(text)
        self.out.flush()

    def on_sigterm(self, signum: int, frame: object) -> None:
        """The job is being stopped: the running attempt winds down and the driver exits."""
        self.stopping = True

    def _failed(self, kind: str, code: int | None) -> None:
        if self.failure is None:
            self.failure = (kind, code)

    def run(self) -> int:
        """Runs attempts until one succeeds, retries run out, or the job is stopped; returns the exit code."""
        if self.spec.get("recovery") is not None:
            return self.run_recovering(self.spec["recovery"])
        retries = int(self.spec.get("max_retries", 0))
        for number in range(retries + 1):
            self.emit(records.attempt(time.time(), number))
            try:
                ok = self.attempt()
            except Stopped:
                return 0
            if ok or self.stopping:
                return 0
            if number < retries:
                self.emit(records.message(time.time(), f"attempt {number} failed; retrying the app"))
        return 1

    def run_recovering(self, policy: dict[str, Any]) -> int:
        """Runs attempts under the budgets of ``policy`` (``app.json``'s ``recovery``) until one
        succeeds, a budget is used up (exit 1), or the job is stopped (exit 0)."""
        recover = set(policy.get("recover_on_exit_codes") or [])
        killed = set(policy.get("killed_signals") or [])
        ckpt = str(policy["checkpoint_dir"])
        used = {"RESTART": 0, "RECOVERY": 0}
        limit = {"RESTART": int(policy.get("max_restarts", 0)), "RECOVERY": int(policy.get("max_recoveries", 0))}
        errors_in_a_row = 0
        number = 0
        while True:
            self.attempt_env = {"TORCHX_ATTEMPT": str(number), "TORCHX_CHECKPOINT_DIR": ckpt}
            self.failure = None
            self.emit(records.attempt(time.time(), number))
            try:
                ok = self.attempt()
            except Stopped:
                return 0
            if self.stopping:
                return 0
            if ok:
                self.emit(records.attempt_end(time.time(), number, 0, "SUCCEEDED"))
                return 0
            kind, code = self.failure or ("infra", None)
            if kind == "app" and code in recover:
                budget = "UNCOUNTED"
            elif kind == "infra" or (code is not None and code < 0 and -code in killed):
                budget = "RECOVERY"
            else:
                budget = "RESTART"
            self.emit(records.attempt_end(time.time(), number, code, budget))
            if budget in used:
                used[budget] += 1
                if used[budget] > limit[budget]:
                    name = "max_restarts" if budget == "RESTART" else "max_recoveries"
                    self.emit(records.message(time.time(), f"{name}={limit[budget]} used up; the job fails"))
                    return 1
            errors_in_a_row = errors_in_a_row + 1 if budget == "RESTART" else 0
            number += 1
            if errors_in_a_row and float(policy.get("restart_backoff") or 0) > 0:
                wait = float(policy["restart_backoff"]) * 2 ** (errors_in_a_row - 1)
                wait = min(wait, float(policy.get("max_backoff") or wait))
                self.emit(records.backoff(time.time(), number, wait))
                deadline = time.monotonic() + wait
                while time.monotonic() < deadline:
                    if self.stopping:
                        return 0
                    time.sleep(min(POLL_SECONDS, max(0.0, deadline - time.monotonic())))

    def _bundle(self, role: dict[str, Any]) -> dict[str, float]:
        res = role["resources"]
        bundle = {k: float(v) for k, v in res.items() if v}
        return bundle or {"CPU": 0.001}  # an empty bundle is not allowed

    def _wait_placed(self, pg: Any) -> bool:
        import ray

        timeout = self.spec.get("placement_timeout")
        deadline = None if timeout is None else time.monotonic() + float(timeout)
        ready = pg.ready()
        while True:
            done, _ = ray.wait([ready], timeout=POLL_SECONDS)
            if done:
                return True
            if self.stopping:
                raise Stopped
            if deadline is not None and time.monotonic() >= deadline:
                return False

    def attempt(self) -> bool:
        """One run of the whole gang; True if every replica succeeded."""
        import ray
        from ray.util.placement_group import placement_group, remove_placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        now = time.time()
        self.emit("".join(records.state(i, now, "PENDING") for i in range(len(self.replicas))))
        bundles = [self._bundle(role) for role, _ in self.replicas]
        pg = placement_group(bundles, strategy=self.spec.get("placement_strategy", "SPREAD"))
        actors: list[Any] = []
        try:
            if not self._wait_placed(pg):
                msg = f"the cluster could not place all {len(bundles)} replicas within the placement timeout"
                self.emit(records.message(time.time(), msg))
                self._failed("infra", None)
                self._end_all("FAILED")
                return False
            remote = ray.remote(ReplicaProcess)
            for i, (role, _) in enumerate(self.replicas):
                res = role["resources"]
                actors.append(
                    remote.options(
                        num_cpus=res.get("CPU", 0),
                        num_gpus=res.get("GPU", 0),
                        memory=res.get("memory") or None,
                        resources={k: v for k, v in res.items() if k not in ("CPU", "GPU", "memory") and v},
                        max_concurrency=4,
                        max_restarts=0,
                        scheduling_strategy=PlacementGroupSchedulingStrategy(pg, placement_group_bundle_index=i),
                    ).remote()
                )
            hosts = ray.get([a.host.remote() for a in actors])
            return self._run_replicas(actors, hosts)
        finally:
            for a in actors:
                ray.kill(a)
            remove_placement_group(pg)

    def _end_all(self, value: str) -> None:
        now = time.time()
        self.emit("".join(records.state(i, now, value) for i in range(len(self.replicas))))

    def _run_replicas(self, actors: list[Any], hosts: list[str]) -> bool:
        import ray

        rank0 = hosts[0]
        live: dict[Any, int] = {}
        failed = False
        for i, actor in enumerate(actors):  # (no zip(strict=): the cluster's Python may be 3.9)
            role, k = self.replicas[i]
            try:
                ray.get(actor.start.remote(role["argv"], {**role["env"], **self.attempt_env}, k, rank0))
            except Exception as e:  # the command could not start: the attempt fails
                self.emit(records.message(time.time(), f"{role['name']}/{k}: {_cause(e)}"))
                self.emit(records.state(i, time.time(), "FAILED", 127, hosts[i]))
                self._failed("app", 127)
                failed = True
                break
            self.emit(records.state(i, time.time(), "RUNNING", None, hosts[i]))
            live[actor.poll.remote(POLL_SECONDS)] = i
        if failed:
            self._stop(actors, live.values())
        stop_sent = failed
        ok = not failed
        while live:
            if self.stopping and not stop_sent:
                self._stop(actors, live.values())
                stop_sent = True
            ready, _ = ray.wait(list(live), num_returns=1, timeout=POLL_SECONDS)
            for ref in ready:
                i = live.pop(ref)
                try:
                    lines, code, stopped = ray.get(ref)
                except Exception as e:  # the actor died (node lost, killed)
                    self.emit(records.message(time.time(), f"replica {i}: {_cause(e)}"))
                    self.emit(records.state(i, time.time(), "FAILED", None, hosts[i]))
                    self._failed("infra", None)
                    ok = False
                    if not stop_sent:
                        self._stop(actors, live.values())
                        stop_sent = True
                    continue
                if lines:
                    self.emit("".join(records.output(i, s, t, text, nl) for s, t, text, nl in lines))
                if code is None:
                    live[actors[i].poll.remote(POLL_SECONDS)] = i
                    continue
                if code == 0:
                    value = "SUCCEEDED"
                elif stopped:
                    value = "CANCELLED"
                else:
                    value = "FAILED"
                self.emit(records.state(i, time.time(), value, code, hosts[i]))
                if value != "SUCCEEDED":
                    ok = False
                if value == "FAILED":
                    self._failed("app", code)
                if value == "FAILED" and not stop_sent:
                    self.emit(records.message(time.time(), f"replica {i} exited with code {code}; stopping the others"))
                    self._stop(actors, live.values())
                    stop_sent = True
        if self.stopping:
            raise Stopped
        return ok

    def _stop(self, actors: list[Any], indexes: Any) -> None:
        for i in list(indexes):
            actors[i].stop.remote(STOP_GRACE)


def _cause(e: BaseException) -> str:
    """The first line of an error's own message (Ray wraps remote errors in long texts)."""
    cause = getattr(e, "cause", None) or e
    return (str(cause).strip().splitlines() or [type(cause).__name__])[-1]


def main() -> int:
    """Entry point: load ``app.json``, connect to the cluster, run the app."""
    import ray

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "app.json")
    with open(path, encoding="utf-8") as f:
        spec = json.load(f)
    ray.init(log_to_driver=False)
    driver = Driver(spec)
    signal.signal(signal.SIGTERM, driver.on_sigterm)
    return driver.run()
