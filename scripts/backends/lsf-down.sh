#!/usr/bin/env bash
# lsf-down.sh -- stop the one-host OpenLava cluster started by lsf-up.sh.
# Only touches processes recorded in $OPENLAVA_WORKDIR/daemons.pid, plus any
# process whose executable is one of the daemons under OUR prefix
# ($PREFIX/sbin/{lim,pim,res,sbatchd,mbatchd}; sbatchd/mbatchd get new pids
# after `badmin hrestart` / `badmin reconfig`). Idempotent.
#
# Env: OPENLAVA_WORKDIR, OPENLAVA_PREFIX (same defaults as lsf-up.sh)
#      OPENLAVA_KEEP_JOBS=1  do not bkill unfinished jobs first
set -uo pipefail

WORKDIR=${OPENLAVA_WORKDIR:-/tmp/torchx-lsf}
PREFIX=${OPENLAVA_PREFIX:-$WORKDIR/install}
PIDFILE=$WORKDIR/daemons.pid
LOG_TAG=lsf-down
. "$(cd "$(dirname "$0")" && pwd)/_lib.sh"

is_ours() {   # pid -> true if its executable is one of our daemons
    local e
    e=$(readlink "/proc/$1/exe" 2>/dev/null) || return 1
    case "$e" in
        "$PREFIX"/sbin/lim|"$PREFIX"/sbin/pim|"$PREFIX"/sbin/res|\
        "$PREFIX"/sbin/sbatchd|"$PREFIX"/sbin/mbatchd) return 0;;
    esac
    return 1
}

pids=()
if [ -f "$PIDFILE" ]; then
    while read -r pid _; do [ -n "$pid" ] && is_ours "$pid" && pids+=("$pid"); done < "$PIDFILE"
fi
for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    is_ours "$pid" || continue
    case " ${pids[*]:-} " in *" $pid "*) ;; *) pids+=("$pid");; esac
done

if [ ${#pids[@]} -eq 0 ]; then
    log "no OpenLava daemons from $PREFIX running"
    rm -f "$PIDFILE"
    exit 0
fi

# kill unfinished jobs first so no job processes are orphaned
# (client commands hang while lim/mbatchd are down, hence the timeouts)
running_names=$(for pid in "${pids[@]}"; do readlink "/proc/$pid/exe"; done | sed 's,.*/,,' | sort -u | tr '\n' ' ')
if [ "${OPENLAVA_KEEP_JOBS:-0}" != 1 ] && [ -f "$WORKDIR/env.sh" ] \
   && [[ " $running_names " == *" lim "* ]] && [[ " $running_names " == *" mbatchd "* ]]; then
    (
        # shellcheck source=/dev/null
        . "$WORKDIR/env.sh"
        jobs=$(timeout 10 bjobs -u all -noheader 2>/dev/null | grep -c '^[0-9]' || true)
        if [ "${jobs:-0}" -gt 0 ]; then
            log "killing $jobs unfinished job(s)"
            timeout 10 bkill -u all 0 >/dev/null 2>&1 || true
            for _ in $(seq 1 30); do
                jobs=$(timeout 10 bjobs -u all -noheader 2>/dev/null | grep -c '^[0-9]' || true)
                [ "${jobs:-0}" -eq 0 ] && break
                sleep 1
            done
        fi
    ) || true
fi

# stop daemons; re-scan a few times because sbatchd forks short-lived
# children (job starters / finishers) that also run $PREFIX/sbin/sbatchd
for _ in 1 2 3 4 5; do
    [ ${#pids[@]} -eq 0 ] && break
    log "stopping pids: ${pids[*]}"
    kill -TERM "${pids[@]}" 2>/dev/null
    for _ in $(seq 1 20); do
        alive=()
        for pid in "${pids[@]}"; do is_ours "$pid" && alive+=("$pid"); done
        [ ${#alive[@]} -eq 0 ] && break
        sleep 0.5
    done
    if [ ${#alive[@]} -gt 0 ]; then
        log "SIGKILL to: ${alive[*]}"
        kill -KILL "${alive[@]}" 2>/dev/null
        sleep 1
    fi
    pids=()
    for p in /proc/[0-9]*; do is_ours "${p#/proc/}" && pids+=("${p#/proc/}"); done
done
rm -f "$PIDFILE"
if [ ${#pids[@]} -gt 0 ]; then log "WARNING: still running: ${pids[*]}"; exit 1; fi
log "stopped"
