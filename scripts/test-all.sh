#!/usr/bin/env bash
# Runs the whole test suite: starts every backend the live tests need (Docker engine,
# Slurm cluster, OpenLava (LSF) cluster, Kubernetes control plane, moto AWS endpoint, Ray
# head; needs root and Debian's apt) and the shells the completion tests use (zsh, fish), then
# every nox session. Extra arguments go to nox (e.g. `-s e2e`).
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
if ! "$PY" -m nox --version >/dev/null 2>&1; then
    "$PY" -m pip install --quiet 'nox>=2024.3'
fi

# the completion tests of torchx-core run the scripts in real zsh and fish (they fail in CI without them)
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    LOG_TAG=test-all . scripts/backends/_lib.sh
    apt_install zsh fish
fi

if [ "${TORCHX_SKIP_SERVICES:-0}" != 1 ]; then
    bash scripts/backends/services.sh up all
fi

exec "$PY" -m nox "$@"
