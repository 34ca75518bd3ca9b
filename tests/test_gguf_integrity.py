"""What a GGUF load checks (issue 20, section 6). GGUF carries no checksum, so flipped bytes in
tensor data that still decode to ordinary numbers cannot be told from real weights; what can be
checked cheaply is: the header and tensor table parse, and every dequantized weight is finite (a
flipped block scale, an fp16 ``d``, that becomes NaN or infinity makes its whole block so)."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import pytest
import torch
from test_loading import llama, tok, write_gguf  # noqa: F401 - fixtures

from app.engine.errors import ModelLoadError
from app.engine.models.loading import load_model

pytestmark = pytest.mark.usefixtures("isolated_cache")  # every test converts into its own cache (conftest)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_gguf_whose_weights_decode_to_nan_or_infinity_is_refused_naming_the_tensor(
    llama, tok, tmp_path: Path, isolated_cache, bad  # noqa: F811
):
    broken = copy.deepcopy(llama)
    with torch.no_grad():
        broken.model.layers[0].mlp.up_proj.weight[3, :32] = bad  # a block whose scale flipped to NaN / inf
    path = tmp_path / "flipped.gguf"
    write_gguf(broken, tok, path)
    with pytest.raises(ModelLoadError) as err:
        load_model(str(path), device="cpu")
    message = str(err.value)
    assert str(path) in message and "not a finite number" in message and "mlp.up_proj" in message
    assert not any((isolated_cache / "converted").glob("*/config.json"))  # nothing cached: checked again next time


def test_a_sound_gguf_still_loads(llama, tok, tmp_path: Path, isolated_cache):  # noqa: F811
    path = tmp_path / "sound.gguf"
    write_gguf(llama, tok, path)
    assert load_model(str(path), device="cpu").vocab_size == len(tok)
