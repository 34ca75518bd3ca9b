"""The models on disk: loading (paths, GGUF, dtypes, kernels applied at load), the catalog of
models found on this machine, and pairing a target with a draft."""
