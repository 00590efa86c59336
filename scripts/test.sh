#!/usr/bin/env bash
# The test suite: lint, then pytest on every core (-n auto). Extra args go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The dashboard's browser test drives Debian's chromium; install it only when missing.
if [ ! -x /usr/bin/chromium ] && ! command -v chromium >/dev/null 2>&1; then
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo -n"
    { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq chromium >/dev/null; } \
        || echo "test.sh: could not install chromium; the browser test will skip (fail under CI)" >&2
fi
.venv/bin/ruff check fia_fuzz tests benchmarks
.venv/bin/python -m pytest -n auto -m "not slow" "$@"
