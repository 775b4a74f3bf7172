#!/usr/bin/env bash
# docker-up.sh - Docker engine for tests: Debian docker.io (20.10), dockerd started by hand
# (no systemd), plus local images, since no registry can be reached:
#   localhost/torchx-busybox:latest   busybox-static rootfs (~2 MB, ~1 s)
#   localhost/torchx-python:bookworm  debootstrap minbase + python3, python3-venv, ca-certificates
#                                     (~170 MB, ~2 min the first time; rootfs tarball cached in
#                                     /var/cache/torchx-test-images), also tagged :latest
# The localhost/ prefix makes an accidental pull fail fast against 127.0.0.1.
# Idempotent: a no-op when dockerd is up and the images exist.
#
# Knobs: DOCKER_IMAGES="busybox python" (images to ensure), DOCKERD_EXTRA_FLAGS="",
#        DEBOOTSTRAP_MIRROR=http://deb.debian.org/debian, DOCKER_SMOKE=1 (run containers after start)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/_lib.sh"

IMAGES=${DOCKER_IMAGES-busybox python}
SOCK=/var/run/docker.sock
PIDFILE=/run/dockerd.pid
DLOG=/var/log/dockerd.log
CACHE=/var/cache/torchx-test-images
MIRROR=${DEBOOTSTRAP_MIRROR:-http://deb.debian.org/debian}
T0=$EPOCHREALTIME
# Debian's client matches the daemon; a newer client elsewhere in PATH works too (API 1.41)
DOCKER=docker; [ -x /usr/bin/docker ] && DOCKER=/usr/bin/docker

pkgs=(docker.io curl)
[[ " $IMAGES " == *" busybox "* ]] && pkgs+=(busybox-static)
[[ " $IMAGES " == *" python "* ]] && pkgs+=(debootstrap)
apt_install "${pkgs[@]}"

# ---------------------------------------------------------------- dockerd
if ! running "$PIDFILE" && ! docker_ping; then
    t=$EPOCHREALTIME
    rm -f "$PIDFILE"
    flags=("--host=unix://$SOCK" "--pidfile=$PIDFILE" --shutdown-timeout=5)
    grep -qw overlay /proc/filesystems || flags+=(--storage-driver=vfs)
    # shellcheck disable=SC2206
    [ -n "${DOCKERD_EXTRA_FLAGS:-}" ] && flags+=($DOCKERD_EXTRA_FLAGS)
    # dockerd starts and supervises its own containerd
    setsid /usr/sbin/dockerd "${flags[@]}" </dev/null >>"$DLOG" 2>&1 &
    WAIT_PID=$! wait_for 60 dockerd docker_ping || { tail_log "$DLOG"; die "dockerd did not come up"; }
    log "dockerd ready in $(since "$t")s ($("$DOCKER" info --format '{{.ServerVersion}} storage={{.Driver}}'))"
fi
wait_for 60 dockerd docker_ping || { tail_log "$DLOG"; die "dockerd is not answering on $SOCK"; }

# ---------------------------------------------------------------- images
have_image() { "$DOCKER" image inspect "$1" >/dev/null 2>&1; }

if [[ " $IMAGES " == *" busybox "* ]] && ! have_image localhost/torchx-busybox:latest; then
    t=$EPOCHREALTIME
    d=$(mktemp -d /tmp/bbroot.XXXXXX)
    mkdir -p "$d"/{bin,tmp,etc,root,proc,sys,dev}
    chmod 1777 "$d/tmp"
    cp /bin/busybox "$d/bin/busybox"
    for app in $(/bin/busybox --list); do [ -e "$d/bin/$app" ] || ln -s busybox "$d/bin/$app"; done
    printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' > "$d/etc/passwd"
    printf 'root:x:0:\nnogroup:x:65534:\n' > "$d/etc/group"
    tar -C "$d" -c . | "$DOCKER" import -c 'CMD ["/bin/sh"]' -c 'ENV PATH=/bin' - localhost/torchx-busybox:latest >/dev/null
    rm -rf "$d"
    log "image localhost/torchx-busybox:latest built in $(since "$t")s"
fi

if [[ " $IMAGES " == *" python "* ]] && ! have_image localhost/torchx-python:bookworm; then
    t=$EPOCHREALTIME
    mkdir -p "$CACHE"
    tarball=$CACHE/debian-bookworm-python3.tar
    if [ ! -s "$tarball" ]; then
        d=$(mktemp -d /tmp/pyroot.XXXXXX)
        log "debootstrap bookworm (minbase + python3) from $MIRROR (~2 min) ..."
        debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
            bookworm "$d" "$MIRROR" >/var/log/debootstrap-torchx.log 2>&1 \
            || { rm -rf "$d"; tail_log /var/log/debootstrap-torchx.log 20; die "debootstrap failed"; }
        rm -rf "$d"/var/cache/apt/archives/*.deb "$d"/var/lib/apt/lists/*
        tar -C "$d" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
        rm -rf "$d"
    fi
    "$DOCKER" import -c 'CMD ["/bin/bash"]' \
        -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        -c 'ENV LANG=C.UTF-8' "$tarball" localhost/torchx-python:bookworm >/dev/null
    "$DOCKER" tag localhost/torchx-python:bookworm localhost/torchx-python:latest
    log "image localhost/torchx-python:bookworm ready in $(since "$t")s"
fi

log "docker ready in $(since "$T0")s; images: $("$DOCKER" images --format '{{.Repository}}:{{.Tag}}' | grep '^localhost/' | tr '\n' ' ')"

if [ "${DOCKER_SMOKE:-0}" = 1 ]; then
    for img in localhost/torchx-busybox:latest localhost/torchx-python:bookworm; do
        have_image "$img" || continue
        out=$("$DOCKER" run --rm "$img" echo hello) || die "smoke: docker run $img failed"
        [ "$out" = hello ] || die "smoke: $img printed '$out'"
        log "smoke: $img printed hello"
    done
fi
