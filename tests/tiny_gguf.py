"""A tiny GGUF file written with the ``gguf`` package: real header, small float32 tensors."""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np

GGUF_SHAPES = {"token_embd.weight": (40, 8), "blk.0.attn_norm.weight": (8,), "output.weight": (40, 8)}
GGUF_PARAMETERS = sum(int(np.prod(s)) for s in GGUF_SHAPES.values())  # 648


def write_tiny_gguf(path: Path, context_length: int = 1024, vocab: int = 40) -> Path:
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("tiny-gguf")
    writer.add_context_length(context_length)
    writer.add_block_count(1)
    writer.add_embedding_length(8)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("tiny")
    writer.add_token_list([f"t{i}" for i in range(vocab)])
    writer.add_eos_token_id(2)
    for name, shape in GGUF_SHAPES.items():
        writer.add_tensor(name, np.ones(shape, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
