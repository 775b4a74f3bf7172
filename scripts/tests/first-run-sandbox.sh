#!/usr/bin/env bash
# first-run-sandbox.sh OUT_DIR COMMAND... - runs each COMMAND (a bash command line, from the repo
# root) in turn in one throwaway copy of this machine that looks like a fresh one to the set-up
# scripts, with the installers, daemons and clients replaced by stand-ins (standin.py) that record
# their calls. Used by test_first_run.py; needs root (namespaces, overlayfs, chroot).
#
# The copy: an overlay of / (writes go to a tmpfs, the machine is untouched), in its own mount,
# network and pid namespaces (the running backends cannot be seen, reached or signalled), with
# the repository bound read-only at its own path, and hidden (deleted in the overlay): the
# backends' state and cache dirs, their pid files (/run is empty), the Slurm/munge/mariadb
# config and data, the nox venv, the build tools and headers lsf-up.sh looks for. dpkg-query
# answers "not installed" until the apt-get stand-in installed the package.
#
# OUT_DIR gets, per command i (1, 2 ...): run<i>.out (stdout+stderr), run<i>.rc, calls<i>.jsonl.
set -euo pipefail
if [ -z "${STANDIN_WORK:-}" ]; then   # outside the namespaces: make the work dir, enter them
    work=$(mktemp -d /tmp/torchx-first-run.XXXXXX)
    rc=0
    unshare --mount --net --pid --fork --kill-child env STANDIN_WORK="$work" bash "$0" "$@" || rc=$?
    rmdir "$work"   # its tmpfs was in the namespace
    exit $rc
fi
[ $# -ge 2 ] || { echo "usage: $0 OUT_DIR COMMAND..." >&2; exit 2; }
OUT=$(cd "$1" && pwd); shift
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STANDIN=$REPO/scripts/tests/standin.py

HIDE=(
    /tmp/torchx-services /tmp/torchx-lsf /tmp/torchx-k8s /tmp/torchx-moto /tmp/torchx-ray
    /var/cache/torchx-k8s /var/cache/torchx-moto /var/cache/torchx-ray /var/cache/torchx-test-images
    /etc/slurm /var/lib/slurm /var/log/slurm /etc/munge/munge.key /var/lib/mysql
    /etc/mysql/mariadb.conf.d/99-torchx-slurm.cnf /root/.cache/torchx
    /usr/bin/autoconf /usr/bin/automake /usr/bin/libtoolize /usr/bin/bison /usr/bin/flex /usr/bin/make /usr/bin/gcc
    /usr/include/tcl/tcl.h /usr/include/tcl.h /usr/include/ncurses.h /usr/include/tirpc/rpc/types.h /usr/include/stdio.h
)
# called by absolute path by the scripts: replaced in the copy
ABSOLUTE=(/usr/sbin/dockerd /usr/bin/docker /usr/sbin/munged /usr/sbin/mungekey /usr/sbin/mariadbd
          /usr/sbin/slurmdbd /usr/sbin/slurmctld /usr/sbin/slurmd)
# found on PATH
ON_PATH=(apt-get dpkg-query debootstrap docker curl munge unmunge mariadb-install-db mariadb-admin mariadb
         scontrol sinfo sacctmgr sacct squeue scancel etcd python3)

W=$STANDIN_WORK
mount -t tmpfs tmpfs "$W"
mkdir "$W/upper" "$W/work" "$W/root"
for p in "${HIDE[@]}"; do   # overlayfs whiteouts: deleted in the copy
    mkdir -p "$W/upper$(dirname "$p")"
    mknod "$W/upper$p" c 0 0
done
for p in "${ABSOLUTE[@]}"; do
    mkdir -p "$W/upper$(dirname "$p")"
    ln -s "$STANDIN" "$W/upper$p"
done
mkdir -p "$W/upper/standin/bin" "$W/upper/standin/state/up"
for n in "${ON_PATH[@]}"; do ln -s "$STANDIN" "$W/upper/standin/bin/$n"; done
chmod 1777 "$W/upper/standin/state" "$W/upper/standin/state/up"

R=$W/root
mount -t overlay overlay -o "lowerdir=/,upperdir=$W/upper,workdir=$W/work" "$R"
mount -t proc proc "$R/proc"
mount --rbind /dev "$R/dev"
mount -t tmpfs tmpfs "$R/run"
mount --bind "$REPO" "$R$REPO"
mount -o remount,bind,ro "$R$REPO"
tar -czf "$R/standin/openlava-src.tar.gz" -C "$REPO/scripts/tests/fixtures" openlava

i=0
for cmd in "$@"; do
    i=$((i + 1))
    : > "$R/standin/state/calls.jsonl"; chmod 666 "$R/standin/state/calls.jsonl"
    rc=0
    chroot "$R" /usr/bin/env -i HOME=/root LANG=C.UTF-8 CI=true \
        PATH=/standin/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        STANDIN_STATE=/standin/state STANDIN_EXE="$STANDIN" OPENLAVA_TARBALL=/standin/openlava-src.tar.gz \
        /bin/bash -c "cd '$REPO' && ip link set lo up && $cmd" >"$OUT/run$i.out" 2>&1 </dev/null || rc=$?
    echo "$rc" > "$OUT/run$i.rc"
    cp "$R/standin/state/calls.jsonl" "$OUT/calls$i.jsonl"
done
