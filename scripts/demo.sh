#!/usr/bin/env bash
# The main job: a short campaign on the default local runner, then the dashboard.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
OUT="${FIA_DEMO_OUT:-runs/demo}"
# Two worker processes, one core each (torch and the golden too); the campaign prints its
# throughput at the end.
.venv/bin/fia-fuzz campaign --runner torch-sdpa --budget "${FIA_DEMO_BUDGET:-2m}" \
    --workers "${FIA_DEMO_WORKERS:-2}" --out "$OUT" "$@"
.venv/bin/fia-fuzz report "$OUT" --html "$OUT/dashboard.html"
