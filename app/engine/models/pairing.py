"""Which library models can draft for a target: the engine's own ``check_compatible`` (same
strings → same ids, same end tokens) run on tokenizers only, no weights.

Verdicts are cached on disk (``cache_dir()/pairings.json``) keyed by both entries'
fingerprints (paths, sizes and modification times of their files), so a pair is checked once
until one of its models changes; tokenizers are kept in memory for the session.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import torch
from transformers import PreTrainedTokenizerBase

from app.engine.errors import IncompatibleModelsError
from app.engine.models.catalog import (
    ModelEntry,
    PairCheck,
    PairReason,
    read_gguf_vocabulary,
    read_tokenizer_json_vocabulary,
)
from app.engine.models.loading import (
    LoadedModel,
    _find_folder,
    _gguf_cache_folder,
    _tokenizer_class,
    check_compatible,
    vocab_difference,
)
from app.paths import cache_dir

if TYPE_CHECKING:
    from transformers import PreTrainedModel

CHECK_VERSION = 1  # bump when check_compatible changes what it compares
TokenizerLoader = Callable[[ModelEntry], PreTrainedTokenizerBase]


def load_tokenizer(entry: ModelEntry) -> PreTrainedTokenizerBase:
    """The tokenizer the engine would load for ``entry`` (a converted GGUF's if it exists)."""
    path = _find_folder(entry.source)
    if path.is_file():
        converted = _gguf_cache_folder(path)
        if not (converted / "config.json").is_file():
            from transformers import AutoTokenizer  # its import is a quarter second: here, where a GGUF needs it

            return AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name, local_files_only=True)
        path = converted
    tokenizer_class: Any = _tokenizer_class(path)
    tokenizer: PreTrainedTokenizerBase = tokenizer_class.from_pretrained(
        path, local_files_only=True, trust_remote_code=False
    )
    return tokenizer


class PairingChecker:
    """``check(target, draft) -> PairCheck``, cached per pair on disk and in memory."""

    def __init__(self, cache_file: Path | None = None, loader: TokenizerLoader = load_tokenizer) -> None:
        self.cache_file = cache_file or cache_dir() / "pairings.json"
        self._load_tokenizer = loader
        self._tokenizers: dict[str, PreTrainedTokenizerBase | Exception] = {}
        self._vocabularies: dict[str, tuple[str, dict[str, int]] | None] = {}  # from metadata
        self._verdicts: dict[str, dict[str, str | bool]] = self._read_cache()
        self._lock = threading.Lock()

    def check(self, target: ModelEntry, draft: ModelEntry) -> PairCheck:
        key = f"v{CHECK_VERSION}|{target.fingerprint}|{draft.fingerprint}"
        with self._lock:
            cached = self._verdicts.get(key)
        if cached is None:
            check = self._run_check(target, draft)
            self._remember(key, check)
            return check
        return PairCheck(
            target.source, draft.source, bool(cached["compatible"]),
            cast(PairReason, cached["reason"]), str(cached["detail"]),
        )

    # ---- the check itself -------------------------------------------------------------
    def _run_check(self, target: ModelEntry, draft: ModelEntry) -> PairCheck:
        quick = self._metadata_check(target, draft)
        if quick is not None:
            return quick
        tokenizers = [self._tokenizer(target), self._tokenizer(draft)]
        for entry, tokenizer in zip((target, draft), tokenizers, strict=True):
            if isinstance(tokenizer, Exception):
                detail = f"The tokenizer of '{entry.name}' could not be loaded ({_first_line(tokenizer)})."
                return PairCheck(target.source, draft.source, False, "unreadable", detail)
        t_tok, d_tok = cast(list[PreTrainedTokenizerBase], tokenizers)
        try:
            check_compatible(_tokenizer_only(target, t_tok), _tokenizer_only(draft, d_tok))
        except IncompatibleModelsError as exc:
            return PairCheck(target.source, draft.source, False, plain_reason(t_tok, d_tok), str(exc))
        return PairCheck(target.source, draft.source, True)

    def _metadata_check(self, target: ModelEntry, draft: ModelEntry) -> PairCheck | None:
        """An incompatible pair told from the files' metadata alone (a GGUF header's token
        list, a tokenizer.json's vocabulary): building a GGUF's tokenizer takes tens of seconds
        on a small CPU. Vocabularies of the same kind of file are compared entry by entry;
        of different kinds (whose token spellings may differ), only by size. None: undecided,
        the tokenizers decide."""
        found = [self._vocabulary(target), self._vocabulary(draft)]
        if found[0] is None or found[1] is None:
            return None
        (t_kind, tv), (d_kind, dv) = found[0], found[1]
        if t_kind == d_kind:
            reason = vocab_difference(tv, dv)
        elif len(tv) != len(dv):
            reason = f"their vocabularies have {len(tv)} and {len(dv)} entries"
        else:
            return None
        if reason is None:
            return None
        detail = f"Draft model '{draft.name}' is incompatible with target '{target.name}': {reason}."
        return PairCheck(target.source, draft.source, False, vocab_reason(tv, dv, same_eos=True), detail)

    def _vocabulary(self, entry: ModelEntry) -> tuple[str, dict[str, int]] | None:
        if entry.source not in self._vocabularies:
            self._vocabularies[entry.source] = _read_vocabulary(entry)
        return self._vocabularies[entry.source]

    def _tokenizer(self, entry: ModelEntry) -> PreTrainedTokenizerBase | Exception:
        if entry.source not in self._tokenizers:
            try:
                self._tokenizers[entry.source] = self._load_tokenizer(entry)
            except Exception as exc:  # noqa: BLE001 - an unreadable tokenizer is a verdict, not a crash
                self._tokenizers[entry.source] = exc
        return self._tokenizers[entry.source]

    # ---- the disk cache ---------------------------------------------------------------
    def _read_cache(self) -> dict[str, dict[str, str | bool]]:
        try:
            data = json.loads(self.cache_file.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _remember(self, key: str, check: PairCheck) -> None:
        if check.reason == "unreadable":
            return  # maybe a file still being downloaded: try again next time
        with self._lock:
            verdict: dict[str, str | bool] = {"compatible": check.compatible, "reason": check.reason}
            self._verdicts[key] = {**verdict, "detail": check.detail}
            snapshot = dict(self._verdicts)
        try:  # atomic: a reader never sees half a file
            self.cache_file.parent.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(prefix=".pairings-", dir=self.cache_file.parent)
            with os.fdopen(fd, "w") as f:
                json.dump(snapshot, f)
            os.replace(temp, self.cache_file)
        except OSError:
            pass  # an unwritable cache only costs a re-check next session


def plain_reason(target: PreTrainedTokenizerBase, draft: PreTrainedTokenizerBase) -> PairReason:
    """Which plain-words explanation fits an incompatible pair (see ``PLAIN_REASONS``)."""
    same_eos = target.eos_token_id == draft.eos_token_id
    return vocab_reason(target.get_vocab(), draft.get_vocab(), same_eos)


def vocab_reason(tv: dict[str, int], dv: dict[str, int], same_eos: bool) -> PairReason:
    """``plain_reason`` from the two token → id maps."""
    if tv == dv:
        return "tokenize_differently" if same_eos else "end_tokens"
    shared = len(tv.items() & dv.items())
    if shared < 0.5 * min(len(tv), len(dv)):
        return "different_tokenizers"
    if len(dv) > len(tv):
        return "draft_vocab_larger"
    if len(dv) < len(tv):
        return "draft_vocab_smaller"
    return "ids_differ"


def _read_vocabulary(entry: ModelEntry) -> tuple[str, dict[str, int]] | None:
    """("gguf" | "tokenizer.json", token → id) from the entry's files, or None."""
    try:
        path = _find_folder(entry.source)
        if path.is_file():
            gguf = read_gguf_vocabulary(path)
            return None if gguf is None else ("gguf", gguf)
        folder = read_tokenizer_json_vocabulary(path)
        return None if folder is None else ("tokenizer.json", folder)
    except Exception:  # noqa: BLE001 - unreadable metadata: the tokenizers decide
        return None


def _tokenizer_only(entry: ModelEntry, tokenizer: PreTrainedTokenizerBase) -> LoadedModel:
    """A ``LoadedModel`` without weights: ``check_compatible`` reads only the tokenizer, the
    name and the end-of-text ids (generation config's plus the tokenizer's, like the loader)."""
    eos = set(entry.eos_token_ids)
    if tokenizer.eos_token_id is not None:
        eos.add(tokenizer.eos_token_id)
    return LoadedModel(
        name=entry.name,
        source=entry.source,
        model=cast("PreTrainedModel", None),
        tokenizer=tokenizer,
        device=torch.device("cpu"),
        dtype=entry.dtype,
        eos_token_ids=tuple(sorted(eos)),
        context_length=entry.context_length or 0,
        vocab_size=len(tokenizer),
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0][:160] if text else type(exc).__name__).rstrip(".")
