#!/usr/bin/env bash
# services.sh - start/stop the real test backends and write one env file for the tests.
#
#   services.sh up   <docker|slurm|lsf|k8s|moto|ray|all>...   start (idempotent), then write the env file
#   services.sh down <docker|slurm|lsf|k8s|moto|ray|all>...   stop, then rewrite the env file
#   services.sh env                                    rewrite the env file from what is up; print its path
#   services.sh status                                 one line per backend
#   services.sh smoke <names|all>                      quick end-to-end check (smoke.sh)
#
# `up` starts in the order docker, slurm, lsf, k8s, moto, ray whatever the order given, so that k8s can use
# the real kubelet on Docker and moto can run Batch jobs as real containers. It exits non-zero
# if any requested backend failed (each failure is reported with the end of its log); the others
# are still started. Env file: $TORCHX_SERVICES_DIR/env.sh (default /tmp/torchx-services/env.sh),
# made from what is actually up, so it is also right after a partial up or a down.
#
# Knobs: TORCHX_K8S_KUBELET=docker|fake|none (default: docker when dockerd is up, else fake),
#        TORCHX_MOTO_DOCKER=1|0 (default: 1 when dockerd is up), TORCHX_SERVICES_DIR,
#        plus each script's own knobs (see the header of *-up.sh).
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LOG_TAG=services
. "$HERE/_lib.sh"
# The daemons inherit the working directory: start them from /, so that removing the checkout
# this ran from cannot break them (Ray runs its jobs there: `getcwd() failed` in a deleted one).
cd / || die "cannot cd /"

DIR=${TORCHX_SERVICES_DIR:-/tmp/torchx-services}
ENV_FILE=$DIR/env.sh
K8S_STATE=${K8S_STATE_DIR:-/tmp/torchx-k8s}
MOTO_STATE=${MOTO_STATE_DIR:-/tmp/torchx-moto}
LSF_STATE=${OPENLAVA_WORKDIR:-/tmp/torchx-lsf}
RAY_STATE=${RAY_STATE_DIR:-/tmp/torchx-ray}
ORDER=(docker slurm lsf k8s moto ray)
declare -A TIMEOUT=([docker]=900 [slurm]=600 [lsf]=900 [k8s]=1800 [moto]=900 [ray]=900)   # cold starts: ~3, ~0.5, ~4, ~8, ~1, ~1.5 min
mkdir -p "$DIR/logs"

usage() { awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0" >&2; exit 2; }

# names -> the requested backends in start order (reverse for down)
select_names() {
    local want=" $* " n out=()
    [[ $want == *" all "* ]] && want=" ${ORDER[*]} "
    for n in $want; do
        [[ " ${ORDER[*]} all " == *" $n "* ]] || { log "unknown backend '$n' (use: ${ORDER[*]} all)"; exit 2; }
    done
    for n in "${ORDER[@]}"; do [[ $want == *" $n "* ]] && out+=("$n"); done
    echo "${out[@]}"
}

# (the env.sh files are written by the *-up.sh scripts)
# shellcheck source=/dev/null
is_up() {
    case "$1" in
        docker) docker_ping ;;
        slurm) command -v scontrol >/dev/null && timeout 10 scontrol ping 2>/dev/null | grep -q 'is UP' \
                   && [ -n "$(timeout 10 sinfo -h -r -N -o %N 2>/dev/null)" ] ;;
        lsf) [ -s "$LSF_STATE/env.sh" ] && (. "$LSF_STATE/env.sh" && timeout 10 lsid >/dev/null 2>&1 \
                 && timeout 10 bhosts 2>/dev/null | awk '$2 == "ok" { f = 1 } END { exit !f }') ;;
        k8s) [ -s "$K8S_STATE/env.sh" ] && curl -sf --max-time 5 -k "$(. "$K8S_STATE/env.sh"; echo "$TORCHX_TEST_K8S_API")/readyz" \
                 -H "Authorization: Bearer $(. "$K8S_STATE/env.sh"; echo "$TORCHX_TEST_K8S_TOKEN")" 2>/dev/null | grep -qx ok ;;
        moto) [ -s "$MOTO_STATE/env.sh" ] && curl -sf --max-time 5 "$(. "$MOTO_STATE/env.sh"; echo "$AWS_ENDPOINT_URL")/moto-api/config" >/dev/null 2>&1 ;;
        ray) [ -s "$RAY_STATE/env.sh" ] && curl -sf --max-time 5 "$(. "$RAY_STATE/env.sh"; echo "$TORCHX_TEST_RAY_ADDRESS")/api/version" >/dev/null 2>&1 ;;
    esac
}

write_env() {
    local tmp=$ENV_FILE.tmp.$$
    {
        echo "# written by scripts/backends/services.sh at $(date -u +%FT%TZ); source it before the tests"
        if is_up docker; then
            echo "export TORCHX_TEST_DOCKER=1"
            echo "export TORCHX_TEST_DOCKER_IMAGE=localhost/torchx-python:bookworm"
            echo "export TORCHX_TEST_BUSYBOX_IMAGE=localhost/torchx-busybox:latest"
        else
            echo "unset TORCHX_TEST_DOCKER TORCHX_TEST_DOCKER_IMAGE TORCHX_TEST_BUSYBOX_IMAGE"
        fi
        if is_up slurm; then
            echo "export TORCHX_TEST_SLURM=1"
            echo "export TORCHX_TEST_SLURM_PARTITION=debug"
            echo "export TORCHX_TEST_SLURM_NODES=$(sinfo -h -r -N -o %N 2>/dev/null | sort -u | wc -l)"
        else
            echo "unset TORCHX_TEST_SLURM TORCHX_TEST_SLURM_PARTITION TORCHX_TEST_SLURM_NODES"
        fi
        if is_up lsf; then
            echo "export TORCHX_TEST_LSF=1"
            grep -v '^#' "$LSF_STATE/services.env"
        else
            echo "unset TORCHX_TEST_LSF LSF_ENVDIR TORCHX_TEST_LSF_BINDIR"
        fi
        if is_up k8s; then
            echo "export TORCHX_TEST_K8S=1"
            grep -v '^#' "$K8S_STATE/env.sh"
        else
            echo "unset TORCHX_TEST_K8S KUBECONFIG TORCHX_TEST_K8S_API TORCHX_TEST_K8S_TOKEN TORCHX_TEST_K8S_KUBELET TORCHX_TEST_K8S_NODE TORCHX_TEST_K8S_IMAGE"
        fi
        if is_up moto; then
            echo "export TORCHX_TEST_AWS=1"
            grep -v '^#' "$MOTO_STATE/env.sh"
        else
            echo "unset TORCHX_TEST_AWS AWS_ENDPOINT_URL TORCHX_TEST_AWS_BATCH_QUEUE TORCHX_TEST_AWS_BATCH_DOCKER TORCHX_TEST_AWS_IMAGE"
        fi
        if is_up ray; then
            grep -v '^#' "$RAY_STATE/env.sh"
        else
            echo "unset TORCHX_TEST_RAY TORCHX_TEST_RAY_ADDRESS TORCHX_TEST_RAY_PYTHON"
        fi
    } > "$tmp"
    mv "$tmp" "$ENV_FILE"
}

cmd_up() {
    local names n t rc failed=()
    read -ra names <<<"$(select_names "$@")"
    [ ${#names[@]} -gt 0 ] || usage
    for n in "${names[@]}"; do
        t=$EPOCHREALTIME
        local env=()
        case "$n" in
            k8s)
                # real kubelet on Docker when dockerd is up (requested now or already running)
                if [ -n "${TORCHX_K8S_KUBELET:-}" ]; then env=(K8S_KUBELET="$TORCHX_K8S_KUBELET")
                elif docker_ping; then env=(K8S_KUBELET=docker)
                else
                    env=(K8S_KUBELET=fake)
                    [[ " ${names[*]} " == *" docker "* ]] && log "WARNING: docker is not up: k8s falls back to the fake kubelet"
                fi ;;
            moto)
                if [ -n "${TORCHX_MOTO_DOCKER:-}" ]; then env=(MOTO_BATCH_USE_DOCKER="$TORCHX_MOTO_DOCKER")
                elif docker_ping; then env=(MOTO_BATCH_USE_DOCKER=1)
                else
                    env=(MOTO_BATCH_USE_DOCKER=0)
                    [[ " ${names[*]} " == *" docker "* ]] && log "WARNING: docker is not up: moto Batch falls back to simple mode (no containers, no logs)"
                fi ;;
        esac
        log "$n: starting ${env[*]} (log: $DIR/logs/$n-up.log)"
        rc=0
        env "${env[@]}" timeout -k 10 "${TIMEOUT[$n]}" bash "$HERE/$n-up.sh" >"$DIR/logs/$n-up.log" 2>&1 </dev/null 9>&- || rc=$?
        if [ $rc != 0 ] && [ $rc != 124 ]; then
            # state left by an earlier run that died (stale pid files, half-started daemons):
            # stop what is there and start once more from clean
            log "$n: up failed (exit $rc); stopping what is left and retrying once"
            tail -n 5 "$DIR/logs/$n-up.log" | sed 's/^/    | /' >&2
            bash "$HERE/$n-down.sh" >"$DIR/logs/$n-down.log" 2>&1 </dev/null 9>&- || true
            rc=0
            env "${env[@]}" timeout -k 10 "${TIMEOUT[$n]}" bash "$HERE/$n-up.sh" >"$DIR/logs/$n-up.log" 2>&1 </dev/null 9>&- || rc=$?
        fi
        if [ $rc = 0 ] && is_up "$n"; then
            log "$n: up in $(since "$t")s"
            grep -E 'ready|already|built|install|image|debootstrap|venv|seeded|exists' "$DIR/logs/$n-up.log" | sed 's/^/    /' >&2
        else
            [ $rc = 124 ] && log "$n: TIMED OUT after ${TIMEOUT[$n]}s"
            log "$n: FAILED (exit $rc) after $(since "$t")s"
            tail -n 40 "$DIR/logs/$n-up.log" | sed 's/^/    | /' >&2
            failed+=("$n")
        fi
    done
    write_env
    log "env file: $ENV_FILE  ($(grep -c '^export' "$ENV_FILE") exports)"
    if [ ${#failed[@]} -gt 0 ]; then log "FAILED: ${failed[*]}"; return 1; fi
    log "all up: ${names[*]}"
}

cmd_down() {
    local names i n rc=0
    read -ra names <<<"$(select_names "$@")"
    [ ${#names[@]} -gt 0 ] || usage
    for ((i = ${#names[@]} - 1; i >= 0; i--)); do
        n=${names[i]}
        if [ "$n" = docker ] && { is_up k8s || is_up moto; } && [[ " ${names[*]} " != *" k8s "* ]]; then
            log "WARNING: stopping docker under a running k8s/moto: kubelet pods and moto Batch jobs stop working"
        fi
        log "$n: stopping"
        bash "$HERE/$n-down.sh" >"$DIR/logs/$n-down.log" 2>&1 </dev/null 9>&- \
            || { log "$n: down failed"; tail -n 20 "$DIR/logs/$n-down.log" | sed 's/^/    | /' >&2; rc=1; }
    done
    write_env
    return $rc
}

cmd_status() {
    local n
    for n in "${ORDER[@]}"; do
        if is_up "$n"; then echo "$n: up"; else echo "$n: down"; fi
    done
}

# one services.sh at a time (other sessions may call it concurrently)
exec 9>"$DIR/lock"
flock -w 2400 9 || die "another services.sh has held $DIR/lock for 40 min"

case "${1:-}" in
    up) shift; cmd_up "$@" ;;
    down) shift; cmd_down "$@" ;;
    env) write_env; echo "$ENV_FILE" ;;
    status) cmd_status ;;
    smoke) shift; exec 9>&-; exec bash "$HERE/smoke.sh" "$@" ;;
    *) usage ;;
esac
