#!/usr/bin/env bash
# The main job: a short campaign on the default local runner, then the dashboard.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
OUT="${FIA_DEMO_OUT:-runs/demo}"
.venv/bin/fia-fuzz campaign --runner torch-sdpa --budget "${FIA_DEMO_BUDGET:-2m}" --out "$OUT" "$@"
.venv/bin/fia-fuzz report "$OUT" --html "$OUT/dashboard.html"
