#!/usr/bin/env bash
# Runs the whole test suite: starts every backend the live tests need (Docker engine,
# Slurm cluster, OpenLava (LSF) cluster, Kubernetes control plane, moto AWS endpoint, Ray
# head; needs root and Debian's apt) and the shells the completion tests use (zsh, fish), then
# every nox session. Extra arguments go to nox (e.g. `-s e2e`).
#
# Knobs: PYTHON (default python3: runs nox, or makes its venv), TORCHX_SKIP_SERVICES=1,
#        TORCHX_NOX_VENV (where nox is installed when $PYTHON has none;
#        default ~/.cache/torchx/nox-venv).
set -euo pipefail
cd "$(dirname "$0")/.."
LOG_TAG=test-all
. scripts/backends/_lib.sh

PY=${PYTHON:-python3}
as_root_with_apt=0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then as_root_with_apt=1; fi

# nox: $PYTHON's own if it has one, else a venv of ours (Debian's python3 refuses a global
# `pip install`, and has no venv support until python3-venv is installed)
NOX=("$PY" -m nox)
if ! "$PY" -m nox --version >/dev/null 2>&1; then
    if [ $as_root_with_apt = 1 ] && ! "$PY" -c 'import ensurepip' 2>/dev/null; then apt_install python3-venv; fi
    venv=${TORCHX_NOX_VENV:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/torchx/nox-venv}
    VENV_PYTHON=$PY ensure_venv "$venv" 'import nox' 'nox>=2024.3'
    NOX=("$venv/bin/python" -m nox)
fi

# the completion tests of torchx-core run the scripts in real zsh and fish, the dashboard's a real
# chromium, local_cwd's durability tests count disk syncs with strace (they fail in CI without them)
if [ $as_root_with_apt = 1 ]; then apt_install zsh fish chromium strace; fi

if [ "${TORCHX_SKIP_SERVICES:-0}" != 1 ]; then
    bash scripts/backends/services.sh up all
fi

exec "${NOX[@]}" "$@"
