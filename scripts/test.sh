#!/usr/bin/env bash
# The test suite: lint, then pytest on every core (-n auto). Extra args go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check fia_fuzz tests benchmarks
.venv/bin/python -m pytest -n auto -m "not slow" "$@"
