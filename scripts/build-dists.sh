#!/usr/bin/env bash
# build-dists.sh [OUT_DIR] - builds an sdist and a wheel of every distribution under packages/
# (each directory with a pyproject.toml) with the standard build frontend (`python -m build`:
# the sdist first, then the wheel from that sdist, so a file missing from the sdist breaks the
# wheel), then checks them: `twine check --strict` (the README renders) and
# scripts/check_dist_metadata.py (license expression and file, URLs, classifiers ...).
# OUT_DIR (default: dist) is emptied of earlier torchx builds first.
#
#   bash scripts/build-dists.sh                    # -> dist/*.whl, dist/*.tar.gz
#   pip install --find-links dist torchx-core torchx-sched-slurm
#
# Needs `build` and `twine` in $PYTHON (default python3). BUILD_ARGS are added to each
# `python -m build` call (nox -s dists passes --no-isolation with hatchling installed).
set -euo pipefail
cd "$(dirname "$0")/.."
LOG_TAG=build-dists
. scripts/backends/_lib.sh

PY=${PYTHON:-python3}
OUT=${1:-dist}
read -ra extra <<<"${BUILD_ARGS:-}"
"$PY" -c 'import build, twine' 2>/dev/null || die "$PY needs build and twine: $PY -m pip install build twine"

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
rm -f "$OUT"/torchx_*.whl "$OUT"/torchx_*.tar.gz
T0=$EPOCHREALTIME
packages=()
for dir in packages/*/; do
    [ -f "$dir/pyproject.toml" ] || continue
    packages+=("$(basename "$dir")")
    cmp -s LICENSE "$dir/LICENSE" || die "$dir/LICENSE is missing or differs from ./LICENSE (each sdist carries its own copy): cp LICENSE $dir"
    t=$EPOCHREALTIME
    "$PY" -m build "${extra[@]}" --outdir "$OUT" "$dir" >"$OUT/build-$(basename "$dir").log" 2>&1 \
        || { tail_log "$OUT/build-$(basename "$dir").log" 30; die "building $dir failed"; }
    rm -f "$OUT/build-$(basename "$dir").log"
    log "built $(basename "$dir") in $(since "$t")s"
done
"$PY" -m twine check --strict "$OUT"/torchx_*.whl "$OUT"/torchx_*.tar.gz
"$PY" scripts/check_dist_metadata.py "$OUT" "${packages[@]}"
log "${#packages[@]} distributions built and checked in $(since "$T0")s: $OUT"
