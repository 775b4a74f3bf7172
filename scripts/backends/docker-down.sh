#!/usr/bin/env bash
# docker-down.sh - stop the dockerd started by docker-up.sh (pid in /run/dockerd.pid). Running
# containers are killed first (a PID 1 that ignores SIGTERM would delay the shutdown); dockerd
# then stops its containerd. Images and containers in /var/lib/docker are kept.
#   --purge        also delete /var/lib/docker (images, containers, networks)
#   --purge-cache  also delete the cached python rootfs tarball (/var/cache/torchx-test-images)
# Env: DOCKER_DOWN_GRACEFUL=1 lets dockerd stop the containers itself (SIGTERM, 5 s grace).
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/_lib.sh"

PURGE=0; PURGE_CACHE=0
for a in "$@"; do
    case "$a" in --purge) PURGE=1 ;; --purge-cache) PURGE=1; PURGE_CACHE=1 ;; *) die "unknown argument $a" ;; esac
done
DOCKER=docker; [ -x /usr/bin/docker ] && DOCKER=/usr/bin/docker
pid=$(pid_in /run/dockerd.pid)

if alive "$pid" && [ "${DOCKER_DOWN_GRACEFUL:-0}" != 1 ]; then
    ids=$(timeout 10 "$DOCKER" ps -q 2>/dev/null | tr '\n' ' ')
    if [ -n "${ids// /}" ]; then
        log "killing running containers: $ids"
        # shellcheck disable=SC2086
        timeout 20 "$DOCKER" kill $ids >/dev/null 2>&1 || true
    fi
fi
stop_pid "$pid" '^/usr/sbin/dockerd ' dockerd 30
rm -f /run/dockerd.pid

# a containerd (or shim) of our dockerd outlives it only if dockerd had to be SIGKILLed
for p in /proc/[0-9]*; do
    p=${p#/proc/}
    case "$(cat "/proc/$p/comm" 2>/dev/null)" in containerd | containerd-shim*) ;; *) continue ;; esac
    cmdline_has "$p" '/var/run/docker/containerd|moby' && stop_pid "$p" 'containerd' "leftover containerd" 5
done

if [ $PURGE = 1 ]; then log "purging /var/lib/docker"; rm -rf /var/lib/docker; fi
if [ $PURGE_CACHE = 1 ]; then log "purging /var/cache/torchx-test-images"; rm -rf /var/cache/torchx-test-images; fi
log "stopped"
