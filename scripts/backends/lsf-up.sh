#!/usr/bin/env bash
# lsf-up.sh -- build (if needed), configure and start a one-host OpenLava
# (LSF-compatible) cluster on this machine. Idempotent.
#
# Usage: lsf-up.sh [SOURCE_TARBALL]
#   SOURCE_TARBALL  git-archive tarball of the OpenLava source (GPL-2, commit 69891d8 of its
#                   last public tree; default: $OPENLAVA_TARBALL or openlava-src.tar.gz beside this script)
#
# Environment knobs (all optional):
#   OPENLAVA_WORKDIR   top dir for build/install/state   (default /tmp/torchx-lsf)
#   OPENLAVA_PREFIX    install prefix                     (default $OPENLAVA_WORKDIR/install)
#   OPENLAVA_PORT_BASE first of 4 consecutive TCP/UDP ports (default 16322: lim,res,mbd,sbd)
#   OPENLAVA_SLOTS     job slots on the host (MXJ)         (default: number of CPUs)
#   OPENLAVA_STDOUT_DIRECT  y|n: write -o/-e files live while the job runs (default y)
#   OPENLAVA_FRESH=1   wipe batch state (job history, job ids restart at 1) before start
#   OPENLAVA_APT=0     do not apt-get install missing build dependencies
#
# Output: $OPENLAVA_WORKDIR/env.sh  (source it to get bsub/bjobs/... on PATH)
#         $OPENLAVA_WORKDIR/daemons.pid (pids recorded for lsf-down.sh)
set -euo pipefail

TARBALL=${1:-${OPENLAVA_TARBALL:-$(cd "$(dirname "$0")" && pwd)/openlava-src.tar.gz}}
WORKDIR=${OPENLAVA_WORKDIR:-/tmp/torchx-lsf}
PREFIX=${OPENLAVA_PREFIX:-$WORKDIR/install}
PORT_BASE=${OPENLAVA_PORT_BASE:-16322}
SLOTS=${OPENLAVA_SLOTS:-!}
STDOUT_DIRECT=${OPENLAVA_STDOUT_DIRECT:-y}
CLUSTER=openlava
BUILD=$WORKDIR/build
ENVFILE=$WORKDIR/env.sh
PIDFILE=$WORKDIR/daemons.pid
LOG=$WORKDIR/lsf-up.log

LOG_TAG=lsf-up
. "$(cd "$(dirname "$0")" && pwd)/_lib.sh"

[ "$(id -u)" = 0 ] || die "must run as root (daemons run in multi-user mode)"
mkdir -p "$WORKDIR"
T0=$(date +%s)

# ---------------------------------------------------------------- build
need_build=1
if [ -x "$PREFIX/sbin/lim" ] && [ -x "$PREFIX/bin/bsub" ] && [ -f "$PREFIX/.built" ]; then
    need_build=0
fi

if [ $need_build = 1 ]; then
    [ -f "$TARBALL" ] || die "source tarball $TARBALL not found"
    # build dependencies (Debian package names)
    missing=()
    for c in autoconf:autoconf automake:automake libtoolize:libtool bison:bison \
             flex:flex make:make gcc:gcc; do
        command -v "${c%%:*}" >/dev/null 2>&1 || missing+=("${c##*:}")
    done
    [ -f /usr/include/tcl/tcl.h ] || [ -f /usr/include/tcl.h ] || missing+=(tcl-dev)
    [ -f /usr/include/ncurses.h ] || missing+=(libncurses-dev)
    [ -f /usr/include/tirpc/rpc/types.h ] || missing+=(libtirpc-dev)
    [ -f /usr/include/stdio.h ] || missing+=(libc6-dev)   # only recommended by gcc (apt_install skips recommends)
    if [ ${#missing[@]} -gt 0 ]; then
        if [ "${OPENLAVA_APT:-1}" = 1 ] && command -v apt-get >/dev/null; then
            apt_install "${missing[@]}"
        else
            die "missing build deps: ${missing[*]}"
        fi
    fi

    log "building OpenLava from $TARBALL into $PREFIX (log: $LOG)"
    rm -rf "$BUILD"; mkdir -p "$BUILD/x"
    tar -xzf "$TARBALL" -C "$BUILD/x"
    found=("$BUILD"/x/configure.ac "$BUILD"/x/*/configure.ac)   # at the top or one directory down
    found=("${found[@]/%\/configure.ac}")
    SRC=${found[0]}
    [ -f "$SRC/configure.ac" ] || SRC=${found[1]}
    [ -f "$SRC/configure.ac" ] || die "no configure.ac in $TARBALL"
    (
        cd "$SRC"
        ./bootstrap.sh
        # Fixes for Debian 12 / GCC 12 / glibc 2.36:
        #  * Sun RPC (xdr) headers+lib moved out of glibc -> libtirpc
        #  * GCC >= 10 defaults to -fno-common; lim.h etc. define globals in headers
        ./configure --prefix="$PREFIX" \
            CPPFLAGS="-I/usr/include/tirpc" CFLAGS="-fcommon" LIBS="-ltirpc"
        make -j"$(nproc)"
        make install
    ) >>"$LOG" 2>&1 || die "build failed (see $LOG)"
    sha256sum "$TARBALL" | cut -d' ' -f1 > "$PREFIX/.built"
    log "build+install done in $(( $(date +%s) - T0 ))s"
else
    log "already built in $PREFIX"
fi

# ---------------------------------------------------------------- config
HOST=$(hostname | cut -d. -f1)     # openlava strips domains from host names
ETC=$PREFIX/etc
mkdir -p "$ETC" "$PREFIX/log" "$PREFIX/work/logdir" "$PREFIX/work/spool"
chmod 1777 "$PREFIX/work/spool"

cat > "$ETC/lsf.conf.new" <<EOF
LSF_SERVERDIR=$PREFIX/sbin
LSF_BINDIR=$PREFIX/bin
LSF_LIBDIR=$PREFIX/lib
LSF_ENVDIR=$ETC
LSF_CONFDIR=$ETC
LSB_CONFDIR=$ETC
LSB_SHAREDIR=$PREFIX/work
LSF_LOGDIR=$PREFIX/log
LSF_LOG_MASK=LOG_WARNING
LSF_LIM_PORT=$PORT_BASE
LSF_RES_PORT=$((PORT_BASE+1))
LSB_MBD_PORT=$((PORT_BASE+2))
LSB_SBD_PORT=$((PORT_BASE+3))
LSF_AUTH=eauth
LSB_MAILTO=!U
# allow root to submit jobs (default LSF refuses root jobs)
LSF_ROOT_REX=all
# write -o/-e files directly (live) instead of spooling + copying at job end
LSB_STDOUT_DIRECT=$STDOUT_DIRECT
EOF

cat > "$ETC/lsf.shared.new" <<EOF
Begin Cluster
ClusterName
$CLUSTER
End Cluster

Begin HostType
TYPENAME
linux
End HostType

Begin HostModel
MODELNAME  CPUFACTOR   ARCHITECTURE
generic      100        (x86_64)
End HostModel

Begin Resource
RESOURCENAME  TYPE    INTERVAL INCREASING  DESCRIPTION
   fs         Boolean ()       ()          (File server)
   cs         Boolean ()       ()          (Compute server)
End Resource
EOF

cat > "$ETC/lsf.cluster.$CLUSTER.new" <<EOF
Begin   ClusterAdmins
Administrators = root
End    ClusterAdmins

Begin   Host
HOSTNAME          model          type  server  r1m  RESOURCES
$HOST             !              !     1       -    (cs)
End     Host

Begin ResourceMap
RESOURCENAME  LOCATION
End ResourceMap
EOF

# Private openlava hosts file ($LSF_CONFDIR/hosts): makes the cluster work
# even if `hostname` does not resolve via /etc/hosts or DNS; /etc/hosts untouched.
cat > "$ETC/hosts.new" <<EOF
127.0.0.1 $HOST
EOF

cat > "$ETC/lsb.hosts.new" <<EOF
Begin Host
HOST_NAME     MXJ JL/U   r1m    pg    ls     tmp  DISPATCH_WINDOW
default       $SLOTS   ()     ()    ()    ()     ()     ()
End Host
EOF

cat > "$ETC/lsb.params.new" <<EOF
Begin Parameters
DEFAULT_QUEUE  = normal
MBD_SLEEP_TIME = 2
SBD_SLEEP_TIME = 2
JOB_ACCEPT_INTERVAL = 0
JOB_SPOOL_DIR = $PREFIX/work/spool
End Parameters
EOF

cat > "$ETC/lsb.queues.new" <<EOF
Begin Queue
QUEUE_NAME   = normal
PRIORITY     = 30
DESCRIPTION  = default queue
End Queue

Begin Queue
QUEUE_NAME   = short
PRIORITY     = 40
DESCRIPTION  = second queue (for -q tests)
End Queue
EOF

cat > "$ETC/lsb.users.new" <<EOF
Begin UserGroup
GROUP_NAME       GROUP_MEMBER         USER_SHARES
End UserGroup

Begin User
USER_NAME	MAX_JOBS	JL/P
End User
EOF
: > "$ETC/lsb.resources.new"

config_changed=0
for f in lsf.conf lsf.shared lsf.cluster.$CLUSTER hosts lsb.hosts lsb.params \
         lsb.queues lsb.users lsb.resources; do
    if ! cmp -s "$ETC/$f.new" "$ETC/$f" 2>/dev/null; then
        config_changed=1; mv "$ETC/$f.new" "$ETC/$f"
    else
        rm -f "$ETC/$f.new"
    fi
done

cat > "$ENVFILE" <<EOF
# source me: OpenLava (LSF-compatible) one-host cluster on $HOST
export LSF_ENVDIR=$ETC
export LSF_SERVERDIR=$PREFIX/sbin
export LSF_BINDIR=$PREFIX/bin
export LSF_LIBDIR=$PREFIX/lib
export PATH=$PREFIX/bin:\$PATH
export MANPATH=$PREFIX/share/man:\${MANPATH:-}
EOF
# the same for services.sh's env file (read without a shell there: absolute values only)
cat > "$WORKDIR/services.env" <<EOF
export LSF_ENVDIR=$ETC
export TORCHX_TEST_LSF_BINDIR=$PREFIX/bin
EOF
# shellcheck disable=SC1090
. "$ENVFILE"

# ---------------------------------------------------------------- daemons
# list "pid name" of processes whose executable is one of our daemons
our_daemons() {
    local p e
    for p in /proc/[0-9]*; do
        e=$(readlink "$p/exe" 2>/dev/null) || continue
        case "$e" in
            "$PREFIX"/sbin/lim|"$PREFIX"/sbin/pim|"$PREFIX"/sbin/res|\
            "$PREFIX"/sbin/sbatchd|"$PREFIX"/sbin/mbatchd)
                echo "${p#/proc/} ${e##*/}";;
        esac
    done
}

# the recorded daemons when all are still ours (no /proc scan: keeps an `up` of a running cluster fast)
recorded_daemons() {
    local pid name
    [ -s "$PIDFILE" ] || return 0
    while read -r pid name; do
        if [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$PREFIX/sbin/$name" ]; then echo "$pid $name"; fi
    done < "$PIDFILE"
}
daemons=$(recorded_daemons)
[ "$(echo "$daemons" | awk '{print $2}' | sort -u | tr '\n' ' ')" = "lim mbatchd pim res sbatchd " ] || daemons=$(our_daemons)
running=$(echo "$daemons" | awk 'NF {print $2}' | sort -u | tr '\n' ' ')
if [ "$running" = "lim mbatchd pim res sbatchd " ] && [ $config_changed = 0 ] \
   && [ "${OPENLAVA_FRESH:-0}" != 1 ] && timeout 10 lsid >/dev/null 2>&1; then
    log "daemons already running"
    restarted=0
else
    restarted=1
    if [ -n "$running" ]; then
        log "restarting (config changed or partial daemon set: $running)"
        "$(dirname "$0")/lsf-down.sh" >/dev/null 2>&1 || true
        if [ -n "$(our_daemons)" ]; then die "could not stop old daemons: $(our_daemons | tr '\n' ' ')"; fi
    fi
    if [ "${OPENLAVA_FRESH:-0}" = 1 ]; then
        log "wiping batch state"
        rm -rf "$PREFIX/work/logdir"/* "$PREFIX/work/logdir"/.[!.]* "$PREFIX/work/logdir/#lsb.event.lock"; rm -f "$PREFIX/work/lim.events"
    fi
    for port in $PORT_BASE $((PORT_BASE+1)) $((PORT_BASE+2)) $((PORT_BASE+3)); do
        if command -v ss >/dev/null && ss -Hltn "sport = :$port" | grep -q .; then
            die "TCP port $port already in use (set OPENLAVA_PORT_BASE)"
        fi
    done
    log "starting lim"
    "$PREFIX/sbin/lim"
    for _ in $(seq 1 60); do timeout 10 lsid >/dev/null 2>&1 && break; sleep 1; done
    timeout 10 lsid >/dev/null 2>&1 || die "lim did not come up (see $PREFIX/log/lim.log.$HOST)"
    log "starting res, sbatchd (sbatchd starts mbatchd)"
    "$PREFIX/sbin/res"
    "$PREFIX/sbin/sbatchd"
fi

# wait until the batch system reports the host ok
ok=0
for _ in $(seq 1 120); do
    if timeout 10 bhosts 2>/dev/null | awk -v h="$HOST" '$1==h && $2=="ok"{f=1} END{exit !f}'; then
        ok=1; break
    fi
    sleep 1
done
[ $ok = 1 ] || die "bhosts never showed $HOST ok (see $PREFIX/log/*.log.$HOST)"

if [ "$restarted" = 1 ] || [ "$daemons" != "$(cat "$PIDFILE" 2>/dev/null)" ]; then our_daemons > "$PIDFILE"; fi
log "cluster up in $(( $(date +%s) - T0 ))s; daemons: $(tr '\n' ' ' < "$PIDFILE")"
log "env: . $ENVFILE"
timeout 10 lsid >&2 || true
timeout 10 bhosts >&2 || true
echo "$ENVFILE"
