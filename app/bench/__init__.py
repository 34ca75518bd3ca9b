"""Benchmarks: ours against Hugging Face (``runs``), multi-turn scenarios (``sessions``) and
llama.cpp on the same files (``peer``), over one set of helpers (``common``)."""
