#!/usr/bin/env bash
# Run the test suite (CPU, offscreen Qt, no network). Extra arguments go to pytest.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$root/scripts/bootstrap.sh"
cd "$root"
export QT_QPA_PLATFORM="${QT_QPA_PLATFORM:-offscreen}" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec "$root/.venv/bin/python" -m pytest "$@"
