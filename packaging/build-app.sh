#!/usr/bin/env bash
# Build the one-folder desktop bundle (dist/specchat/) with PyInstaller, then smoke-test it:
# the built app starts offscreen, loads the bundled model, answers one prompt and exits 0.
# Takes several minutes and a few GB of disk; not part of ./test.sh.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/bootstrap.sh"
py="$root/.venv/bin/python"
"$py" -m pip install --quiet "pyinstaller>=6.10"
cd "$root"
started=$(date +%s)
"$py" -m PyInstaller --noconfirm --clean --log-level WARN \
  --distpath "$root/dist" --workpath "$root/build/pyinstaller" packaging/specchat.spec
echo "specchat: built dist/specchat in $(( $(date +%s) - started )) s, $(du -sh dist/specchat | cut -f1)"
"$root/packaging/smoke-test.sh" "$root/dist/specchat/specchat"
