#!/usr/bin/env bash
# busybox-image.sh - puts a real `busybox:latest` on the local Docker engine for upstream's
# local_docker live tests (7 of them run image `busybox`), with no registry: the engine and
# `localhost/torchx-busybox:latest` (Debian's busybox-static in a minimal rootfs: /bin/busybox
# and one symlink per applet, `docker import`ed) come from scripts/backends/docker-up.sh, and
# that image is tagged `busybox:latest`. Idempotent: a no-op when the tag is there.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DOCKER=docker; [ -x /usr/bin/docker ] && DOCKER=/usr/bin/docker

if "$DOCKER" image inspect busybox:latest >/dev/null 2>&1; then
    exit 0
fi
DOCKER_IMAGES=busybox bash "$HERE/../backends/docker-up.sh"
"$DOCKER" tag localhost/torchx-busybox:latest busybox:latest
"$DOCKER" run --rm --network none busybox:latest sh -c 'echo busybox ok' >/dev/null
echo "busybox-image: busybox:latest = localhost/torchx-busybox:latest" >&2
