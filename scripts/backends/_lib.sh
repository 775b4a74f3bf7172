# shellcheck shell=bash
# Helpers shared by the *-up.sh / *-down.sh scripts (sourced, not run).

# log lines are tagged with $LOG_TAG, else the running script's name. Read when a line is logged
# (not when this file is sourced): `LOG_TAG=x . _lib.sh` would set it only while the file is read.
log() {
    local tag=${LOG_TAG:-${0##*/}}
    printf '[%s %s] %s\n' "${tag%.sh}" "$(date +%T)" "$*" >&2
}
die() { log "ERROR: $*"; exit 1; }

# seconds since a value of $EPOCHREALTIME, e.g.: t=$EPOCHREALTIME; ...; log "took $(since "$t")s"
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

# a pid is alive if it exists and is not a zombie (PID 1 here does not reap double-forked daemons)
alive() {
    local pid=${1:-} st
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    st=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
    st=${st##*) }; st=${st%% *}
    [ "$st" != Z ] && [ "$st" != X ]
}
pid_in() { [ -s "$1" ] && tr -dc '0-9' < "$1" 2>/dev/null || true; }   # pid from a pid file
running() { alive "$(pid_in "$1")"; }                                  # running <pidfile>
cmdline_has() { tr '\0' ' ' < "/proc/$1/cmdline" 2>/dev/null | grep -qE -- "$2"; }

# stop_pid <pid> <cmdline-regex> <name> [grace-seconds]: SIGTERM, wait, then SIGKILL.
# Only signals the pid if its command line still matches (pids get reused).
stop_pid() {
    local pid=$1 re=$2 name=$3 grace=${4:-15} i
    alive "$pid" || return 0
    if ! cmdline_has "$pid" "$re"; then log "pid $pid is not $name any more: leaving it"; return 0; fi
    log "stopping $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < grace * 5; i++)); do alive "$pid" || return 0; sleep 0.2; done
    log "$name (pid $pid) still alive after ${grace}s: SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    sleep 0.3
}

# wait_for <seconds> <what> <command...>: poll every 0.2 s; returns 1 (and logs) on timeout,
# or at once if WAIT_PID is set (WAIT_PID=123 wait_for ...) and that process has exited
wait_for() {
    local limit=$1 what=$2 end; shift 2
    end=$(($(date +%s) + limit))
    until "$@" >/dev/null 2>&1; do
        if [ -n "${WAIT_PID:-}" ] && ! alive "$WAIT_PID"; then log "$what: process $WAIT_PID exited"; return 1; fi
        if [ "$(date +%s)" -ge "$end" ]; then log "TIMEOUT after ${limit}s waiting for $what"; return 1; fi
        sleep 0.2
    done
}

# tail_log <file> [lines]: show the end of a daemon's log on stderr (used before die)
tail_log() {
    [ -s "$1" ] || { log "(no log at $1)"; return 0; }
    log "---- last ${2:-30} lines of $1"
    tail -n "${2:-30}" "$1" | sed 's/^/    /' >&2
}

# apt_install <pkg...>: install what is missing. /usr/sbin/policy-rc.d (exit 101) keeps the
# packages from starting their own daemons; one is created for the install if absent.
apt_install() {
    local missing=() p t created=0
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    t=$EPOCHREALTIME
    log "apt-get install ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; created=1
    fi
    apt-get update -qq >/dev/null 2>&1 || log "apt-get update failed (trying the install anyway)"
    local rc=0
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/tmp/torchx-apt-install.log 2>&1 || rc=$?
    [ $created = 1 ] && rm -f /usr/sbin/policy-rc.d
    if [ $rc != 0 ]; then tail_log /tmp/torchx-apt-install.log 20; die "apt-get install ${missing[*]} failed"; fi
    log "install took $(since "$t")s"
}

# ensure_venv <venv> <python check> <pip args...>: (re)creates <venv> with the pip requirements
# unless its python already passes <python check> (a line of Python that imports what is needed);
# the venv is made by $VENV_PYTHON (default python3)
ensure_venv() {
    local venv=$1 check=$2 t; shift 2
    "$venv/bin/python" -c "$check" 2>/dev/null && return 0
    t=$EPOCHREALTIME
    log "creating venv $venv with $*"
    rm -rf "$venv"; mkdir -p "$(dirname "$venv")"
    "${VENV_PYTHON:-python3}" -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "$@" >"$venv/pip-install.log" 2>&1 \
        || { tail_log "$venv/pip-install.log" 20; die "pip install failed"; }
    log "venv ready in $(since "$t")s"
}

docker_ping() { curl -sf --max-time 5 --unix-socket /var/run/docker.sock http://docker/_ping >/dev/null 2>&1; }

# unmount_under <dir>: unmount every mount point at or below <dir>, deepest first (a kubelet that
# died without k8s-down leaves its bind mounts behind, and `rm -rf` then fails with "busy")
unmount_under() {
    { awk -v d="$1" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/mounts || true; } | sort -r \
        | while read -r m; do umount "$m" 2>/dev/null || umount -l "$m" || log "could not unmount $m"; done
}
