#!/usr/bin/env bash
# k8s-down.sh - stop what k8s-up.sh started (only the pids it recorded) and wipe the state dir.
# With the real kubelet it also removes the pod containers it made (docker label
# io.kubernetes.pod.uid) and unmounts the kubelet's mounts. The cached binaries are kept.
# Env: K8S_STATE_DIR=/tmp/torchx-k8s, K8S_KEEP_STATE=1 keeps certs/etcd/logs for debugging.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/_lib.sh"
STATE_DIR=${K8S_STATE_DIR:-/tmp/torchx-k8s}

had_kubelet=0; [ -f "$STATE_DIR/kubelet.pid" ] && had_kubelet=1
# SIGTERM all first (in parallel), then wait for each
for spec in kubelet:kubelet fake-kubelet:fake_kubelet.py kube-scheduler:kube-scheduler \
            kube-controller-manager:kube-controller-manager kube-apiserver:kube-apiserver etcd:etcd; do
    f=$STATE_DIR/${spec%%:*}.pid
    [ -f "$f" ] || continue
    stop_pid "$(pid_in "$f")" "${spec#*:}" "${spec%%:*}" 15 &
done
wait
rm -f "$STATE_DIR"/*.pid
if [ $had_kubelet = 1 ] && docker_ping; then
    ids=$(docker ps -aq --filter label=io.kubernetes.pod.uid)
    # shellcheck disable=SC2086
    [ -n "$ids" ] && docker rm -f $ids >/dev/null 2>&1 && log "removed the kubelet's pod containers"
fi
unmount_under "$STATE_DIR"
[ "${K8S_KEEP_STATE:-0}" = 1 ] || rm -rf "$STATE_DIR"
log "stopped"
