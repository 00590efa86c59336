#!/usr/bin/env bash
# The GPU check: on one CUDA GPU in under 8 minutes (each stage has its own timeout), and on
# a CPU-only machine too, where the CUDA parts skip. Stages:
#   1. the tests marked `cuda` (runners, golden agreement, metamorphic relations on CUDA),
#      pytest -n auto;
#   2. a short nightly campaign: torch-sdpa, 8 workers sharing GPU 0 (--devices 0,...,0:
#      each worker gets 1/8 of its memory), budget FIA_CHECK_BUDGET (default 150s);
#   3. a metamorphic smoke: a campaign with --metamorphic on a few cases;
#   4. the post-quant probe (scripts/postquant_probe.py), CPU vs CUDA and each SDPA backend.
# Then one summary, OUT/device-check-summary.json (printed): test counts, campaign counts by
# verdict, cases/min, the workers' busy share, failures by signature, the device, the probe.
#
# No venv, no network: FIA_PYTHON (default .venv/bin/python if present, else python3) must
# already have numpy, hypothesis, ml-dtypes, pandas, pyarrow, pytest, pytest-xdist and torch;
# numba it may take from wheels in FIA_WHEELS (default wheels/, ignored by git: fill it with
# `pip download --only-binary=:all: --python-version 3.12 numba -d wheels` for the host's
# python, and carry it). The project runs from this checkout (PYTHONPATH).
# OUT: FIA_CHECK_OUT (default runs/device-check), emptied first.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
PY="${FIA_PYTHON:-}"
if [ -z "$PY" ]; then
    if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
OUT="${FIA_CHECK_OUT:-runs/device-check}"
rm -rf "$OUT" && mkdir -p "$OUT"
: >"$OUT/stages.txt"

# numba (the golden's kernels) from carried wheels where the host's python lacks it
WHEELS="${FIA_WHEELS:-wheels}"
if ! "$PY" -c "import numba" 2>/dev/null && [ -d "$WHEELS" ]; then
    "$PY" -m pip install --quiet --no-index --find-links "$WHEELS" numba >"$OUT/wheels.log" 2>&1
fi
if ! "$PY" -c "import numpy, hypothesis, ml_dtypes, pandas, pyarrow, pytest, xdist, torch, numba" \
        2>"$OUT/deps.log"; then
    echo "device-check: $PY lacks a dependency (see $OUT/deps.log); set FIA_PYTHON" >&2
    exit 2
fi
CUDA=$("$PY" -c "import torch; print(int(torch.cuda.is_available()))")
if [ "$CUDA" = 1 ]; then
    WORKERS="${FIA_CHECK_WORKERS:-8}"
    BUDGET="${FIA_CHECK_BUDGET:-150}"
    DEVICES=(--devices "$(printf '0,%.0s' $(seq "$WORKERS") | sed 's/,$//')")
    MM_WORKERS=4
    MM_DEVICES=(--devices 0,0,0,0)
    MM_CASES=48
    echo "device-check: CUDA $("$PY" -c 'import torch; print(torch.cuda.get_device_name(0))')"
else  # a CPU machine: a small campaign, the CUDA tests skip
    WORKERS="${FIA_CHECK_WORKERS:-2}"
    BUDGET="${FIA_CHECK_BUDGET:-30}"
    DEVICES=()
    MM_WORKERS=1
    MM_DEVICES=()
    MM_CASES=8
    echo "device-check: no CUDA device; CUDA tests and probe rows skip, campaign on the CPU"
fi

stage() {  # stage NAME TIMEOUT_S LOG CMD...: run with a timeout, record rc and seconds
    local name=$1 limit=$2 log=$3 t0=$SECONDS rc
    shift 3
    echo "device-check: $name (at most ${limit}s) ..."
    timeout -k 10 "$limit" "$@" >"$log" 2>&1
    rc=$?
    echo "$name $rc $((SECONDS - t0))" >>"$OUT/stages.txt"
    echo "device-check: $name rc=$rc in $((SECONDS - t0))s; $(tail -n 1 "$log")"
}

stage cuda_tests 130 "$OUT/tests.log" "$PY" -m pytest -m "cuda and not slow" -n auto \
    -p no:cacheprovider -q --junitxml "$OUT/tests.xml" tests
stage campaign $((BUDGET + 45)) "$OUT/campaign.log" "$PY" -m fia_fuzz campaign \
    --runner torch-sdpa --profile nightly --budget "${BUDGET}s" --workers "$WORKERS" \
    "${DEVICES[@]}" --seed "${FIA_CHECK_SEED:-1}" --no-shrink --case-timeout 60s \
    --out "$OUT/campaign"
stage metamorphic 75 "$OUT/metamorphic.log" "$PY" -m fia_fuzz campaign --runner torch-sdpa \
    --profile smoke --max-cases "$MM_CASES" --metamorphic --workers "$MM_WORKERS" \
    "${MM_DEVICES[@]}" --seed 2 --no-shrink --case-timeout 30s --out "$OUT/metamorphic"
stage postquant_probe 75 "$OUT/postquant.log" "$PY" scripts/postquant_probe.py \
    --cases 20 --json "$OUT/postquant.json"

"$PY" scripts/device_check_summary.py "$OUT" --workers "$WORKERS" --budget "$BUDGET" \
    --mm-workers "$MM_WORKERS"
cat "$OUT/postquant.log" 2>/dev/null | tail -n 12
