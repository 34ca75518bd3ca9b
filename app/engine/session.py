"""``Engine``: a target model, an optional drafter, and the conversation's KV caches.

This is the one API the CLI, the GUI worker and the tests call::

    engine = Engine.load(target="default", draft=LOOKUP)
    for step in engine.stream(messages, GenerationConfig(k=4)):
        ...                                  # one StepEvent per target pass
    result = engine.generate(messages, GenerationConfig(speculative=False))

Each call applies the chat template and prefills only what the caches do not already hold,
so a follow-up turn costs just its new tokens. An Engine is used from one thread at a time.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import torch

from app.engine.config import DRAFT_MODEL, LOOKUP, SUFFIX, GenerationConfig
from app.engine.decoding.cost import KChooser
from app.engine.decoding.decode import decode
from app.engine.decoding.drafters import Drafter, ModelDrafter, PromptLookupDrafter
from app.engine.decoding.suffix_drafter import SuffixDrafter
from app.engine.decoding.suffix_index import SuffixIndex
from app.engine.errors import InvalidSettingError, PromptError, SpecChatError
from app.engine.events import RunProvenance, RunResult, StepEvent
from app.engine.models.loading import DEFAULT_SOURCE, LoadedModel, ProgressFn, check_compatible, load_model
from app.engine.runners.cpu_kernels import AUTO as AUTO_THREADS
from app.engine.runners.cpu_kernels import apply_threads
from app.engine.runners.kv import CachedModel

Conversation = str | Sequence[Mapping[str, str]]
WARM_UP_BLOCK_SIZES = (1, 2, 3, 4, 6, 8)  # tokens per timed target pass in warm_up()


def _timed_pass(runner: CachedModel, size: int) -> float:
    """Seconds of one pass over ``size`` tokens after the cached positions, which it leaves
    as they were."""
    position = len(runner.tokens)
    started = time.perf_counter()
    runner.forward([0] * size, keep=size)
    seconds = time.perf_counter() - started
    runner.truncate(position)
    return seconds


class Engine:
    def __init__(
        self, target: LoadedModel, draft: LoadedModel | None = None, lookup: bool = False, suffix: bool = False
    ) -> None:
        if target.dtype == "int8" and (draft is not None or lookup or suffix):
            # dynamic int8 scales activations per tensor, i.e. over the whole verified block,
            # so a block's logits differ from one-token decoding: speculation would be lossy
            raise InvalidSettingError(
                f"The target '{target.name}' in int8 cannot be verified losslessly (int8 scales a "
                "whole block of tokens together, so its answers would change with speculation): "
                "use int8 for the draft model instead, or turn speculation off."
            )
        if draft is not None:
            check_compatible(target, draft)
        self.target = target
        self.draft = draft
        vocab = min(target.vocab_size, draft.vocab_size) if draft is not None else target.vocab_size
        self._target_kv = CachedModel(target.model, vocab)
        self._eos_ids = eos_ids = frozenset(target.eos_token_ids)
        self._drafter: Drafter | None = None
        # what the app has seen (prompts and answers, by conversation): the suffix drafter's corpus
        self.history = SuffixIndex()
        self.remembering = True  # False: nothing is recorded (a privacy setting)
        self._runs = itertools.count(1)  # names answers given without a conversation id
        self._suffix = SuffixDrafter(self.history, eos_ids)
        self._drafters: dict[str, Drafter] = {LOOKUP: PromptLookupDrafter(eos_ids), SUFFIX: self._suffix}
        # what passes cost on these models and how often drafts pass: kept across answers
        self.chooser = KChooser()
        if draft is not None:
            runner = CachedModel(draft.model, vocab, isolate_first_token=draft.dtype == "int8")
            self._drafters[DRAFT_MODEL] = self._drafter = ModelDrafter(runner, draft.name, eos_ids)
        elif suffix:
            self._drafter = self._suffix
        elif lookup:
            self._drafter = self._drafters[LOOKUP]

    @classmethod
    def load(
        cls,
        target: str = DEFAULT_SOURCE,
        draft: str | None = LOOKUP,
        *,
        device: str | None = "auto",
        dtype: str | None = "auto",
        draft_dtype: str | None = None,
        allow_pickle: bool = False,
        cpu_kernels: bool = True,
        threads: str | int | None = AUTO_THREADS,
        progress: ProgressFn | None = None,
    ) -> Engine:
        """Load the target and the drafter. ``draft``: a model source, ``LOOKUP``, ``SUFFIX`` or None.
        ``cpu_kernels``: prepacked linears and row-wise attention for fp32 / bf16 on the CPU;
        ``threads``: torch's CPU threads, ``"auto"`` or a number (``cpu_kernels.apply_threads``)."""
        apply_threads(threads)

        def load_one(source: str, dtype: str | None) -> LoadedModel:
            return load_model(
                source, device=device, dtype=dtype, allow_pickle=allow_pickle, cpu_kernels=cpu_kernels,
                progress=progress,
            )

        loaded = load_one(target, dtype)
        if draft is None or draft in (LOOKUP, SUFFIX):
            return cls(loaded, lookup=draft == LOOKUP, suffix=draft == SUFFIX)
        draft_model = load_one(draft, draft_dtype or dtype)
        return cls(loaded, draft_model)

    def warm_up(self) -> None:
        """Run each model once on the shapes decoding uses (a prompt, one token, a draft
        block): the first forward passes of a process pay one-off kernel set-up (~1.5 s on
        2 CPU cores), which would otherwise land on the first answer and skew a comparison.
        Then time a target pass per block size and a draft step: the k chooser's first points
        (decoding keeps measuring)."""
        models = self._runners()
        for runner in models:
            runner.forward([0] * 16, keep=1)
            runner.forward([0], keep=1)
            runner.forward([0] * 6)
            runner.truncate(16)
        self.chooser.costs.context = len(self._target_kv.tokens)  # a short context: the first band
        for size in WARM_UP_BLOCK_SIZES:
            self.chooser.costs.observe_verify(size, _timed_pass(self._target_kv, size))
        if isinstance(self._drafter, ModelDrafter):
            self.chooser.costs.observe_draft(1, _timed_pass(self._drafter.runner, 1))
        for runner in models:
            runner.reset()

    @property
    def forward_seconds(self) -> float:
        """Seconds spent inside the models' forward passes so far (target and draft)."""
        return sum(r.forward_s for r in self._runners())

    def _runners(self) -> list[CachedModel]:
        """The target's cached model, then the draft model's if there is one."""
        draft = [self._drafter.runner] if isinstance(self._drafter, ModelDrafter) else []
        return [self._target_kv, *draft]

    @property
    def target_name(self) -> str:
        return self.target.name

    @property
    def drafter_name(self) -> str:
        return self._drafter.name if self._drafter is not None else "none"

    @property
    def has_drafter(self) -> bool:
        return self._drafter is not None

    @property
    def drafter_choices(self) -> list[str]:
        """What ``stream(..., drafter_choice=...)`` accepts here: ``LOOKUP`` and ``SUFFIX``
        always, ``DRAFT_MODEL`` when a draft model is loaded."""
        return list(self._drafters)

    def _pick_drafter(self, choice: str | None) -> Drafter | None:
        """The configured drafter (None), or one by name for an experiment."""
        if choice is None:
            return self._drafter
        if choice not in self._drafters:
            raise InvalidSettingError(
                f"no drafter {choice!r} is loaded (available: {', '.join(self._drafters)})"
            )
        return self._drafters[choice]

    def made_by(self, config: GenerationConfig, drafter_choice: str | None = None) -> RunProvenance:
        """Which models, dtypes, device and settings make a run with ``config``."""
        drafter = self._pick_drafter(drafter_choice)
        drafting = config.speculative and drafter is not None
        uses_model = drafting and isinstance(drafter, ModelDrafter)
        return RunProvenance(
            target=self.target.name,
            drafter=drafter.name if drafting and drafter is not None else "none",
            dtype=self.target.dtype,
            device=str(self.target.device),
            draft_dtype=self.draft.dtype if uses_model and self.draft is not None else None,
            config=config.to_dict(),
        )

    def prompt_ids(self, conversation: Conversation, continue_answer: bool = False) -> list[int]:
        """The conversation as token ids, through the model's chat template when it has one.

        ``continue_answer``: the last message is a cut assistant answer to go on with; it is
        rendered as the assistant's turn without its closing end-of-turn."""
        messages = [{"role": "user", "content": conversation}] if isinstance(conversation, str) else list(conversation)
        last_user = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
        if not last_user.strip():
            raise PromptError("The prompt is empty: write something to send.")
        if continue_answer and (messages[-1]["role"] != "assistant" or not messages[-1]["content"].strip()):
            raise PromptError("There is no answer to continue: the last message is not a partial answer.")
        tokenizer = self.target.tokenizer
        if tokenizer.chat_template:
            try:
                encoded: Any = tokenizer.apply_chat_template(
                    [dict(m) for m in messages],
                    tokenize=True,
                    continue_final_message=continue_answer,
                    add_generation_prompt=not continue_answer,
                )
            except ValueError as exc:  # a template that rewrites the final message cannot continue it
                name = self.target.name
                raise PromptError(f"{name}'s chat template cannot continue a cut answer: {exc}") from exc
            ids = encoded["input_ids"] if isinstance(encoded, Mapping) or hasattr(encoded, "keys") else encoded
        else:
            ids = tokenizer.encode("\n\n".join(m["content"] for m in messages))
        ids = [int(i) for i in ids]  # a BatchEncoding's ids or a plain list
        if len(ids) >= self.target.context_length:
            raise PromptError(
                f"The prompt is {len(ids)} tokens long, but {self.target.name} has room for "
                f"{self.target.context_length} tokens: shorten it or start a new chat."
            )
        return ids

    def reset(self) -> None:
        """Forget the caches of earlier turns (the next call prefills everything)."""
        self._target_kv.reset()
        for drafter in self._drafters.values():
            drafter.reset()

    # ---- what the app has seen (the suffix drafter's corpus) ------------------------------
    def remember(self, owner: str, conversation: Conversation) -> None:
        """Index a saved conversation (its prompts and answers) under ``owner``, its id; the
        answers made here are indexed as they are emitted. Nothing when remembering is off,
        or for a conversation the chat template cannot render."""
        if not self.remembering:
            return
        ids = self._conversation_ids(conversation)
        if ids:
            self.history.record(owner, ids)

    def forget(self, owner: str) -> None:
        """Drop everything indexed under ``owner`` (a deleted conversation)."""
        self.history.forget(owner)

    def set_remembering(self, on: bool) -> None:
        """Off: forget every conversation and record none until it is on again."""
        self.remembering = on
        if not on:
            self.history.clear()

    def _conversation_ids(self, conversation: Conversation) -> list[int]:
        from jinja2 import TemplateError

        messages = [{"role": "user", "content": conversation}] if isinstance(conversation, str) else list(conversation)
        if not messages:
            return []
        tokenizer = self.target.tokenizer
        if not tokenizer.chat_template:
            return [int(i) for i in tokenizer.encode("\n\n".join(m["content"] for m in messages))]
        try:
            encoded: Any = tokenizer.apply_chat_template(
                [dict(m) for m in messages], tokenize=True, add_generation_prompt=messages[-1]["role"] != "assistant"
            )
        except (TemplateError, ValueError, TypeError, KeyError):  # a template that refuses this chat
            return []
        ids = encoded["input_ids"] if isinstance(encoded, Mapping) or hasattr(encoded, "keys") else encoded
        return [int(i) for i in ids]

    @property
    def context_length(self) -> int:
        """Tokens the target can hold: prompt and answer together."""
        return self.target.context_length

    def stream(
        self,
        conversation: Conversation,
        config: GenerationConfig,
        cancel: threading.Event | None = None,
        continue_answer: bool = False,
        drafter_choice: str | None = None,
        history_id: str | None = None,
        record: bool = True,
    ) -> Iterator[StepEvent]:
        """Answer the conversation, yielding one ``StepEvent`` per target pass; with
        ``continue_answer`` go on with the cut answer that ends the conversation.
        ``drafter_choice`` overrides the configured drafter (``LOOKUP``, ``SUFFIX`` or
        ``DRAFT_MODEL``). The prompt and the answer are indexed under ``history_id`` (the
        conversation's id; None: a name of their own) unless ``record`` is False."""
        prompt = self.prompt_ids(conversation, continue_answer)
        chosen = self._pick_drafter(drafter_choice)
        drafter = chosen if config.speculative else None
        owner = history_id or f"run {next(self._runs)}"
        recording = record and self.remembering
        if recording:
            self.history.record(owner, prompt)
        self._suffix.owner = owner
        try:
            for step in decode(
                self._target_kv,
                drafter,
                prompt,
                config,
                self.target.tokenizer,
                self._eos_ids,
                self.target.context_length,
                cancel,
                self.chooser,
            ):
                if recording:
                    self.history.extend(owner, [t.id for t in step.tokens])
                yield step
        except torch.OutOfMemoryError as exc:
            self.reset()
            raise SpecChatError(
                f"Out of memory while generating on {self.target.device}: try a shorter "
                "conversation, a smaller k, or a smaller model."
            ) from exc
        except GeneratorExit:  # the consumer stopped early; caches are consistent between steps
            raise
        except BaseException:
            self.reset()  # a half-finished pass leaves the caches in an unknown state
            raise

    def generate(
        self,
        conversation: Conversation,
        config: GenerationConfig,
        cancel: threading.Event | None = None,
        on_step: Callable[[StepEvent], None] | None = None,
        continue_answer: bool = False,
        drafter_choice: str | None = None,
        history_id: str | None = None,
        record: bool = True,
    ) -> RunResult:
        """Answer the conversation (or continue its cut answer) and return the whole run."""
        steps = []
        for step in self.stream(conversation, config, cancel, continue_answer, drafter_choice, history_id, record):
            steps.append(step)
            if on_step is not None:
                on_step(step)
        drafter = self._pick_drafter(drafter_choice)
        speculative = config.speculative and drafter is not None
        return RunResult.from_steps(
            steps,
            speculative=speculative,
            drafter=drafter.name if speculative and drafter is not None else "none",
            config=config.to_dict(),
            made_by=self.made_by(config, drafter_choice),
        )
