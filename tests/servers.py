"""Real inference servers for the tests: ``llama-server`` processes on 127.0.0.1 (a free port
each) with the bundled GGUF — plain, ``--spec-type ngram-simple``, and the same file as its own
draft model (``-md`` + ``--spec-type draft-simple``), a router serving ``plain`` and ``ngram`` on
one port — and, opted in (``./test.sh --vllm``, which
sets ``SPECCHAT_VLLM_PYTHON``), vLLM plain and with n-gram speculation.

Each server is started once per test session, waited for on ``/health``, and stopped by its
process id at teardown. The llama.cpp binaries come from ``scripts/build-llama-cpp.sh``; without
them the tests skip with the reason — except in CI (``CI=true``), where a missing binary fails.
Small on purpose: 1 thread, a 2048-token context, one slot.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

LLAMA_CPP_VERSION = "11434.0.0"  # scripts/build-llama-cpp.sh
START_TIMEOUT_S = 90.0
VLLM_START_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class RunningServer:
    name: str
    url: str
    pid: int
    log: Path


def llama_cpp_bin() -> Path:
    cache = os.environ.get("SPECCHAT_LLAMA_CPP_DIR") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "specchat" / f"llama.cpp-{LLAMA_CPP_VERSION}"
    )
    return Path(cache) / "build" / "bin"


def require_llama_server() -> Path:
    binary = llama_cpp_bin() / "llama-server"
    if binary.is_file() and os.access(binary, os.X_OK):
        return binary
    reason = f"no llama-server at {binary}: run scripts/build-llama-cpp.sh (once per machine, ~17 min on 2 cores)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason} — in CI the real-server tests must run (.ci/run builds it)")
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def bundled_gguf() -> Path:
    from app.engine.models.loading import bundled_model_path

    return bundled_model_path()


def _die_with_the_tests() -> None:
    """In the child, before exec: a SIGTERM when the test process dies, whatever way it dies (a
    crash skips every teardown, and an orphaned server would hold its port and a core)."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def start(name: str, argv: list[str], port: int, log_dir: Path, env: dict[str, str] | None = None,
          timeout_s: float = START_TIMEOUT_S) -> RunningServer:  # fmt: skip
    """Start ``argv`` (a server on ``port``) and wait until its ``/health`` answers 200."""
    log = log_dir / f"{name}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            env={**os.environ, **(env or {})}, preexec_fn=_die_with_the_tests,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited with {process.returncode}: {log.read_text(errors='replace')[-2000:]}")
        try:
            if httpx.get(url + "/health", timeout=2.0, trust_env=False).status_code == 200:
                return RunningServer(name, url, process.pid, log)
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    stop(RunningServer(name, url, process.pid, log))
    tail = log.read_text(errors="replace")[-2000:]
    raise RuntimeError(f"{name} did not answer /health within {timeout_s:.0f} s: {tail}")


def stop(server: RunningServer) -> None:
    """End the server's process group (it is its own: ``start_new_session``), by its id."""
    try:
        os.killpg(server.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            finished, _status = os.waitpid(server.pid, os.WNOHANG)
        except ChildProcessError:
            return
        if finished:
            return
        time.sleep(0.1)
    os.killpg(server.pid, signal.SIGKILL)
    os.waitpid(server.pid, 0)


LLAMA_VARIANTS = {
    "plain": [],
    "ngram": ["--spec-type", "ngram-simple"],
    "draft": ["-md", "{gguf}", "--spec-type", "draft-simple", "-td", "1"],
}


ROUTER_PRESETS = """version = 1

[*]
threads = 1
ctx-size = 2048
parallel = 1

[plain]
model = {gguf}

[ngram]
model = {gguf}
spec-type = ngram-simple
"""


def llama_server(variant: str, log_dir: Path) -> RunningServer:
    binary = require_llama_server()
    gguf = str(bundled_gguf())
    port = free_port()
    if variant == "router":  # one port, two variants chosen by the request's "model": plain and ngram
        presets = log_dir / "presets.ini"
        presets.write_text(ROUTER_PRESETS.format(gguf=gguf), encoding="utf-8")
        argv = [str(binary), "--models-preset", str(presets), "--host", "127.0.0.1", "--port", str(port),
                "--metrics", "--no-webui"]  # fmt: skip
        return start("llama-server-router", argv, port, log_dir)
    argv = [str(binary), "-m", gguf, "--host", "127.0.0.1", "--port", str(port), "-t", "1", "-tb", "1",
            "-c", "2048", "-np", "1", "--metrics", "--slots", "--no-webui"]  # fmt: skip
    argv += [a.replace("{gguf}", gguf) for a in LLAMA_VARIANTS[variant]]
    return start(f"llama-server-{variant}", argv, port, log_dir)


# --- vLLM, opted in ----------------------------------------------------------------------------

VLLM_NGRAM = '{"method":"ngram","num_speculative_tokens":4,"prompt_lookup_max":4,"prompt_lookup_min":2}'


def vllm_python() -> Path | None:
    value = os.environ.get("SPECCHAT_VLLM_PYTHON")
    return Path(value) if value else None


def hf_folder() -> Path:
    """The bundled model as a Hugging Face folder: SpecChat's own GGUF conversion (float32)."""
    from app.engine.models.loading import load_model
    from app.paths import cache_dir

    def found() -> Path | None:
        stem = bundled_gguf().stem
        folders = sorted((cache_dir() / "converted").glob(f"{stem}-*"))
        return next((p for p in folders if (p / "config.json").is_file()), None)

    folder = found()
    if folder is None:
        load_model(str(bundled_gguf()), device="cpu", dtype="float32")  # converts once, into the cache
        folder = found()
    assert folder is not None, "the bundled GGUF's conversion left no folder in the cache"
    return folder


def vllm_server(variant: str, log_dir: Path) -> RunningServer:
    python = vllm_python()
    if python is None:
        pytest.skip("vLLM runs only through ./test.sh --vllm (a 3.4 GB install of its own)")
    port = free_port()
    argv = [str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(hf_folder()),
            "--served-model-name", "smollm2", "--host", "127.0.0.1", "--port", str(port), "--dtype", "bfloat16",
            "--max-model-len", "1024", "--max-num-seqs", "2", "--enforce-eager",
            "--kv-cache-memory-bytes", "536870912"]  # fmt: skip
    if variant == "ngram":
        argv += ["--speculative-config", VLLM_NGRAM, "--per-request-spec-decode-metrics", "detailed"]
    env = {
        "VLLM_CPU_OMP_THREADS_BIND": "1",
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "LD_PRELOAD": str(python.parent.parent / "lib" / "libiomp5.so"),
        "HF_HUB_OFFLINE": "1",
    }
    return start(f"vllm-{variant}", argv, port, log_dir, env, VLLM_START_TIMEOUT_S)


@pytest.fixture(scope="session")
def server_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("server-logs")


class Servers:
    """Servers started on first use, kept for the session, stopped at its end."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.running: dict[str, RunningServer] = {}

    def get(self, name: str) -> RunningServer:
        if name not in self.running:
            kind, variant = name.split("-", 1)
            start_one = llama_server if kind == "llama" else vllm_server
            self.running[name] = start_one(variant, self.log_dir)
        return self.running[name]

    def close(self) -> None:
        for server in self.running.values():
            stop(server)
        self.running.clear()


@pytest.fixture(scope="session")
def servers(server_logs: Path) -> Iterator[Servers]:
    pool = Servers(server_logs)
    yield pool
    pool.close()
