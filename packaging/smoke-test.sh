#!/usr/bin/env bash
# Smoke-test a built bundle: the window opens offscreen, the bundled model loads, one prompt is
# answered, the app exits 0. Runs with a fresh data folder and settings so nothing of yours changes.
set -euo pipefail
app="${1:?usage: smoke-test.sh path/to/dist/specchat/specchat}"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
export QT_QPA_PLATFORM=offscreen HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export SPECCHAT_DATA_DIR="$scratch/data" XDG_CONFIG_HOME="$scratch/config"
started=$(date +%s.%N)
"$app" generate --prompt "What is the capital of France?" --max-new-tokens 12 --lookup
echo "specchat: CLI answered in $(echo "$(date +%s.%N) - $started" | bc) s"
started=$(date +%s.%N)
output="$("$app" --smoke-test "What is the capital of France? Answer in one word.")"
echo "$output"
echo "specchat: window answered in $(echo "$(date +%s.%N) - $started" | bc) s"
grep -q "^answer: ." <<<"$output"
echo "specchat: smoke test passed"
