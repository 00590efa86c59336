#!/usr/bin/env bash
# Create (or refresh) .venv with fia-fuzz and the releases of requirements.lock: exact versions
# checked by their hashes, for Linux x86_64 and Python 3.11, the CPU build of torch among them
# (scripts/lock.sh refreshes the lock). Idempotent: reinstalls only when the lock,
# pyproject.toml or the settings below changed since the last set-up.
#   FIA_UNLOCKED=1       the newest releases pyproject.toml admits instead of the lock
#   FIA_TORCH_SPEC=SPEC  this torch instead of the locked one (e.g. a CUDA build on a GPU box),
#                        installed after the rest, without a hash
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${FIA_PYTHON:-python3}"
LOCK=requirements.lock
UNLOCKED="${FIA_UNLOCKED:-0}"
TORCH_SPEC="${FIA_TORCH_SPEC:-}"
STAMP=".venv/.fia-setup-$( { cat pyproject.toml "$LOCK"; echo "$UNLOCKED $TORCH_SPEC"; } \
    | sha256sum | cut -c1-16)"
pip() { .venv/bin/python -m pip --quiet --disable-pip-version-check "$@"; }
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
if [ ! -f "$STAMP" ]; then
    if [ "$UNLOCKED" = 1 ]; then
        # the locked torch unless told otherwise, held by a constraint through the eager
        # upgrade: any newer torch here is a CUDA build of several GB
        TORCH_PIN="$(mktemp)"
        echo "${TORCH_SPEC:-$(grep -o '^torch==[^ ]*' "$LOCK")}" >"$TORCH_PIN"
        pip install --upgrade -r "$TORCH_PIN"
        pip install --upgrade --upgrade-strategy eager -c "$TORCH_PIN" -e '.[torch,test]'
        rm -f "$TORCH_PIN"
    elif [ -n "$TORCH_SPEC" ]; then
        # the lock less its torch entry (the pin line and its hash lines)
        NO_TORCH="$(mktemp)"
        awk '/^torch==/ {skip = 1; next} skip && /^ / {next} {skip = 0; print}' "$LOCK" \
            >"$NO_TORCH"
        pip install --require-hashes -r "$NO_TORCH"
        rm -f "$NO_TORCH"
        pip install "$TORCH_SPEC"
        pip install --no-deps -e .
    else
        pip install --require-hashes -r "$LOCK"
        pip install --no-deps -e .
    fi
    rm -f .venv/.fia-setup-*
    touch "$STAMP"
fi
# the golden's compiled kernels, cached once here rather than by each first process
.venv/bin/python scripts/warm_golden.py
