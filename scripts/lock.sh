#!/usr/bin/env bash
# Refresh requirements.lock, the exact releases and their hashes that scripts/setup.sh
# installs: pyproject.toml's dependencies with its torch and test extras, each at the newest
# release the ranges admit, resolved by uv for Linux x86_64 (manylinux_2_28) and Python 3.11.
# scripts/lock-constraints.txt holds torch at the CPU build that lies in /opt/wheels.
# Commit the new lock: CI tests it like any other change.
set -euo pipefail
cd "$(dirname "$0")/.."
# uv comes with the test extra; a .venv from before the lock gets it from the set-up
[ -x .venv/bin/uv ] || bash scripts/setup.sh
.venv/bin/uv pip compile pyproject.toml --extra torch --extra test --upgrade \
    --python-version 3.11 --python-platform x86_64-manylinux_2_28 \
    --find-links /opt/wheels --emit-find-links --constraint scripts/lock-constraints.txt \
    --generate-hashes --custom-compile-command "bash scripts/lock.sh" \
    --quiet --output-file requirements.lock
echo "lock.sh: requirements.lock: $(grep -c '^[a-z]' requirements.lock) releases," \
    "$(grep -o '^torch==[^ ]*' requirements.lock)"
