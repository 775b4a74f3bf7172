#!/usr/bin/env bash
# slurm-down.sh - cancel jobs, then stop what slurm-up.sh started (by the pids in its pid
# files, newest daemon first).
#   --purge   also drop job state, spools, logs and the accounting DB (job ids restart at 1)
# Env: SLURM_DOWN_KEEP_JOBS=1 skips cancelling jobs.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/_lib.sh"
PURGE=0; [ "${1:-}" = --purge ] && PURGE=1
LOG=/var/log/slurm

stop_pidfile() {  # stop_pidfile <pidfile> <cmdline regex> <name>
    [ -e "$1" ] || return 0
    stop_pid "$(pid_in "$1")" "$2" "$3"; rm -f "$1"
}

if [ "${SLURM_DOWN_KEEP_JOBS:-0}" != 1 ] && command -v scontrol >/dev/null && scontrol ping >/dev/null 2>&1; then
    jobs=$(squeue -h -o %A 2>/dev/null | sort -u | tr '\n' ' ')
    if [ -n "${jobs// /}" ]; then
        log "cancelling jobs: $jobs"
        # shellcheck disable=SC2086
        scancel $jobs 2>/dev/null || true
        for _ in $(seq 1 75); do
            [ -z "$(squeue -h -t RUNNING,COMPLETING -o %A 2>/dev/null)" ] && break; sleep 0.2
        done
    fi
fi

for f in /run/slurmd-node*.pid; do stop_pidfile "$f" slurmd "slurmd $(basename "$f" .pid)"; done
stop_pidfile /run/slurmctld.pid slurmctld slurmctld
stop_pidfile /run/slurmdbd.pid slurmdbd slurmdbd
if [ $PURGE = 1 ] && running /run/mysqld/mysqld.pid; then
    log "dropping the accounting database"
    mariadb --socket=/run/mysqld/mysqld.sock -e "DROP DATABASE IF EXISTS slurm_acct_db" || true
fi
stop_pidfile /run/mysqld/mysqld.pid mariadbd mariadbd
stop_pidfile /run/munge/munged.pid munged munged

if [ $PURGE = 1 ]; then
    log "purging state and logs"
    rm -rf /var/lib/slurm/slurmctld/* /var/lib/slurm/slurmd/*
    rm -f "$LOG"/*.log
fi
log "stopped"
