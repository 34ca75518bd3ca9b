#!/usr/bin/env bash
# The checks and the test suite (CPU, offscreen Qt, no network). Extra arguments go to pytest.
#   ruff (lint), lint-imports (the layer contracts of docs/DESIGN.md), mypy --strict over the
#   engine, then pytest.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$root/scripts/bootstrap.sh"
cd "$root"
bin="$root/.venv/bin"
echo "ruff:" && "$bin/ruff" check app tests tools packaging
echo "import contracts:" && "$bin/lint-imports" --no-cache | tail -n 1
echo "mypy (strict, app/engine):" && "$bin/mypy" app/engine
export QT_QPA_PLATFORM="${QT_QPA_PLATFORM:-offscreen}" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec "$bin/python" -m pytest "$@"
