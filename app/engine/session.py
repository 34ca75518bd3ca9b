"""``Engine``: a target model, an optional drafter, and the conversation's KV caches.

This is the one API the CLI, the GUI worker and the tests call::

    engine = Engine.load(target="default", draft=LOOKUP)
    for step in engine.stream(messages, GenerationConfig(k=4)):
        ...                                  # one StepEvent per target pass
    result = engine.generate(messages, GenerationConfig(speculative=False))

It is the local ``Backend`` (``app.engine.backend``, whose ``generate`` it uses). Each call
applies the chat template and prefills only what the caches do not already hold, so a
follow-up turn costs just its new tokens. An Engine is used from one thread at a time.
"""

from __future__ import annotations

import functools
import itertools
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal, TypeGuard

import torch

from app.engine.backend import NEW_ANSWER, AnswerOptions, Conversation, TimedArms
from app.engine.config import DRAFT_AND_LOOKUP, DRAFT_MODEL, LOOKUP, SUFFIX, GenerationConfig, LoadOptions
from app.engine.decoding.cost import MODEL_KEY, CostModel, KChooser, ahead_is_faster
from app.engine.decoding.decode import Target, decode
from app.engine.decoding.drafters import Drafter, MixedDrafter, ModelDrafter, PromptLookupDrafter, model_of
from app.engine.decoding.suffix_drafter import SuffixDrafter
from app.engine.decoding.suffix_index import SuffixIndex
from app.engine.draft_threads import DRAFT_STEP_TOKENS, DRAFT_STEPS, Split, time_ahead, time_in_turn, timed_pass
from app.engine.errors import InvalidSettingError, PromptError, SpecChatError, StaleStreamError
from app.engine.events import ArmConditions, RunProvenance, StepEvent
from app.engine.models import forms
from app.engine.models.draft_head import extend_draft_head, restrict_draft_head
from app.engine.models.forms import FormProbe, WeightsForm
from app.engine.models.loading import (
    DEFAULT_SOURCE,
    LoadedModel,
    check_compatible,
    load_model,
    measured_store,
    source_identity,
)
from app.engine.models.measured import machine_description
from app.engine.runners import native
from app.engine.runners.kv import CachedModel
from app.engine.runners.threads import (
    OtherLoad,
    ThreadGovernor,
    apply_threads,
    parse_threads,
    physical_cores,
    torch_threads,
)


def _text(value: str) -> str:
    """A message's text as the tokenizer can take it: a lone surrogate (a conversation file or
    a ``surrogateescape``'d argument can hold one, and no tokenizer can encode it) becomes
    U+FFFD, as any invalid UTF-8 does when it is decoded with replacement."""
    if not isinstance(value, str):
        raise PromptError(f"A message must be text, not {type(value).__name__}.")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        # through UTF-16: a split surrogate pair joins again, a lone surrogate becomes one U+FFFD
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return value


def _messages(conversation: object) -> list[dict[str, str]]:
    """A conversation as a list of {"role", "content"} text dicts: a string is one user turn;
    anything else of the wrong shape is one InvalidSettingError naming what is wrong."""
    if isinstance(conversation, str):
        return [{"role": "user", "content": conversation}]
    if isinstance(conversation, Mapping) or not isinstance(conversation, Sequence):
        raise InvalidSettingError(
            f"A conversation must be a list of messages, not {type(conversation).__name__}: "
            'e.g. [{"role": "user", "content": "Hello"}].'
        )
    messages = []
    for n, message in enumerate(conversation, start=1):
        if not isinstance(message, Mapping):
            raise InvalidSettingError(
                f'Message {n} must be a {{"role": ..., "content": ...}} object, not {type(message).__name__}.'
            )
        for key in ("role", "content"):
            if key not in message:
                raise InvalidSettingError(f"Message {n} has no {key!r}.")
        for key, value in message.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise InvalidSettingError(f"Message {n}: {str(key)[:40]!r} must be text, not {type(value).__name__}.")
        messages.append(dict(message))
    return messages


ARM_PROBE_PASSES = 5  # plain passes timed before each arm of a comparison (start_arm)
DRAFT_AHEAD_ENV = "SPECCHAT_DRAFT_AHEAD"  # "0": a draft model drafts in turn, "1": ahead (``draft_threads``)
# each mixed answer moves ``Engine.free_share`` this far toward its own share: the last few answers weigh
FREE_SHARE_WEIGHT = 0.5
LOAD_DEFAULTS = LoadOptions()
WARM_UP_TIMINGS = "warm-up"  # the warm-up's timings in the measured store (models.measured)
DRAFT_ACCEPTANCE = "draft-acceptance"  # a draft model's acceptance evidence, kept per pair of models
KEPT_TRIALS = 16  # at most this many drafts' worth of kept evidence: a new engine's own soon outweighs it
DraftForm = WeightsForm  # the draft's form: what it was called when only the draft had one


def _timings_valid(timings: Any) -> TypeGuard[dict[str, list[Any]]]:
    """Whether a stored warm-up's timings have the shape ``Engine._time_passes`` gives."""
    if not isinstance(timings, dict) or not isinstance(timings.get("verify"), list) or not timings["verify"]:
        return False
    if not isinstance(timings.get("draft"), list):
        return False
    pairs = all(
        isinstance(p, list | tuple) and len(p) == 2 and isinstance(p[0], int) and _seconds(p[1])
        for p in timings["verify"]
    )
    return pairs and all(_seconds(s) for s in timings["draft"])


def _seconds(value: Any) -> bool:
    return isinstance(value, float) and 0.0 < value < 3600.0


class Engine(TimedArms):
    def __init__(
        self, target: LoadedModel, draft: LoadedModel | None = None, lookup: bool = False, suffix: bool = False
    ) -> None:
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
        self._forgotten: dict[str, int] = {}  # owner -> times forgotten: a stream started before stops recording
        self._suffix = SuffixDrafter(self.history, eos_ids)
        self._drafters: dict[str, Drafter] = {LOOKUP: PromptLookupDrafter(eos_ids), SUFFIX: self._suffix}
        # what passes cost on these models and how often drafts pass: kept across answers
        self.chooser = KChooser()
        self._answers = 0  # answers started: a stream resumed after another started is stale
        self._answer_drafter: Drafter | None = None  # what drafted the latest answer
        # ``auto`` threads on the CPU: re-chosen between answers from the machine's load and
        # the plain passes measured per thread count (None: a fixed number, or not the CPU)
        self.thread_governor: ThreadGovernor | None = None
        # the latest answer's way of sharing the threads with a draft model (``draft_threads``),
        # and the budget to give back when it capped the target's threads
        self.split: Split | None = None
        self._budget: int | None = None
        # the share of a mixed drafter's decoding time its free part's blocks took, over the last
        # few answers (``FREE_SHARE_WEIGHT``): steps that drafting ahead only slows (``_split_for``)
        self.free_share = 0.0
        self.draft_form: WeightsForm | None = None
        if draft is not None:
            self.draft_form = draft.form or WeightsForm(forms.FORM_OF.get(draft.dtype, draft.dtype))
            runner = CachedModel(draft.model, vocab)
            model = self._drafters[DRAFT_MODEL] = ModelDrafter(runner, draft.name, eos_ids)
            # the default: free drafts (this conversation's and earlier ones') where the chooser
            # rates them above the model's, the model's otherwise
            self._drafters[DRAFT_AND_LOOKUP] = self._drafter = MixedDrafter(model, self._suffix)
        elif suffix:
            self._drafter = self._suffix
        elif lookup:
            self._drafter = self._drafters[LOOKUP]

    @classmethod
    def load(
        cls, target: str = DEFAULT_SOURCE, draft: str | None = LOOKUP, options: LoadOptions = LOAD_DEFAULTS
    ) -> Engine:
        """Load the target and the drafter (``draft``: a model source, ``LOOKUP``, ``SUFFIX`` or
        None), as ``options`` say (``LoadOptions``)."""
        apply_threads(options.threads)
        other_load = OtherLoad()  # from here: the load other processes put on the machine while ours loads

        def load_one(source: str, form: str | None, probe: FormProbe | None, draft: bool) -> LoadedModel:
            return load_model(
                source, device=options.device, dtype=options.dtype, weights=form, allow_pickle=options.allow_pickle,
                cpu_kernels=options.cpu_kernels, progress=options.progress, form_probe=probe,
                probe_sizes=forms.DRAFT_SIZES if draft else forms.TARGET_SIZES, draft=draft,
            )

        loaded = load_one(target, options.weights, options.target_probe, False)
        engine = cls._with_drafter(loaded, draft, options.draft_weights, load_one, options.draft_probe)
        if parse_threads(options.threads) is None and loaded.device.type == "cpu":
            engine.thread_governor = ThreadGovernor(physical_cores(), other_load)
        return engine

    @classmethod
    def _with_drafter(
        cls,
        loaded: LoadedModel,
        draft: str | None,
        asked: str | None,
        load_one: Callable[[str, str | None, FormProbe | None, bool], LoadedModel],
        draft_probe: FormProbe | None,
    ) -> Engine:
        if draft is None or draft in (LOOKUP, SUFFIX):
            return cls(loaded, lookup=draft == LOOKUP, suffix=draft == SUFFIX)
        target_form = loaded.form.form if loaded.form is not None else forms.FORM_OF.get(loaded.dtype, "fp32")
        follow = asked is None or asked.strip().lower() == "same as target"
        if not follow and forms.parse_weights(asked) == forms.AUTO and loaded.device.type != "cpu":
            follow = True  # auto off the CPU: the target's form
        draft_model = load_one(draft, target_form if follow else asked, draft_probe, True)
        if follow and draft_model.form is not None:
            draft_model.form = replace(draft_model.form, reason="same_as_target")
        # its head over the tokens it is likely to draft (``draft_head``): a draft's numbers never
        # change the answer, and a large vocabulary's head is a quarter of a small draft's pass
        head = restrict_draft_head(draft_model.model, draft_model.tokenizer, draft_model.vocab_size)
        if head and draft_model.form is not None:
            draft_model.form = replace(draft_model.form, head=head)
        return cls(loaded, draft_model)

    def warm_up(self) -> None:
        """Run each model once on the shapes decoding uses (a prompt, one token, a draft
        block): the first forward passes of a process pay one-off kernel set-up (~1.5 s on
        2 CPU cores), which would otherwise land on the first answer and skew a comparison.
        With ``auto`` threads, the thread count the machine allows is measured first. Then the
        k chooser's first points: a target pass per block size and a draft step, for each way
        this thread budget can share the threads with a draft model (``draft_threads``), timed
        here once per model files and machine and kept (``measured``: 0.7 s of the bundled
        model's launch), else read back (decoding keeps measuring)."""
        self._give_back_threads()
        models = self._runners()
        for runner in models:
            runner.forward([0] * 16, keep=1)
            runner.forward([0], keep=1)
            runner.forward([0] * 6)
            runner.truncate(16)
        self._measure_threads()
        budget = torch.get_num_threads()
        splits = [Split(budget)]
        if self._may_draft_ahead(budget):
            splits.append(Split(budget, ahead=True))
        for split in splits:
            costs = self.chooser.use(split)
            costs.context = len(self._target_kv.tokens)  # a short context: the first band
            timings = self._kept_timings(split)
            for tokens, seconds in timings["verify"]:  # in the order timed: a ratio is to the plain pass before it
                costs.observe_verify(tokens, seconds)
            for seconds in timings["draft"]:
                costs.observe_draft(1, seconds)
            costs.keep_shape()  # what this machine's passes cost by size: the prior for later bands
        self.chooser.use(splits[0])
        for runner in models:
            runner.reset()
        head = self.template_head()
        self._target_kv.keep_head(head)
        draft = self._drafters.get(DRAFT_MODEL)
        if isinstance(draft, ModelDrafter):
            draft.keep_head(head)
        self._adopt_acceptance()

    def template_head(self) -> list[int]:
        """The ids every conversation's prompt begins with: where the chat template's renderings
        of two different one-line questions agree (a default system prompt, the user's header;
        a BOS alone, or nothing, without a template)."""
        try:
            one = self._encode([{"role": "user", "content": "A"}], continue_answer=False)
            other = self._encode([{"role": "user", "content": "Z"}], continue_answer=False)
        except _template_refusals():  # a template that refuses such a chat: no head
            return []
        n = 0
        while n < min(len(one), len(other)) and one[n] == other[n]:
            n += 1
        return one[:n]

    @functools.cached_property
    def _acceptance_key(self) -> list[str] | None:
        """What a draft model's acceptance depends on: the two models' files and the draft's form
        (None: no draft model, or one not read from a file). Both are the engine's for its life:
        asked once, not after every answer."""
        if self.draft is None or self.draft_form is None:
            return None
        identities = [source_identity(model.source) for model in (self.target, self.draft)]
        if None in identities:
            return None
        return [*(i for i in identities if i is not None), self.draft.weights_label]

    def _adopt_acceptance(self) -> None:
        """The draft model's acceptance an earlier engine of the same pair kept: the chooser
        starts from it instead of its prior, so one run's verdict on the draft model does not
        hang on its first few drafts, nor differ from the last run's (``KEPT_TRIALS`` at most)."""
        key = self._acceptance_key
        kept = measured_store().get(DRAFT_ACCEPTANCE, key) if key else None
        if isinstance(kept, list) and len(kept) == 2 and all(isinstance(v, (int, float)) for v in kept):
            hits, trials = (float(v) for v in kept)
            scale = min(1.0, KEPT_TRIALS / trials) if trials > 0 else 0.0
            self.chooser.acceptance.adopt(MODEL_KEY, hits * scale, trials * scale)

    def _keep_acceptance(self) -> None:
        """After an answer: the draft model's acceptance evidence now, for the next engine."""
        key = self._acceptance_key
        if key and self.chooser.acceptance.judged[MODEL_KEY]:
            hits, trials = self.chooser.acceptance.kept(MODEL_KEY)
            measured_store().put(DRAFT_ACCEPTANCE, key, [round(hits, 3), round(trials, 3)])

    def _kept_timings(self, split: Split) -> dict[str, list[Any]]:
        """The timings kept for these models on this machine, else timed now (and kept)."""
        key = self._timings_key(split)
        kept = measured_store().get(WARM_UP_TIMINGS, key) if key else None
        if _timings_valid(kept):
            return kept
        timings = self._time_passes(split)
        if key:
            measured_store().put(WARM_UP_TIMINGS, key, timings)
        return timings

    def _time_passes(self, split: Split) -> dict[str, list[Any]]:
        """The target's passes per block size and the draft model's steps, shared as ``split`` says."""
        model = model_of(self._drafter)
        if not split.ahead or model is None:
            return time_in_turn(self._target_kv, model)
        with torch_threads(split.target_threads):
            return time_ahead(self._target_kv, model)

    def _timings_key(self, split: Split) -> list[str] | None:
        """What the warm-up's timings depend on: the models' files and forms, the threads and how
        they are shared, the machine and the build of SpecChat's kernels (None: a model not read
        from a file, whose timings are not kept)."""
        shared = " (the draft model ahead on one)" if split.ahead else ""
        parts = [machine_description(), f"{split.threads} threads{shared}", native.build_id()]
        parts.append(f"{DRAFT_STEPS} draft steps over {DRAFT_STEP_TOKENS} tokens")  # how they were timed
        for model in (self.target, self.draft if model_of(self._drafter) is not None else None):
            if model is None:
                continue
            identity = source_identity(model.source)
            if identity is None:
                return None
            parts += [identity, str(model.device), model.weights_label, repr(model.kernels)]
        return parts

    def start_arm(self) -> Callable[[], ArmConditions]:
        """Before one arm of a comparison (on caches ``reset`` left, which it leaves as they were):
        time a plain pass (the median of ``ARM_PROBE_PASSES``) and start measuring the load of
        other processes. Call what it returns when the arm is over: what the machine did meanwhile."""
        self._give_back_threads()
        times = sorted(timed_pass(self._target_kv, 1) for _ in range(ARM_PROBE_PASSES))
        others = OtherLoad()

        def done() -> ArmConditions:
            return ArmConditions(times[len(times) // 2], others(), torch.get_num_threads(), os.cpu_count() or 0)

        return done

    def _measure_threads(self) -> None:
        """With ``auto`` threads on an idle machine: time a few plain passes at the current
        thread count and at the count the load allows, so the first answer already runs on the
        faster one (a busy machine measures nothing: more threads there would collapse)."""
        governor = self.thread_governor
        if governor is None:
            return
        now, others = torch.get_num_threads(), governor.load()  # load: since the engine was made
        allowed = governor.choose(others)
        if allowed != now:
            for threads in (now, allowed, now, allowed):  # interleaved: a burst of load hits both
                torch.set_num_threads(threads)
                governor.observe(threads, timed_pass(self._target_kv, 1))
        torch.set_num_threads(governor.choose(others))

    def _tune_threads(self) -> None:
        """Between answers: the thread count the machine's load and the measured passes allow."""
        governor = self.thread_governor
        if governor is not None:
            threads = governor.choose(governor.load())
            if threads != torch.get_num_threads():
                torch.set_num_threads(threads)

    def _split_for(self, drafter: Drafter | None, config: GenerationConfig) -> Split:
        """How an answer by ``drafter`` shares this budget's threads (``draft_threads``): ahead
        where a draft model on the CPU is expected to be faster so at the acceptance the chooser
        has learnt (greedy or seed-invariant sampling: no random draws shared by two threads;
        standard sampling drafts in turn), in turn otherwise. On a GPU the two share one device,
        so they draft in turn. ``DRAFT_AHEAD_ENV`` "0" always drafts in turn, "1" always ahead,
        even on one thread (the tests)."""
        budget = self._budget if self._budget is not None else torch.get_num_threads()
        one_stream = config.greedy or config.sampling == "seed-invariant"
        if model_of(drafter) is None or self.target.device.type != "cpu" or not one_stream:
            return Split(budget)
        asked = os.environ.get(DRAFT_AHEAD_ENV, "").strip()
        if asked in ("0", "1"):
            return Split(budget, ahead=asked == "1")
        if not self._may_draft_ahead(budget):
            return Split(budget)
        ahead = Split(budget, ahead=True)
        ways = self.chooser.ways
        faster = ahead_is_faster(
            ways.get(Split(budget), CostModel()),
            ways.get(ahead, CostModel()),
            self.chooser.acceptance.alpha(MODEL_KEY),
            config.k,
            None if config.auto_k else config.k,
            free_share=self.free_share if isinstance(drafter, MixedDrafter) and config.auto_k else 0.0,
        )
        return ahead if faster else Split(budget)

    def _may_draft_ahead(self, budget: int) -> bool:
        """Whether a draft model could draft ahead on this budget: on the CPU, two threads or
        more, not turned off (``DRAFT_AHEAD_ENV``)."""
        asked = os.environ.get(DRAFT_AHEAD_ENV, "").strip()
        return (
            model_of(self._drafter) is not None
            and self.target.device.type == "cpu"
            and asked != "0"
            and (budget >= 2 or asked == "1")
        )

    def _share_threads(self, drafter: Drafter | None, config: GenerationConfig) -> Split:
        """This answer's way of sharing the threads, applied: the target's thread count, the
        draft model's drafting ahead, the chooser's costs of that way."""
        split = self._split_for(drafter, config)
        model = model_of(drafter)
        if model is not None:
            model.ahead = split.ahead
        if split.target_threads != torch.get_num_threads():
            self._budget = split.threads
            torch.set_num_threads(split.target_threads)
        self.chooser.use(split)
        self.split = split
        return split

    def _give_back_threads(self) -> None:
        """After an answer that capped the target's threads: the budget again."""
        if self._budget is not None:
            torch.set_num_threads(self._budget)
            self._budget = None

    @property
    def forward_seconds(self) -> float:
        """Seconds spent inside the models' forward passes so far (target and draft)."""
        return sum(r.forward_s for r in self._runners())

    def _runners(self) -> list[CachedModel]:
        """The target's cached model, then the draft model's if there is one."""
        model = model_of(self._drafter)
        draft = [model.runner] if model is not None else []
        return [self._target_kv, *draft]

    @property
    def target_name(self) -> str:
        return self.target.name

    @property
    def drafter_name(self) -> str:
        return self._drafter.name if self._drafter is not None else "none"

    @property
    def drafter_choices(self) -> list[str]:
        """What ``AnswerOptions.drafter_choice`` may name here: ``LOOKUP`` and ``SUFFIX``
        always, ``DRAFT_MODEL`` and ``DRAFT_AND_LOOKUP`` when a draft model is loaded."""
        return list(self._drafters)

    @property
    def timed_arms(self) -> Engine:
        """Itself: ``speculative`` off runs the same loop with no drafter, each arm timed (``start_arm``)."""
        return self

    def close(self) -> None:
        """Nothing outside this process to release (the models go with the engine)."""

    def _pick_drafter(self, choice: str | None) -> Drafter | None:
        """The configured drafter (None), or one by name for an experiment."""
        if choice is None:
            return self._drafter
        if choice not in self._drafters:
            raise InvalidSettingError(
                f"no drafter {choice!r} is loaded (available: {', '.join(self._drafters)})"
            )
        return self._drafters[choice]

    def made_by(
        self,
        config: GenerationConfig,
        drafter_choice: str | None = None,
        drafted_by: Drafter | None | Literal["planned"] = "planned",
    ) -> RunProvenance:
        """Which models, dtypes, device and settings make a run with ``config``.
        ``drafted_by``: the drafter an answer actually used (None: the engine skipped the draft
        model for it); by default the one ``config`` and ``drafter_choice`` would use."""
        planned = drafted_by == "planned"
        drafter = self._pick_drafter(drafter_choice) if drafted_by == "planned" else drafted_by
        drafting = config.speculative and drafter is not None
        uses_model = drafting and model_of(drafter) is not None
        draft = self.draft if uses_model else None
        split = self._split_for(drafter if drafting else None, config) if planned or self.split is None else self.split
        on_cpu = self.target.device.type == "cpu"
        return RunProvenance(
            target=self.target.name,
            drafter=drafter.name if drafting and drafter is not None else "none",
            dtype=self.target.dtype,
            device=str(self.target.device),
            draft_dtype=draft.dtype if draft is not None else None,
            config=config.to_dict(),
            exact_context=self.target.kernels.exact_up_to() if self.target.kernels is not None else 0,
            weights=self.target.weights_label,
            draft_weights=draft.weights_label if draft is not None else None,
            cpu_threads=split.threads if on_cpu else None,
            draft_on_own_thread=uses_model and split.ahead,
        )

    def prompt_ids(
        self,
        conversation: Conversation,
        continue_answer: bool = False,
        answer_ids: Sequence[int] | None = None,
    ) -> list[int]:
        """The conversation as token ids, through the model's chat template when it has one.

        ``continue_answer``: the last message is a cut assistant answer to go on with. With
        ``answer_ids`` (the cut answer's exact token ids, as the engine made them) the prompt
        is the one the answer was made from followed by those ids, so the answer goes on
        exactly where it stopped, even inside a character its text could not hold. Without
        them the answer's text is tokenised again (rendered as the assistant's turn without its
        closing end-of-turn), which is exact only when that gives back the same ids."""
        return self._prompt(conversation, continue_answer, answer_ids)[0]

    def answer_ids_problem(self, answer_ids: Sequence[int] | None, made_by: str | None = None) -> str:
        """Why a cut answer's saved token ids cannot be fed to this model ("" when they can):
        ids are only reused with the model (its tokenizer) that made them, named ``made_by``
        (None: not recorded, trusted), and each must be a token of this vocabulary. Continue
        then goes from the answer's text instead."""
        if not answer_ids:
            return ""
        if made_by is not None and made_by != self.target.name:
            return (
                f"This answer was made by {made_by}, whose token ids mean other tokens to "
                f"{self.target.name}: it goes on from the answer's text instead."
            )
        vocab = self.target.vocab_size
        bad = next((i for i in answer_ids if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < vocab), None)
        if bad is not None:
            return (
                f"This answer's saved token id {str(bad)[:24]} is not a token of {self.target.name} "
                f"(0 to {vocab - 1}): it goes on from the answer's text instead."
            )
        return ""

    def _prompt(
        self, conversation: Conversation, continue_answer: bool, answer_ids: Sequence[int] | None
    ) -> tuple[list[int], int]:
        """The prompt's ids, and how many of its last ids are the cut answer being continued."""
        messages = [{k: _text(v) for k, v in m.items()} for m in _messages(conversation)]
        last_user = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
        if not last_user.strip():
            raise PromptError.of("prompt_empty")
        if continue_answer and (messages[-1]["role"] != "assistant" or not messages[-1]["content"].strip()):
            if not (answer_ids and messages[-1]["role"] == "assistant"):
                raise PromptError("There is no answer to continue: the last message is not a partial answer.")
        if continue_answer and answer_ids:
            asked = self._encode(messages[:-1], continue_answer=False)
            ids, answer = asked + [int(i) for i in answer_ids], len(answer_ids)
        elif continue_answer:
            ids = self._encode(messages, continue_answer=True)
            asked = self._encode(messages[:-1], continue_answer=False)
            answer = len(ids) - len(asked) if ids[: len(asked)] == asked else 0
        else:
            ids, answer = self._encode(messages, continue_answer=False), 0
        if len(ids) >= self.target.context_length:
            raise PromptError.of(
                "prompt_too_long", tokens=len(ids), model=self.target.name, limit=self.target.context_length
            )
        return ids, answer

    def _encode(self, messages: list[dict[str, str]], continue_answer: bool) -> list[int]:
        tokenizer = self.target.tokenizer
        if tokenizer.chat_template:
            try:
                encoded: Any = tokenizer.apply_chat_template(
                    messages,
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
        return [int(i) for i in ids]  # a BatchEncoding's ids or a plain list

    def reset(self, whole_prompt: bool = False) -> None:
        """Forget the caches of earlier turns: the next call prefills what follows the chat
        template's head, which the target and a draft model read at the warm-up and keep
        (``CachedModel.keep_head``). ``whole_prompt``: the target forgets the head too and
        prefills the whole prompt, as Hugging Face's ``generate`` does (``bench`` beside it), or
        after a pass that failed half-way (the cache's state unknown)."""
        if whole_prompt:
            self._target_kv.reset()
        else:
            self._target_kv.reset_to_head()
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
        """Drop everything indexed under ``owner`` (a deleted conversation), also what a stream
        running for it would still record: deletion wins over an answer in flight."""
        self.history.forget(owner)
        self._forgotten[owner] = self._forgotten.get(owner, 0) + 1

    def set_remembering(self, on: bool) -> None:
        """Off: forget every conversation and record none until it is on again."""
        self.remembering = on
        if not on:
            self.history.clear()

    def _conversation_ids(self, conversation: Conversation) -> list[int]:
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
        except _template_refusals():  # a template that refuses this chat
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
        options: AnswerOptions = NEW_ANSWER,
    ) -> Iterator[StepEvent]:
        """Answer the conversation, yielding one ``StepEvent`` per target pass; ``options``
        (``AnswerOptions``) say which answer: a cut one to go on with, from its exact ids when
        this model can take them (``answer_ids_problem``), by the configured drafter or one by
        name, indexed under the conversation's id or a rerun indexing nothing.

        The caches follow one answer at a time: once another ``stream`` or ``generate`` has
        started on this engine, resuming this one raises ``StaleStreamError``."""
        self._answers += 1
        answer = self._answers
        self._answer_drafter = None
        answer_ids = options.answer_ids
        if self.answer_ids_problem(answer_ids, options.answer_made_by):
            answer_ids = None  # never fed to the model: the answer's text is tokenised again
        prompt, answer_so_far = self._prompt(conversation, options.continue_answer, answer_ids)
        chosen = self._pick_drafter(options.drafter_choice)
        drafter = chosen if config.speculative else None
        if self.draft is not None and model_of(drafter) is not None:
            extend_draft_head(self.draft.model, prompt)  # the words this conversation brings
        self._answer_drafter = drafter
        self._give_back_threads()
        self._tune_threads()
        split = self._share_threads(drafter, config)
        record = self._recorder(prompt, options)

        def used(actual: Drafter | None) -> None:  # decode may skip a draft model for the answer
            self._answer_drafter = actual

        target = Target(self._target_kv, self.target.tokenizer, self._eos_ids, self.target.context_length, self.chooser)
        steps = decode(target, drafter, prompt, config, cancel, answer_so_far, on_drafter=used)
        governor = self.thread_governor if not split.ahead else None  # a plain pass beside drafting is not one alone
        decoding, free = 0.0, 0.0  # a mixed drafter's decoding seconds, those of its free blocks' steps
        try:
            for step in self._guarded(steps):
                if governor is not None and step.index > 0 and step.k == 0 and not step.rejected:
                    governor.observe(torch.get_num_threads(), step.verify_s)  # a plain pass
                if step.index > 0:
                    decoding += step.draft_s + step.verify_s
                    if (step.accepted or step.rejected) and not (step.draft_passes or step.drafted_ahead):
                        free += step.draft_s + step.verify_s
                record(step)
                yield step  # the consumer stopping here (GeneratorExit) leaves the caches consistent
                if self._answers != answer:
                    steps.close()
                    raise StaleStreamError(
                        "This answer can no longer go on: another answer was generated on the same "
                        "engine since, and the caches now hold that conversation. Start it again."
                    )
        finally:
            if self._answers == answer:  # a later answer owns the threads now
                self._give_back_threads()
            if isinstance(drafter, MixedDrafter) and config.auto_k and decoding > 0.0:
                self.free_share += FREE_SHARE_WEIGHT * (free / decoding - self.free_share)
            if model_of(self._answer_drafter) is not None:
                self._keep_acceptance()

    def _recorder(self, prompt: list[int], options: AnswerOptions) -> Callable[[StepEvent], None]:
        """Index the prompt under the answer's owner (``AnswerOptions.history_id``, else a name
        of its own) and point the suffix drafter at it (a rerun hides the owner's documents);
        what it returns indexes each step's tokens, until the owner is forgotten or remembering
        is turned off. A rerun, or ``record`` off, indexes nothing."""
        owner = options.history_id or f"run {next(self._runs)}"
        recording = options.record and self.remembering and not options.rerun
        forgotten = self._forgotten.get(owner, 0)
        if recording:
            self.history.record(owner, prompt)
        self._suffix.owner = owner
        self._suffix.hidden = owner if options.rerun else None

        def record(step: StepEvent) -> None:
            if recording and self._forgotten.get(owner, 0) == forgotten and self.remembering:
                self.history.extend(owner, [t.id for t in step.tokens])

        return record

    def _guarded(self, steps: Iterator[StepEvent]) -> Iterator[StepEvent]:
        """``steps`` as they come; a pass that fails empties the caches (a half-finished pass
        leaves them in an unknown state), and running out of memory says what to try."""
        while True:
            try:
                step = next(steps)
            except StopIteration:
                return
            except torch.OutOfMemoryError as exc:
                self.reset(whole_prompt=True)
                raise SpecChatError(
                    f"Out of memory while generating on {self.target.device}: try a shorter "
                    "conversation, a smaller k, or a smaller model."
                ) from exc
            except BaseException:
                self.reset(whole_prompt=True)
                raise
            yield step

    def answered_by(self, config: GenerationConfig, drafter_choice: str | None = None) -> RunProvenance:
        """``made_by`` with the drafter the latest answer really used (None: it skipped the draft model)."""
        return self.made_by(config, drafter_choice, drafted_by=self._answer_drafter)


def _template_refusals() -> tuple[type[Exception], ...]:
    """What rendering a chat template raises for a conversation it refuses (jinja2 imported when
    asked: not at start-up)."""
    from jinja2 import TemplateError

    return (TemplateError, ValueError, TypeError, KeyError)
