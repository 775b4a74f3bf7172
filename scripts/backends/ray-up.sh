#!/usr/bin/env bash
# ray-up.sh - a one-node Ray cluster (`ray start --head`) on 127.0.0.1 with the dashboard's Jobs
# API on http://127.0.0.1:$RAY_DASHBOARD_PORT, and $RAY_STATE_DIR/env.sh (TORCHX_TEST_RAY=1,
# TORCHX_TEST_RAY_ADDRESS, TORCHX_TEST_RAY_PYTHON). Idempotent: when the Jobs API already answers
# it only rewrites env.sh.
#
# Jobs run in the cluster's Python (the venv below): `python` on the raylet's PATH is the venv's,
# so job entrypoints and replicas find Ray there. The venv has no torch: the live DDP test runs
# the test venv's torchrun (same machine), as the Slurm test does.
#
# Knobs (defaults):
#   RAY_VENV=/var/cache/torchx-ray/venv   created with RAY_SPEC if missing
#   RAY_SPEC='ray[default]>=2.40,<3'      RAY_PYTHON= (an interpreter that has ray[default] instead)
#   RAY_DASHBOARD_PORT=8265  RAY_GCS_PORT=6389  RAY_STATE_DIR=/tmp/torchx-ray (temp dir, env.sh, log)
#   RAY_NUM_CPUS=4 (logical CPUs: the 2-core box runs 2-replica jobs next to each other)
#   RAY_MEMORY_MB=4096 (schedulable memory)  RAY_OBJECT_STORE_MB=100
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/_lib.sh"

STATE_DIR=${RAY_STATE_DIR:-/tmp/torchx-ray}
VENV=${RAY_VENV:-/var/cache/torchx-ray/venv}
SPEC=${RAY_SPEC:-'ray[default]>=2.40,<3'}
DPORT=${RAY_DASHBOARD_PORT:-8265}
GPORT=${RAY_GCS_PORT:-6389}
EP=http://127.0.0.1:$DPORT
T0=$EPOCHREALTIME

up() { curl -sf --max-time 5 "$EP/api/version" >/dev/null 2>&1; }
write_env() {
    cat > "$STATE_DIR/env.sh.tmp" <<ENV
export TORCHX_TEST_RAY=1
export TORCHX_TEST_RAY_ADDRESS=$EP
export TORCHX_TEST_RAY_PYTHON=$1
ENV
    mv "$STATE_DIR/env.sh.tmp" "$STATE_DIR/env.sh"
    log "ready in $(since "$T0")s; use: source $STATE_DIR/env.sh"
}
# fast path: ours is up (its env.sh exists and the Jobs API answers)
if [ -s "$STATE_DIR/env.sh" ] && up; then
    log "already running ($EP answers)"
    # shellcheck source=/dev/null
    write_env "$(. "$STATE_DIR/env.sh"; echo "$TORCHX_TEST_RAY_PYTHON")"
    exit 0
fi

apt_install curl
if [ -n "${RAY_PYTHON:-}" ]; then
    PY=$RAY_PYTHON
else
    PY=$VENV/bin/python
    ensure_venv "$VENV" 'import ray.dashboard, ray.job_submission, aiohttp' "$SPEC"
fi
BIN=$(dirname "$PY")
[ -x "$BIN/ray" ] || die "$BIN/ray not found (RAY_PYTHON must be a Python with ray[default] installed)"

if up; then
    log "already running ($EP answers)"
else
    # a head of ours that is half up is stopped first
    if [ -d "$STATE_DIR/tmp" ]; then PATH=$BIN:$PATH "$BIN/ray" stop --force >/dev/null 2>&1 || true; fi
    rm -rf "$STATE_DIR"; mkdir -p "$STATE_DIR"
    t=$EPOCHREALTIME
    log "starting ray $("$PY" -c 'import ray; print(ray.__version__)') head on 127.0.0.1:$GPORT, Jobs API on $EP"
    # the raylet (and so every job and replica) gets the venv first on PATH
    env PATH="$BIN:$PATH" RAY_USAGE_STATS_ENABLED=0 RAY_DEDUP_LOGS=0 \
        "$BIN/ray" start --head --node-ip-address=127.0.0.1 --port="$GPORT" \
        --dashboard-host=127.0.0.1 --dashboard-port="$DPORT" --include-dashboard=true \
        --num-cpus="${RAY_NUM_CPUS:-4}" --num-gpus=0 --memory=$(( ${RAY_MEMORY_MB:-4096} * 1024 * 1024 )) \
        --object-store-memory=$(( ${RAY_OBJECT_STORE_MB:-100} * 1024 * 1024 )) \
        --temp-dir="$STATE_DIR/tmp" --disable-usage-stats >"$STATE_DIR/ray-start.log" 2>&1 </dev/null \
        || { tail_log "$STATE_DIR/ray-start.log"; die "ray start failed"; }
    wait_for 120 "the Jobs API on $EP" up || { tail_log "$STATE_DIR/ray-start.log"; die "the dashboard did not come up"; }
    log "head started in $(since "$t")s"
fi

mkdir -p "$STATE_DIR"
write_env "$PY"
