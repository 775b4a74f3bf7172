#!/usr/bin/python3 -IS
"""Stand-ins for the installers, daemons and clients the set-up scripts call, for the first-run
test (first-run-sandbox.sh, test_first_run.py). One program, called by many names (symlinks):
the name it is called by picks what it does. Every call is recorded, one JSON line each, in
$STANDIN_STATE/calls.jsonl. It emulates just enough of each tool for the scripts to take their
first-run branches and then their "already present" branches:

- installers (apt-get, debootstrap, pip, make, gcc, `python3 -m venv`) record what they were asked
  and make the result exist (apt-get marks packages installed for the dpkg-query stand-in and
  puts a few build tools on PATH; make runs the fixture's `.standin-make` recipe);
- daemons record their start, mark themselves up in $STANDIN_STATE/up/ and stay alive (as
  `sleep infinity` under their own name, so the scripts' pid and command-line checks hold);
- clients (curl, scontrol, sinfo, lsid, docker ...) answer from what is up.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import tarfile
from pathlib import Path

STATE = Path(os.environ.get("STANDIN_STATE", "/standin/state"))
UP = STATE / "up"
SELF = os.environ.get("STANDIN_EXE", os.path.abspath(__file__))
FIXTURES = Path(SELF).parent / "fixtures"
# commands a package puts on PATH that the scripts look for before installing it
PACKAGE_COMMANDS = {
    "autoconf": ["autoconf"],
    "automake": ["automake"],
    "libtool": ["libtoolize"],
    "bison": ["bison"],
    "flex": ["flex"],
    "make": ["make"],
    "gcc": ["gcc"],
}


def record(name: str, args: list[str]) -> None:
    entry = {"name": name, "args": args, "cwd": os.getcwd()}
    with open(STATE / "calls.jsonl", "a") as f:
        f.write(json.dumps(entry) + "\n")


def is_up(what: str) -> bool:
    return (UP / what).exists()


def mark_up(what: str) -> None:
    UP.mkdir(parents=True, exist_ok=True)
    (UP / what).touch()


def link(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink() or path.exists():
        path.unlink()
    path.symlink_to(SELF)


def arg_after(args: list[str], *flags: str) -> str | None:
    for i, a in enumerate(args):
        for flag in flags:
            if a == flag and i + 1 < len(args):
                return args[i + 1]
            if a.startswith(flag + "="):
                return a.split("=", 1)[1]
    return None


def stay_alive(argv0: str) -> None:
    """Become `sleep infinity` named argv0 (the pid and the command line's name stay)."""
    sys.stdout.flush()
    os.execv("/bin/sleep", [argv0, "infinity"])


def daemonize(argv0: str, pidfile: str | None, up: str, listen: int | None = None) -> None:
    """Fork a daemon like the real one does; the parent returns at once."""
    if os.fork():
        return
    os.setsid()
    if pidfile:
        Path(pidfile).parent.mkdir(parents=True, exist_ok=True)
        Path(pidfile).write_text(f"{os.getpid()}\n")
    mark_up(up)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    if listen is None:
        stay_alive(argv0)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", listen))
    sock.listen(16)
    while True:
        signal.pause()


def foreground_daemon(argv0: str, args: list[str], up: str) -> int:
    pidfile = arg_after(args, "--pidfile", "--pid-file")
    if pidfile:
        Path(pidfile).parent.mkdir(parents=True, exist_ok=True)
        Path(pidfile).write_text(f"{os.getpid()}\n")
    mark_up(up)
    stay_alive(argv0)
    return 0


# ---------------------------------------------------------------- installers
def apt_get(args: list[str]) -> int:
    words = [a for a in args if not a.startswith("-")]
    # skip the values of -o options
    skip = {args[i + 1] for i, a in enumerate(args) if a == "-o" and i + 1 < len(args)}
    words = [w for w in words if w not in skip]
    if not words:
        return 100
    if words[0] == "install":
        installed = STATE / "installed"
        with open(installed, "a") as f:
            for pkg in words[1:]:
                f.write(pkg + "\n")
                for cmd in PACKAGE_COMMANDS.get(pkg, []):
                    link(Path("/usr/local/bin") / cmd)
        return 0
    if words[0] == "source" and "kubernetes" in words:
        with tarfile.open("kubernetes_1.20.2.orig.tar.gz", "w:gz") as tar:
            tar.add(FIXTURES / "kubernetes", arcname="kubernetes-1.20.2")
        return 0
    return 0 if words[0] == "update" else 100


def dpkg_query(args: list[str]) -> int:
    pkgs = [a for a in args if not a.startswith("-")]
    installed = set((STATE / "installed").read_text().split()) if (STATE / "installed").exists() else set()
    if all(p in installed for p in pkgs):
        print("install ok installed", end="")
        return 0
    print(f"dpkg-query: no packages found matching {' '.join(pkgs)}", file=sys.stderr)
    return 1


def debootstrap(args: list[str]) -> int:
    positional = [a for a in args if not a.startswith("-")]
    target = Path(positional[1])
    (target / "etc").mkdir(parents=True, exist_ok=True)
    (target / "etc" / "debian_version").write_text("12 (stand-in)\n")
    return 0


def make(args: list[str]) -> int:
    recipe = Path(".standin-make")
    if recipe.is_file():
        return os.spawnv(os.P_WAIT, "/bin/bash", ["bash", str(recipe), *args])
    return 0


def gcc(args: list[str]) -> int:
    out = arg_after(args, "-o")
    if out:
        link(Path(out))
    return 0


def venv_create(target: Path) -> int:
    (target / "bin").mkdir(parents=True, exist_ok=True)
    (target / "pyvenv.cfg").write_text("home = /standin\n")
    for name in ("python", "python3", "pip"):
        link(target / "bin" / name)
    return 0


def python3(argv0: str, args: list[str]) -> int:
    venv = Path(argv0).parent.parent
    if (venv / "pyvenv.cfg").is_file():  # a venv made by the stand-in
        return venv_python(argv0, venv, args)
    if args[:2] == ["-m", "venv"]:
        return venv_create(Path(args[-1]))
    if args[:2] == ["-m", "pip"]:  # into this (system) Python: as pip does where it is allowed to
        if "install" in args:
            with open(STATE / "system-python-packages", "a") as f:
                f.write(" ".join(args[3:]) + "\n")
        return 0
    if args[:2] == ["-m", "nox"]:  # none here until a `python3 -m pip install nox`
        have = STATE / "system-python-packages"
        return 0 if have.exists() and "nox" in have.read_text() else 1
    os.execv(sys.executable, [sys.executable, *args])
    return 1


def venv_python(argv0: str, venv: Path, args: list[str]) -> int:
    installed = (venv / "installed").is_file()
    if args[:1] == ["-c"]:
        if installed and "print" in args[1]:
            print("0.0+standin")
        return 0 if installed else 1
    if args[:2] == ["-m", "nox"]:
        if args[2:3] == ["--version"]:
            return 0 if installed else 1
        return 0 if installed else 1
    if args[:1] == ["-"]:  # a script on stdin (moto-up.sh seeds its Batch queue)
        sys.stdin.read()
        print("seeded queue (stand-in)")
        return 0
    if not installed:
        return 1
    mark_up("moto" if "moto" in " ".join(args) else "python-server")
    stay_alive(argv0)
    return 0


def pip(argv0: str, args: list[str]) -> int:
    venv = Path(argv0).parent.parent
    if "install" in args:
        (venv / "installed").write_text(" ".join(args) + "\n")
        if any(a.startswith("ray") for a in args):
            link(venv / "bin" / "ray")
    return 0


# ---------------------------------------------------------------- clients
def curl(args: list[str]) -> int:
    url = next((a for a in args if a.startswith(("http://", "https://"))), "")
    if "-" in args or "@-" in args:
        sys.stdin.buffer.read()
    sock = arg_after(args, "--unix-socket")
    fail = 7  # could not connect

    def answer(up: bool, body: str = "", ok: bool = True) -> int:
        if not up:
            return fail
        if not ok:
            return 22
        if body:
            print(body)
        return 0

    if sock:
        path = url.split("docker", 1)[-1]
        images = STATE / "images"
        if path.startswith("/images/create"):
            with open(images, "a") as f:
                f.write("localhost/pause:3.2\n")
            return answer(is_up("docker"), "{}")
        if path.startswith("/images/"):
            name = path[len("/images/") : -len("/json")]
            have = images.exists() and name in images.read_text().split()
            return answer(is_up("docker"), "{}", ok=have)
        if path == "/info":
            return answer(is_up("docker"), '{"CgroupDriver": "cgroupfs"}')
        return answer(is_up("docker"), "OK")
    port = url.split("://", 1)[-1].split("/", 1)[0].rsplit(":", 1)[-1]
    path = "/" + url.split("://", 1)[-1].split("/", 1)[-1] if "/" in url.split("://", 1)[-1] else "/"
    if port == "23790":
        return answer(is_up("etcd"), '{"health":"true"}')
    if port == "16443":
        if path == "/readyz":
            return answer(is_up("kube-apiserver"), "ok")
        if path.startswith("/api/v1/nodes/"):
            ready = '{"status": {"conditions": [{"type": "Ready", "status": "True"}]}}'
            return answer(is_up("kube-apiserver"), ready, ok=is_up("kubelet"))
        if "serviceaccounts" in path:
            return answer(is_up("kube-apiserver"), "{}", ok=is_up("kube-controller-manager"))
        return answer(is_up("kube-apiserver"), "{}")
    if port == "5055":
        return answer(is_up("moto"), "{}")
    if port == "8265":
        return answer(is_up("ray"), '{"version": "standin"}')
    return fail


def docker(args: list[str]) -> int:
    images = STATE / "images"
    have = images.read_text().split() if images.exists() else []
    verb = args[0] if args else ""
    if verb == "info":
        print("20.10-standin storage=overlay2")
    elif verb == "image" and args[1:2] == ["inspect"]:
        return 0 if args[2] in have else 1
    elif verb == "import":
        if "-" in args:
            sys.stdin.buffer.read()
        with open(images, "a") as f:
            f.write(args[-1] + "\n")
    elif verb == "tag":
        with open(images, "a") as f:
            f.write(args[2] + "\n")
    elif verb == "images":
        print("\n".join(have))
    return 0


def slurm_client(name: str, args: list[str]) -> int:
    nodes = sorted(p.name[len("slurmd-") :] for p in UP.glob("slurmd-*")) if UP.exists() else []
    if name == "scontrol":
        if args[:1] == ["ping"]:
            if not is_up("slurmctld"):
                print("Slurmctld(primary) at localhost is DOWN")
                return 1
            print("Slurmctld(primary) at localhost is UP")
        return 0 if is_up("slurmctld") else 1
    if name == "sinfo":
        if not is_up("slurmctld"):
            return 1
        fmt = arg_after(args, "-o") or ""
        if fmt == "%N":
            print("\n".join(nodes))
        elif "%T" in fmt and "%N" in fmt and "-N" in args:
            print("\n".join(f"{n} idle" for n in nodes))
        else:
            print(f"debug* up {len(nodes)} idle node[1-{len(nodes)}]")
        return 0
    if name == "sacctmgr":
        if is_up("slurmdbd"):
            print("torchx")
            return 0
        return 1
    return 0 if is_up("slurmctld") else 1


def lsf_client(name: str, args: list[str]) -> int:
    if name == "lsid":
        if is_up("lim"):
            print("openlava project (stand-in)\nMy cluster name is openlava")
            return 0
        return 1
    if name == "bhosts":
        if is_up("sbatchd"):
            print("HOST_NAME STATUS JL/U MAX NJOBS RUN SSUSP USUSP RSV")
            print(f"{socket.gethostname().split('.')[0]} ok - 2 0 0 0 0 0")
            return 0
        return 1
    return 0


def main() -> int:
    argv0, args = sys.argv[0], sys.argv[1:]
    name = os.path.basename(argv0)
    record(name, args)
    if name.startswith("kube") and args == ["--version"]:
        print("Kubernetes v1.20.2-standin")
        return 0
    if name == "apt-get":
        return apt_get(args)
    if name == "dpkg-query":
        return dpkg_query(args)
    if name == "debootstrap":
        return debootstrap(args)
    if name == "make":
        return make(args)
    if name == "gcc":
        return gcc(args)
    if name in ("python", "python3"):
        return python3(argv0, args)
    if name == "pip":
        return pip(argv0, args)
    if name == "curl":
        return curl(args)
    if name == "docker":
        return docker(args)
    if name in ("dockerd", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet"):
        return foreground_daemon(argv0, args, "docker" if name == "dockerd" else name)
    if name == "mariadbd":
        return foreground_daemon(argv0, args, "mariadb")
    if name == "mariadb-install-db":
        Path("/var/lib/mysql/mysql").mkdir(parents=True, exist_ok=True)
        return 0
    if name == "mariadb-admin":
        return 0 if is_up("mariadb") else 1
    if name == "mungekey":
        Path("/etc/munge").mkdir(parents=True, exist_ok=True)
        Path("/etc/munge/munge.key").write_bytes(os.urandom(128))
        return 0
    if name == "munged":
        daemonize(argv0, "/run/munge/munged.pid", "munged")
        return 0
    if name == "munge":
        print("MUNGE:standin:")
        return 0 if is_up("munged") else 1
    if name == "unmunge":
        sys.stdin.read()
        return 0 if is_up("munged") else 1
    if name == "slurmdbd":
        daemonize(argv0, "/run/slurmdbd.pid", "slurmdbd", listen=6819)
        return 0
    if name == "slurmctld":
        daemonize(argv0, "/run/slurmctld.pid", "slurmctld")
        return 0
    if name == "slurmd":
        node = arg_after(args, "-N") or "node"
        daemonize(argv0, f"/run/slurmd-{node}.pid", f"slurmd-{node}")
        return 0
    if name in ("scontrol", "sinfo", "sacctmgr", "sacct", "squeue", "scancel"):
        return slurm_client(name, args)
    if name in ("lim", "res", "sbatchd"):
        daemonize(argv0, None, name)
        return 0
    if name in ("lsid", "bhosts", "bjobs", "bkill", "bsub"):
        return lsf_client(name, args)
    if name == "ray":
        if args[:1] == ["start"]:
            daemonize(argv0, None, "ray")
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
