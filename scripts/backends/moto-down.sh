#!/usr/bin/env bash
# moto-down.sh - stop the moto server started by moto-up.sh (its recorded pid only).
# moto keeps everything in memory: all AWS state is gone. The venv is kept.
# Env: MOTO_STATE_DIR=/tmp/torchx-moto, MOTO_KEEP_STATE=1 keeps the log.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/_lib.sh"
STATE_DIR=${MOTO_STATE_DIR:-/tmp/torchx-moto}

if [ -f "$STATE_DIR/moto.pid" ]; then
    stop_pid "$(pid_in "$STATE_DIR/moto.pid")" 'moto' moto 10
    rm -f "$STATE_DIR/moto.pid"
fi
[ "${MOTO_KEEP_STATE:-0}" = 1 ] || rm -rf "$STATE_DIR"
log "stopped"
