#!/usr/bin/env bash
# ray-down.sh - stop the Ray head started by ray-up.sh (`ray stop` of its venv: this machine's
# Ray processes). Every job is gone with it. The venv is kept.
# Env: RAY_STATE_DIR=/tmp/torchx-ray, RAY_VENV=/var/cache/torchx-ray/venv, RAY_PYTHON=,
#      RAY_KEEP_STATE=1 keeps the state dir (logs).
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/_lib.sh"
STATE_DIR=${RAY_STATE_DIR:-/tmp/torchx-ray}
PY=${RAY_PYTHON:-${RAY_VENV:-/var/cache/torchx-ray/venv}/bin/python}
BIN=$(dirname "$PY")

if [ -x "$BIN/ray" ]; then
    PATH=$BIN:$PATH "$BIN/ray" stop --grace-period 10 >"$STATE_DIR.stop.log" 2>&1 || { cat "$STATE_DIR.stop.log" >&2; }
    rm -f "$STATE_DIR.stop.log"
fi
[ "${RAY_KEEP_STATE:-0}" = 1 ] || rm -rf "$STATE_DIR"
log "stopped"
