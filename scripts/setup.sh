#!/usr/bin/env bash
# Create (or refresh) .venv with fia-fuzz, the CPU build of torch and the test tools.
# Idempotent: reinstalls only when pyproject.toml changed since the last set-up.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${FIA_PYTHON:-python3}"
# torch is pinned to the CPU build on purpose: a bare `torch` requirement pulls a
# multi-GB CUDA build. Override with FIA_TORCH_SPEC (e.g. a CUDA build on a GPU box).
TORCH_SPEC="${FIA_TORCH_SPEC:-torch==2.13.0}"
STAMP=".venv/.fia-setup-$(sha256sum pyproject.toml | cut -c1-16)"
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
if [ ! -f "$STAMP" ]; then
    .venv/bin/python -m pip install --quiet --disable-pip-version-check "$TORCH_SPEC"
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[torch,test]'
    rm -f .venv/.fia-setup-*
    touch "$STAMP"
fi
# the golden's compiled kernels, cached once here rather than by each first process
.venv/bin/python scripts/warm_golden.py
