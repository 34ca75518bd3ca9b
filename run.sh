#!/usr/bin/env bash
# Run SpecChat: with no arguments the desktop app; `./run.sh generate|compare|bench ...` the CLI.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$root/scripts/bootstrap.sh"
if [ $# -eq 0 ] || [ "$1" = gui ]; then
  "$root/scripts/check-qt-libs.sh"  # names the X11 libraries Qt lacks, rather than Qt's generic error
fi
cd "$root" && exec "$root/.venv/bin/python" -m app "$@"
