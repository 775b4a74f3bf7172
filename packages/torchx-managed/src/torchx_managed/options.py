"""The run options of ``managed``, checked before anything is submitted, and the split of the
other ``-cfg`` keys among the targets that declare them."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from torchx.specs.runopts import CfgVal, InvalidRunConfigException, runopt, runopts

SCHEDULER = "managed"
#: the longest wait ``restart_backoff`` grows to (Kubernetes' CrashLoopBackOff cap)
MAX_BACKOFF = 300.0

_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(s|sec|m|min|h|d)?\s*$", re.IGNORECASE)
_UNIT = {"": 1.0, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


class ManagedRunOpts(runopts):
    """The options of ``managed``; a key none of them names is kept as text (for the targets)
    instead of dropped, and checked against the targets' options when the job is dry-run."""

    def get(self, name: str) -> runopt | None:
        """The option ``name``; an unknown name is a text option passed to the targets."""
        return super().get(name) or runopt(None, str, False, "passed to the targets that declare it", [])

    def resolve(self, cfg: Mapping[str, CfgVal]) -> dict[str, CfgVal]:
        """As :meth:`runopts.resolve`, but takes the values a Python caller writes: ints for
        ``recover_on_exit_codes`` and a number of seconds for ``pending_timeout``."""
        given = dict(cfg)
        codes: Any = given.get("recover_on_exit_codes")
        if isinstance(codes, (list, tuple)):
            given["recover_on_exit_codes"] = [_int_text(c) for c in codes]
        for key in ("pending_timeout", "restart_backoff"):
            if key in given:
                given[key] = _int_text(given[key])
        return super().resolve(given)

    def parse_cfg_str(self, cfg_str: str) -> tuple[dict[str, CfgVal], list[str]]:
        """As :meth:`runopts.parse_cfg_str`, but unknown keys are kept (as text), not dropped."""
        from torchx.specs.runopts import _split_cfg_str

        out, unknown = super().parse_cfg_str(cfg_str)
        raw = dict(_split_cfg_str(cfg_str))
        for key in unknown:
            out[key] = raw[key]
        return out, []


def _int_text(value: Any) -> Any:
    """A number (not a bool) as its text, so that a text option takes it; anything else as is."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return value


def run_opts() -> ManagedRunOpts:
    """The options of ``managed``."""
    opts = ManagedRunOpts()
    opts.add("targets", list[str], "schedulers to run the app on, tried in order (failover)", required=True)
    opts.add("max_restarts", int, "restarts after application errors (APP_ERROR, UNKNOWN)", default=0)
    opts.add(
        "recover_on_exit_codes",
        list[str],
        "exit codes that always restart, uncounted (e.g. 33: 'checkpointed, requeue me')",
        default=[],
    )
    opts.add(
        "restart_backoff",
        str,
        "wait before a restart after an application error (90, 10s, 1m), doubled per error in a row,"
        " at most 5m (a crash loop slows down like Kubernetes' CrashLoopBackOff); 0: restart at once;"
        " unset: 1s, or the target's own pace where it recovers the job natively",
    )
    opts.add(
        "max_recoveries",
        int,
        "restarts after infrastructure failures (NODE_FAILURE, PREEMPTED, KILLED), counted apart",
        default=10,
    )
    opts.add(
        "pending_timeout",
        str,
        "an attempt still pending this long (90, 90s, 5m, 1h) is cancelled and the next target tried;"
        " the last target waits (unset: wait)",
    )
    opts.add(
        "checkpoint_dir",
        str,
        "TORCHX_CHECKPOINT_DIR of every attempt (path or fsspec URL); default: a directory in the"
        " job's state (give a shared location when targets do not share this machine's disk)",
    )
    opts.add("notify", str, "http(s) URL: one JSON POST per state change of the job and of each attempt")
    opts.add(
        "controller",
        str,
        "what recovers the job: native (inside its one target: requeue, retries, an in-job restart"
        " loop; no process on this machine), local (a driver on this machine), or auto (native"
        " where the job allows it, else local), or a scheduler's name (a controller that runs as a"
        " job on that scheduler and drives every job of the journal; needs journal=)",
        default="auto",
    )
    opts.add(
        "journal",
        str,
        "absolute path of the directory the job's journal is kept in (default: this machine's state"
        " directory); on storage other machines mount, they see the job; required with a controller"
        " that runs as a job; or an s3://BUCKET/PREFIX URL (needs torchx-managed[s3]; controller=kubernetes"
        " hands the pod this machine's AWS_* credentials in a Secret)",
    )
    opts.add(
        "controller_image",
        str,
        "controller=kubernetes: the image of the controller's pod, with Python, torchx-managed and the"
        " targets' packages (required with controller=kubernetes)",
    )
    opts.add(
        "controller_python",
        str,
        "controller=kubernetes: the Python the controller's pod runs (a virtualenv's python mounted"
        " with controller_mounts, or the image's)",
        default="python3",
    )
    opts.add(
        "controller_mounts",
        list[str],
        "controller=kubernetes: what the controller's pod mounts: PATH (the node's directory, at the"
        " same path) or CLAIM:PATH (a PersistentVolumeClaim at PATH); a journal path must be under one"
        " (default: the journal's directory from the node; nothing for an s3:// journal)",
        default=[],
    )
    return opts


#: ``controller`` values: recover inside the target, or by a driver on the submitting machine
CONTROLLERS = ("auto", "native", "local")
#: the schedulers a controller runs on as a job (they run a Python of this machine's, or an image)
CONTROLLER_SCHEDULERS = ("kubernetes", "local_cwd", "lsf", "slurm")
#: the environment of a controller's process, wherever it runs. glibc's malloc gives each of its
#: threads (two per job on a URL journal: its driver, its lease) an arena of its own, up to 8 per
#: core; two hold the same with less left fragmented (100 jobs on moto: peak RSS 66.1 -> 63.1 MB)
CONTROLLER_ENV = {"PYTHONUNBUFFERED": "1", "MALLOC_ARENA_MAX": "2"}
#: the options of a controller that runs as a Kubernetes Deployment
POD_OPTIONS = ("controller_image", "controller_python", "controller_mounts")
_CLAIM = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


def parse_duration(text: str) -> float:
    """Seconds of ``90``, ``90s``, ``1.5m``, ``2h``.

    Raises:
        ValueError: not a duration
    """
    m = _DURATION.match(text)
    if m is None:
        raise ValueError(f"{text!r} is not a duration: give seconds (90) or a number with s, m, h or d (5m)")
    return float(m.group(1)) * _UNIT[(m.group(2) or "").lower()]


@dataclass
class ManagedOptions:
    """The checked options of one managed job (see :func:`run_opts`).

    Attributes:
        targets: scheduler names, in order
        max_restarts: budget for APP_ERROR / UNKNOWN / TIMEOUT ends
        recover_on_exit_codes: exit codes that restart uncounted
        max_recoveries: budget for NODE_FAILURE / PREEMPTED / KILLED ends
        pending_timeout: seconds an attempt may stay pending before failover (None: wait)
        restart_backoff: seconds before the first restart after an application error (doubled
            per error in a row, at most :data:`MAX_BACKOFF`); None: not given (1 s here, the
            target's own pace where it recovers the job natively)
        checkpoint_dir: TORCHX_CHECKPOINT_DIR (None: the job's own directory)
        notify: URL to POST state changes to
        target_cfgs: run options of each target (from the other ``-cfg`` keys)
        controller: ``auto``, ``native``, ``local`` (see :data:`CONTROLLERS`) or the scheduler
            a controller job runs on
        journal: the directory the job is kept in (None: this machine's state directory)
        controller_image: the image of a ``controller=kubernetes`` pod
        controller_python: the Python that pod runs
        controller_mounts: what that pod mounts (:func:`controller_volume`; empty: the journal)
    """

    targets: list[str]
    max_restarts: int = 0
    recover_on_exit_codes: list[int] = field(default_factory=list)
    max_recoveries: int = 10
    pending_timeout: float | None = None
    restart_backoff: float | None = None
    checkpoint_dir: str | None = None
    notify: str | None = None
    target_cfgs: dict[str, dict[str, Any]] = field(default_factory=dict)
    controller: str = "auto"
    journal: str | None = None
    controller_image: str | None = None
    controller_python: str = "python3"
    controller_mounts: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """JSON-ready (stored in the job's spec)."""
        return dict(vars(self))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ManagedOptions:
        """The inverse of :meth:`as_json`."""
        return cls(**dict(data))


def list_option(value: CfgVal) -> list[str]:
    """A list option's items, from a list or a ``;``/``,``-separated string (``-cfg``)."""
    if value is None:
        return []
    if isinstance(value, list):
        return [str(v) for v in value]
    return [p.strip() for p in str(value).replace(";", ",").split(",")]


def _bad(msg: str, key: str) -> InvalidRunConfigException:
    return InvalidRunConfigException(f"managed: {msg}", key)


def check(
    cfg: Mapping[str, CfgVal], installed: Mapping[str, Any], target_opts: Any
) -> tuple[ManagedOptions, list[str]]:
    """Checks ``managed``'s options and splits the others among the targets.

    Args:
        cfg: the resolved run options (``managed``'s and the targets')
        installed: the installed schedulers (name -> factory)
        target_opts: ``target_opts(name) -> runopts`` of an installed target

    Returns:
        the options, and the keys no target declares (for the unknown-key warning)

    Raises:
        InvalidRunConfigException: one line saying what is wrong and how to fix it
    """
    own = run_opts()
    targets = [str(t).strip() for t in list_option(cfg.get("targets")) if str(t).strip()]
    if not targets:
        raise _bad("targets is empty: give the schedulers to run on, e.g. -cfg targets=slurm;local_cwd", "targets")
    for t in targets:
        if t == SCHEDULER:
            raise _bad("'managed' cannot be its own target: name the schedulers to run on", "targets")
        if t not in installed:
            from torchx.util.distributions import SCHEDULER_DISTRIBUTIONS, pip_install

            pkg = SCHEDULER_DISTRIBUTIONS.get(t)
            hint = f"; it is provided by `{pip_install(pkg)}`" if pkg else ""
            known = ", ".join(sorted(n for n in installed if n != SCHEDULER)) or "none"
            raise _bad(f"target {t!r} is not an installed scheduler{hint} (installed: {known})", "targets")
    if len(set(targets)) != len(targets):
        raise _bad(f"targets {';'.join(targets)} names a scheduler twice: give each once", "targets")
    budgets = {}
    for key in ("max_restarts", "max_recoveries"):
        value = cfg.get(key)
        if not isinstance(value, int) or value < 0:
            raise _bad(f"{key}={value}: must be 0 or more", key)
        budgets[key] = value
    codes = []
    for code in list_option(cfg.get("recover_on_exit_codes")):
        try:
            codes.append(int(str(code)))
        except ValueError:
            raise _bad(
                f"recover_on_exit_codes: {code!r} is not an exit code (an integer)", "recover_on_exit_codes"
            ) from None
    timeout = None
    raw_timeout = cfg.get("pending_timeout")
    if raw_timeout not in (None, ""):
        try:
            timeout = parse_duration(str(raw_timeout))
        except ValueError as e:
            raise _bad(f"pending_timeout: {e}", "pending_timeout") from None
    backoff = None
    raw_backoff = cfg.get("restart_backoff")
    if raw_backoff not in (None, ""):
        try:
            backoff = parse_duration(str(raw_backoff))
        except ValueError as e:
            raise _bad(f"restart_backoff: {e}", "restart_backoff") from None
    notify = cfg.get("notify") or None
    if notify is not None:
        from urllib.parse import urlsplit

        try:
            parts = urlsplit(str(notify))
        except ValueError as e:  # e.g. "Invalid IPv6 URL" for http://[::1
            raise _bad(f"notify={notify}: {e}: give an http:// or https:// URL", "notify") from None
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise _bad(f"notify={notify}: must be an http:// or https:// URL", "notify")
    ckpt = cfg.get("checkpoint_dir") or None
    controller = _controller(cfg.get("controller"), installed)
    journal = _journal(cfg.get("journal"), controller)
    pod = _pod_options(cfg, controller, journal)
    names = {name for name, _ in own}
    target_cfgs: dict[str, dict[str, Any]] = {t: {} for t in targets}
    unknown = []
    for key, value in cfg.items():
        if key in names or value is None:
            continue
        takers = [t for t in targets if target_opts(t).get(key) is not None]
        for t in takers:
            target_cfgs[t][key] = value
        if not takers:
            unknown.append(key)
    options = ManagedOptions(
        targets=targets,
        max_restarts=budgets["max_restarts"],
        recover_on_exit_codes=codes,
        max_recoveries=budgets["max_recoveries"],
        pending_timeout=timeout,
        restart_backoff=backoff,
        checkpoint_dir=None if ckpt is None else str(ckpt),
        notify=None if notify is None else str(notify),
        target_cfgs=target_cfgs,
        controller=controller,
        journal=journal,
        **pod,
    )
    return options, unknown


def _controller(value: CfgVal, installed: Mapping[str, Any]) -> str:
    """The checked ``controller`` option."""
    text = str(value or "auto").strip()
    if text in CONTROLLERS or (text in installed and text in CONTROLLER_SCHEDULERS):
        return text
    known = ", ".join([*CONTROLLERS, *(n for n in CONTROLLER_SCHEDULERS if n in installed)])
    if text in CONTROLLER_SCHEDULERS:
        from torchx.util.distributions import SCHEDULER_DISTRIBUTIONS, pip_install

        pkg = SCHEDULER_DISTRIBUTIONS.get(text)
        hint = f" (`{pip_install(pkg)}`)" if pkg else ""
        raise _bad(f"controller={text}: the scheduler {text} is not installed{hint}; or use {known}", "controller")
    raise _bad(
        f"controller={text}: neither {', '.join(CONTROLLERS)} nor an installed scheduler a controller runs on"
        f" ({', '.join(CONTROLLER_SCHEDULERS)}); use {known}",
        "controller",
    )


def controller_volume(entry: str) -> tuple[str | None, str]:
    """``(claim, path)`` of a ``controller_mounts`` entry: ``PATH`` (the node's directory, claim
    None) or ``CLAIM:PATH`` (a PersistentVolumeClaim).

    Raises:
        ValueError: neither
    """
    claim, sep, path = entry.partition(":")
    if not sep:
        claim, path = "", entry
    if not os.path.isabs(path) or (sep and not _CLAIM.match(claim)):
        raise ValueError(f"{entry!r} is neither an absolute PATH nor CLAIM:PATH (a PersistentVolumeClaim's name)")
    return claim or None, os.path.normpath(path)


def _pod_options(cfg: Mapping[str, CfgVal], controller: str, journal: str | None) -> dict[str, Any]:
    """The checked options of a ``controller=kubernetes`` pod (:data:`POD_OPTIONS`)."""
    image = str(cfg.get("controller_image") or "").strip()
    python = str(cfg.get("controller_python") or "python3").strip()
    mounts = [m for m in list_option(cfg.get("controller_mounts")) if m]
    if controller != "kubernetes":
        given = [k for k in POD_OPTIONS if k != "controller_python" and cfg.get(k)]
        if given or python != "python3":
            raise _bad(
                f"{(given or ['controller_python'])[0]} is an option of controller=kubernetes only", "controller"
            )
        return {}
    if not image:
        raise _bad(
            "controller=kubernetes needs controller_image=IMAGE: an image with Python, torchx-managed and"
            " the targets' packages (or a Python mounted with controller_mounts and named by controller_python)",
            "controller_image",
        )
    assert journal is not None  # _journal requires it with a controller job
    paths = []
    for entry in mounts:
        try:
            paths.append(controller_volume(entry)[1])
        except ValueError as e:
            raise _bad(f"controller_mounts: {e}", "controller_mounts") from None
    if (
        mounts
        and "://" not in journal
        and not any(journal == p or journal.startswith(p.rstrip("/") + "/") for p in paths)
    ):
        raise _bad(
            f"journal={journal} is under none of controller_mounts ({';'.join(mounts)}): the controller's pod"
            " would not see it; add its directory (or a claim mounted there)",
            "controller_mounts",
        )
    return {"controller_image": image, "controller_python": python, "controller_mounts": mounts}


def _journal(value: CfgVal, controller: str) -> str | None:
    """The checked ``journal`` option: an absolute directory this machine can write (made here),
    or an ``s3://`` URL it can write (:func:`~torchx_managed.journal_store.check_url`)."""
    text = str(value).strip() if value not in (None, "") else ""
    if not text:
        if controller not in CONTROLLERS:
            raise _bad(
                f"controller={controller} needs journal=PATH: a directory on storage both this machine and"
                f" {controller}'s nodes reach, or an s3://BUCKET/PREFIX both reach (the controller job reads and"
                " writes the job there)",
                "journal",
            )
        return None
    if "://" in text and not text.startswith("file://"):
        from torchx_managed.journal_store import check_url  # imports boto3: only for a URL journal

        try:
            return check_url(text)
        except ValueError as e:
            raise _bad(str(e), "journal") from None
    text = text[len("file://") :] if text.startswith("file://") else text
    path = os.path.expanduser(text)
    if not os.path.isabs(path):
        raise _bad(f"journal={text}: give an absolute path (the controller's side resolves it too)", "journal")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except OSError as e:
        raise _bad(f"journal={text}: cannot make the directory: {e.strerror}", "journal") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise _bad(f"journal={text}: this machine cannot write there", "journal")
    return os.path.normpath(path)
