#!/usr/bin/env bash
# Run SpecChat: with no arguments the desktop app; `./run.sh generate|compare|bench ...` the CLI.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$root/scripts/bootstrap.sh"
cd "$root" && exec "$root/.venv/bin/python" -m app "$@"
