#!/usr/bin/env bash
# Build the SpecChat wheel into dist/ (pure Python; dependencies are resolved at install time).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/bootstrap.sh"
cd "$root" && "$root/.venv/bin/python" -m pip wheel --no-deps --no-build-isolation -w dist .
