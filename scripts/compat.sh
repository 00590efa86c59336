#!/usr/bin/env bash
# pyproject.toml's ranges, tested at both ends: `oldest` builds .venv-compat-oldest with every
# direct dependency (and test tool) at the lowest release its range admits (uv's
# --resolution lowest-direct), `newest` builds .venv-compat-newest at the newest releases; both
# keep the locked torch (the CPU build on local disk, never another). Then the compat set runs
# there: pytest -m compat (extra args go to pytest). The venv is built anew on each run (uv's
# cache makes that seconds) and .venv-compat-*/versions.txt lists what it held.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
    oldest) RESOLUTION=lowest-direct ;;
    newest) RESOLUTION=highest ;;
    *) echo "usage: bash scripts/compat.sh oldest|newest [PYTEST_ARGS...]" >&2; exit 2 ;;
esac
VENV=".venv-compat-$1"
shift
bash scripts/setup.sh  # uv comes with the locked test tools
UV=.venv/bin/uv
TORCH="$(grep -o '^torch==[^ ]*' requirements.lock)"
rm -rf "$VENV"
"$UV" venv --quiet --python "${FIA_PYTHON:-python3}" "$VENV"
"$UV" pip install --quiet --python "$VENV/bin/python" --resolution "$RESOLUTION" \
    --find-links /opt/wheels -e '.[test]' "$TORCH"
"$UV" pip freeze --quiet --python "$VENV/bin/python" >"$VENV/versions.txt"
echo "compat.sh: $VENV: $(grep -iE \
    '^(hypothesis|llvmlite|ml-dtypes|numba|numpy|pandas|pyarrow|pytest|torch)==' \
    "$VENV/versions.txt" | tr '\n' ' ')"
# numba's cache of the golden's kernels, per venv: one numba version does not evict another's
export NUMBA_CACHE_DIR="$PWD/$VENV/numba-cache"
"$VENV/bin/python" scripts/warm_golden.py
"$VENV/bin/python" -m pytest -p no:cacheprovider -m compat "$@"
