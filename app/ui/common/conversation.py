"""A conversation as the app keeps it: messages, and for each answer the tokens with their
provenance, so a restored answer keeps its highlighting. Pure data; JSON in and out.

``from_json`` checks every field's type before building anything: a file that is valid JSON
but not a conversation raises ``InvalidConversation`` (one readable line), never a
``TypeError`` later while it is drawn.

What this version does not understand is kept: fields it does not know (of the conversation
and of each message) go back into the file as they came, and a file written by a newer version
keeps its ``version`` (never lowered to this one's)."""

from __future__ import annotations

import math
import re
import time
import uuid
from dataclasses import dataclass, field, replace
from typing import Any, Literal, get_args

from app.engine.analysis.compare import ComparisonReport
from app.engine.events import (
    UNKNOWN_SOURCE,
    RunProvenance,
    RunResult,
    RunStats,
    StepEvent,
    TargetKind,
    TokenInfo,
    TokenOrigin,
)

RecordKind = Literal["draft", "target", "rejected", "unknown"]  # unknown: a server did not say
Role = Literal["system", "user", "assistant"]
CONTINUABLE = ("cancelled", "max_new_tokens")  # stop reasons that leave an answer cut
CONVERSATION_ID = re.compile(r"[0-9a-f]{32}")  # uuid4().hex: no dot, no separator, no drive
FORMAT_VERSION = 1  # what this version writes; a newer file keeps its own
MESSAGE_FIELDS = frozenset(
    ("role", "content", "records", "stats", "config", "speculative", "drafter", "stop_reason", "error",
     "made_by", "passes")
)  # fmt: skip
CONVERSATION_FIELDS = frozenset(("version", "id", "title", "system_prompt", "created", "updated", "messages"))
MAX_PASS_S = 86_400.0  # a saved pass timing above a day is not a measurement: the timings are set aside


class InvalidConversation(ValueError):
    """Valid JSON that is not a conversation this app wrote (wrong type, unknown kind...)."""


def is_conversation_id(value: object) -> bool:
    return isinstance(value, str) and CONVERSATION_ID.fullmatch(value) is not None


@dataclass(frozen=True)
class TokenRecord:
    """One token as shown: an accepted draft, a target token, or a rejected draft (shown only
    on request, where it was proposed). ``step`` is the target pass that decided it."""

    text: str
    kind: RecordKind
    step: int
    id: int = -1
    p_target: float | None = None
    p_draft: float | None = None
    margin: float | None = None
    origin: TokenOrigin | None = None  # a draft: copied from this conversation or an earlier one

    def to_json(self) -> list[Any]:
        values = [self.text, self.kind, self.step, self.id, self.p_target, self.p_draft, self.margin]
        return values + [self.origin] if self.origin is not None else values

    @classmethod
    def from_json(cls, data: list[Any]) -> TokenRecord:
        if not isinstance(data, list) or len(data) not in (7, 8):  # 7: written before the origin was kept
            raise InvalidConversation("a token record is not a list of 7 or 8 values")
        text, kind, step, id_, p_target, p_draft, margin = data[:7]
        origin = data[7] if len(data) == 8 else None
        return cls(
            _check(text, str, "token text"),
            _check_choice(kind, get_args(RecordKind), "token kind"),
            _check(step, int, "token step"),
            _check(id_, int, "token id"),
            _number_or_none(p_target, "target probability"),
            _number_or_none(p_draft, "draft probability"),
            _number_or_none(margin, "margin"),
            None if origin is None else _check_choice(origin, get_args(TokenOrigin), "token origin"),
        )

    def token_info(self) -> TokenInfo:
        source = {"draft": "draft", "unknown": UNKNOWN_SOURCE}.get(self.kind, "target")
        return TokenInfo(self.id, self.text, source, self.p_target, self.p_draft, self.margin, origin=self.origin)


@dataclass(frozen=True)
class PassRecord:
    """What the records of one target pass do not say: its kind, the drafts asked for, its
    timings. Saved with the answer, so its Why panel works after a restart."""

    step: int
    kind: str  # StepEvent.target_kind
    k: int
    draft_passes: int
    draft_s: float
    verify_s: float
    predicted_speedup: float | None = None  # the k chooser's, for that pass
    # from a server, what its token records cannot tell: the drafts it counted (some rejected
    # without a name), the drafts accepted (some among tokens of unknown source), and the
    # passes the event stands for (a group of unknown tokens may be several)
    server: tuple[int, int, int] | None = None  # (proposed, accepted, passes)

    @classmethod
    def of(cls, step: StepEvent, offset: int = 0, before: RunStats | None = None) -> PassRecord:
        """``before``: the cumulative stats before ``step`` (a server's group of unknown
        tokens keeps its counts only there)."""
        return cls(
            step.index + offset,
            # a continuation's prompt pass stays a prompt pass, not a decode pass of the answer
            step.target_kind,
            step.k,
            step.draft_passes,
            step.draft_s,
            step.verify_s,
            step.predicted_speedup,
            _server_counts(step, before),
        )

    def to_json(self) -> list[Any]:
        values = [self.step, self.kind, self.k, self.draft_passes, self.draft_s, self.verify_s, self.predicted_speedup]
        return values + [list(self.server)] if self.server is not None else values

    @classmethod
    def from_json(cls, data: list[Any]) -> PassRecord:
        if not isinstance(data, list) or len(data) not in (7, 8):  # 8: a server's counts
            raise InvalidConversation("a pass record is not a list of 7 or 8 values")
        step, kind, k, draft_passes, draft_s, verify_s, predicted = data[:7]
        server = data[7] if len(data) == 8 else None
        if server is not None and not (
            isinstance(server, list) and len(server) == 3 and all(_is_count(v) for v in server)
        ):
            raise InvalidConversation("a pass record's server counts are not three counts")
        return cls(
            _check(step, int, "pass index"),
            _check_choice(kind, get_args(TargetKind), "pass kind"),
            _check(k, int, "pass k"),
            _check(draft_passes, int, "draft passes"),
            _number(draft_s, "draft seconds"),
            _number(verify_s, "verify seconds"),
            _number_or_none(predicted, "predicted speed-up"),
            None if server is None else (server[0], server[1], server[2]),
        )


def _server_counts(step: StepEvent, before: RunStats | None) -> tuple[int, int, int] | None:
    """What a server's step holds that its token records do not (None: a local pass), from
    the step's cumulative stats; ``before``: the run's stats before it (None: the run's first)."""
    if not step.unattributed and not step.rejected_unseen:
        return None
    before = before or RunStats()
    return (
        step.stats.proposed - before.proposed,
        step.stats.accepted - before.accepted,
        step.stats.target_passes - before.target_passes,
    )


def _pass_records(steps: tuple[StepEvent, ...]) -> list[PassRecord]:
    """One record per real pass (a cancelled run ends with an event that ran none)."""
    records, before = [], None
    for step in steps:
        if step.tokens or step.rejected:
            records.append(PassRecord.of(step, before=before))
        before = step.stats
    return records


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def steps_from_records(
    records: list[TokenRecord], passes: list[PassRecord], first: RunStats
) -> tuple[StepEvent, ...]:
    """The answer's step events rebuilt from its token records and pass records (the tokens of
    each pass by their ``step``); their cumulative stats restart from ``first`` (its prompt
    sizes). Empty when the passes were not saved (an answer from an older version)."""
    by_step: dict[int, list[TokenRecord]] = {}
    for record in records:
        by_step.setdefault(record.step, []).append(record)
    steps: list[StepEvent] = []
    stats = RunStats(prompt_tokens=first.prompt_tokens, reused_prompt_tokens=first.reused_prompt_tokens)
    for p in passes:
        mine = by_step.get(p.step, [])
        accepted = tuple(r.token_info() for r in mine if r.kind == "draft")
        target = next((r.token_info() for r in mine if r.kind == "target"), None)
        rejected = tuple(r.token_info() for r in mine if r.kind == "rejected")
        unattributed = tuple(r.token_info() for r in mine if r.kind == "unknown")
        proposed, server_accepted, passes = p.server or (len(accepted) + len(rejected), len(accepted), 1)
        unseen = proposed - server_accepted - len(rejected) if p.server is not None and not unattributed else 0
        seconds = p.draft_s + p.verify_s
        stats = replace(
            stats,
            new_tokens=stats.new_tokens + len(accepted) + (target is not None) + len(unattributed),
            target_passes=stats.target_passes + passes,
            draft_passes=stats.draft_passes + p.draft_passes,
            proposed=stats.proposed + proposed,
            accepted=stats.accepted + server_accepted,
            prefill_s=stats.prefill_s + (seconds if p.step == 0 else 0.0),
            decode_s=stats.decode_s + (seconds if p.step > 0 else 0.0),
        )
        steps.append(
            StepEvent(
                index=p.step,
                accepted=accepted,
                target=target,
                rejected=rejected,
                target_kind=p.kind,  # type: ignore[arg-type]
                k=p.k,
                draft_s=p.draft_s,
                verify_s=p.verify_s,
                stats=stats,
                draft_passes=p.draft_passes,
                predicted_speedup=p.predicted_speedup,
                rejected_unseen=unseen,
                unattributed=unattributed,
            )
        )
    return tuple(steps)


def records_from_step(step: StepEvent) -> list[TokenRecord]:
    """Accepted drafts, then the rejected drafts (where they were proposed), then the target's
    own token that replaced them."""

    def record(t: TokenInfo, kind: RecordKind) -> TokenRecord:
        return TokenRecord(t.text, kind, step.index, t.id, t.p_target, t.p_draft, t.margin, t.origin)

    records = [record(t, "draft" if t.source == "draft" else "target") for t in step.accepted]
    records += [record(t, "rejected") for t in step.rejected]
    if step.target is not None:
        records.append(record(step.target, "draft" if step.target.source == "draft" else "target"))
    records += [record(t, "unknown") for t in step.unattributed]  # a server did not say which
    return records


@dataclass(eq=False)  # identity: two turns with the same text are still two turns
class Message:
    """A turn. Answers also carry how they were made (tokens, stats, config, drafter)."""

    role: Role
    content: str
    records: list[TokenRecord] = field(default_factory=list)
    stats: dict[str, Any] | None = None  # RunStats fields
    config: dict[str, Any] | None = None  # GenerationConfig fields
    speculative: bool = False
    drafter: str = "none"
    stop_reason: str | None = None
    error: str | None = None
    made_by: RunProvenance | None = None  # which models and settings made it; None in old files
    passes: list[PassRecord] = field(default_factory=list)  # timings per pass; empty in old files
    result: RunResult | None = field(default=None, compare=False, repr=False)  # not saved
    comparison: ComparisonReport | None = field(default=None, compare=False, repr=False)  # not saved
    extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)  # fields not understood
    streamed: RunStats | None = field(default=None, compare=False, repr=False)  # the last streamed step's; not saved
    asked_server: str | None = field(default=None, compare=False, repr=False)  # the server asked to answer; not saved

    @property
    def run_stats(self) -> RunStats:
        return RunStats.from_dict(self.stats or {})

    def add_step(self, step: StepEvent, after: RunStats | None = None) -> None:
        """Append a streamed step; ``after``: the stats of the cut answer this run continues."""
        offset = after.target_passes if after is not None else 0
        before, self.streamed = self.streamed, step.stats
        self.records.extend(replace(r, step=r.step + offset) for r in records_from_step(step))
        if step.tokens or step.rejected:  # a real pass (a cancelled run ends with one that ran none)
            self.passes.append(PassRecord.of(step, offset, before))
        self.content += step.text
        self.stats = _stats_fields(after.followed_by(step.stats) if after is not None else step.stats)
        if step.stop_reason:
            self.stop_reason = step.stop_reason

    @property
    def can_continue(self) -> bool:
        """A cut answer (stopped, or out of new tokens) that generation can go on with."""
        started = bool(self.content) or self.token_ids() is not None  # cut inside its first character: ids only
        return self.role == "assistant" and started and self.stop_reason in CONTINUABLE

    def token_ids(self) -> tuple[int, ...] | None:
        """The answer's exact token ids (what Continue goes on from), or None when a record
        lacks its id (a file from a version that did not save them)."""
        ids = tuple(r.id for r in self.records if r.kind != "rejected")
        return ids if ids and min(ids) >= 0 else None

    def finish_continuation(self, result: RunResult, before_text: str, before: RunStats) -> None:
        """The answer is now two runs: the cut one (``before``) and ``result``."""
        self.result = None  # run_result() rebuilds one run from the records
        self.streamed = None
        self.comparison = None  # it compared the cut answer
        self.content = before_text + result.text
        self.stats = _stats_fields(before.followed_by(result.stats))
        self.stop_reason = result.stop_reason

    def finish(self, result: RunResult) -> None:
        """Take the final word from the engine's result (text, stats, stop reason)."""
        self.result = result
        self.streamed = None
        self.comparison = None  # a comparison of an earlier answer here is not this one's
        self.content = result.text
        self.stats = _stats_fields(result.stats)
        self.passes = _pass_records(result.steps)
        self.stop_reason = result.stop_reason
        self.speculative = result.speculative
        self.drafter = result.drafter
        self.made_by = result.made_by

    def run_result(self) -> RunResult:
        """The engine's result if this session made it, else one rebuilt from what was saved."""
        if self.result is not None:
            return self.result
        tokens = tuple(r.token_info() for r in self.records if r.kind != "rejected")
        return RunResult(
            text=self.content,
            tokens=tokens,
            steps=steps_from_records(self.records, self.passes, self.run_stats),
            stats=self.run_stats,
            stop_reason=self.stop_reason or "cancelled",  # type: ignore[arg-type]
            speculative=self.speculative,
            drafter=self.drafter,
            config=dict(self.config or {}),
            made_by=self.made_by,
        )

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.role == "assistant":
            data.update(
                records=[r.to_json() for r in self.records],
                stats=self.stats,
                config=self.config,
                speculative=self.speculative,
                drafter=self.drafter,
                stop_reason=self.stop_reason,
                error=self.error,
                made_by=None if self.made_by is None else self.made_by.to_dict(),
                passes=[p.to_json() for p in self.passes],
            )
        data.update((k, v) for k, v in self.extra.items() if k not in data)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Message:
        data = _check(data, dict, "message")
        return cls(
            role=_check_choice(data.get("role"), get_args(Role), "message role"),
            content=_check(data.get("content", ""), str, "message content"),
            records=[TokenRecord.from_json(r) for r in _check(data.get("records") or [], list, "records")],
            stats=_stats_or_none(data.get("stats")),
            config=_check_or_none(data.get("config"), dict, "generation settings"),
            speculative=_check(data.get("speculative", False), bool, "speculative"),
            drafter=_check(data.get("drafter", "none"), str, "drafter"),
            stop_reason=_check_or_none(data.get("stop_reason"), str, "stop reason"),
            error=_check_or_none(data.get("error"), str, "error"),
            made_by=_provenance(data.get("made_by")),
            passes=_credible([PassRecord.from_json(p) for p in _check(data.get("passes") or [], list, "passes")]),
            extra={k: v for k, v in data.items() if k not in MESSAGE_FIELDS},
        )


@dataclass(eq=False)
class Conversation:
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    title: str = ""
    system_prompt: str = ""
    messages: list[Message] = field(default_factory=list)
    created: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)
    version: int = FORMAT_VERSION  # of the file it came from: a newer one is kept, never lowered
    extra: dict[str, Any] = field(default_factory=dict, repr=False)  # top-level fields not understood

    def prompt(self, upto: int | None = None) -> list[dict[str, str]]:
        """What the engine gets: the system prompt, then the turns before ``upto``."""
        turns = self.messages if upto is None else self.messages[:upto]
        chat = [{"role": "system", "content": self.system_prompt}] if self.system_prompt.strip() else []
        chat += [{"role": m.role, "content": m.content} for m in turns if m.content or m.role == "user"]
        return chat

    def context_tokens(self) -> int:
        """Tokens of the context window the conversation filled at its last answer."""
        for message in reversed(self.messages):
            if message.role == "assistant" and message.stats:
                return message.run_stats.context_tokens
        return 0

    def matches(self, query: str) -> bool:
        """Full-text search: every word of ``query`` is in the title or in some message."""
        words = query.casefold().split()
        if not words:
            return True
        haystack = "\n".join([self.title, self.system_prompt] + [m.content for m in self.messages]).casefold()
        return all(word in haystack for word in words)

    def to_json(self) -> dict[str, Any]:
        data = {
            "version": max(self.version, FORMAT_VERSION),
            "id": self.id,
            "title": self.title,
            "system_prompt": self.system_prompt,
            "created": self.created,
            "updated": self.updated,
            "messages": [m.to_json() for m in self.messages],
        }
        # after the messages, so the header the list reads stays short
        data.update((k, v) for k, v in self.extra.items() if k not in data)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Conversation:
        """Raises ``InvalidConversation`` naming the first field that is wrong."""
        data = _check(data, dict, "conversation")
        if not is_conversation_id(data.get("id")):
            raise InvalidConversation(f"id {str(data.get('id'))[:40]!r} is not a conversation id")
        return cls(
            id=data["id"],
            title=_check(data.get("title", ""), str, "title"),
            system_prompt=_check(data.get("system_prompt", ""), str, "system prompt"),
            messages=[Message.from_json(m) for m in _check(data.get("messages", []), list, "messages")],
            created=_number(data.get("created", 0.0), "created"),
            updated=_number(data.get("updated", 0.0), "updated"),
            version=_version(data.get("version", FORMAT_VERSION)),
            extra={k: v for k, v in data.items() if k not in CONVERSATION_FIELDS},
        )


def _version(value: Any) -> int:
    """The file's format version (a whole number; anything else reads as this version's)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else FORMAT_VERSION


def _credible(passes: list[PassRecord]) -> list[PassRecord]:
    """Pass timings as saved, or none when one is beyond any real pass (a hand-edited 1e308):
    the answer then reads like one saved before timings were kept, and Why explains the rest."""
    if any(not 0.0 <= p.draft_s <= MAX_PASS_S or not 0.0 <= p.verify_s <= MAX_PASS_S for p in passes):
        return []
    return passes


def _provenance(data: Any) -> RunProvenance | None:
    """An answer's provenance, or None: files written before it was recorded have none."""
    try:
        return RunProvenance.from_dict(data) if isinstance(data, dict) else None
    except TypeError:  # a field missing: as good as unrecorded
        return None
def _check(value: Any, kind: type, what: str) -> Any:
    """``value`` if it is a ``kind`` (a bool is not an int here), else InvalidConversation."""
    if isinstance(value, kind) and (kind is bool or not isinstance(value, bool)):
        return value
    raise InvalidConversation(f"{what}: expected {kind.__name__}, found {type(value).__name__}")


def _check_or_none(value: Any, kind: type, what: str) -> Any:
    return None if value is None else _check(value, kind, what)


def _check_choice(value: Any, choices: tuple[str, ...], what: str) -> Any:
    if value not in choices:
        raise InvalidConversation(f"{what} {str(value)[:40]!r} is not one of {', '.join(choices)}")
    return value


def _number(value: Any, what: str, finite: bool = True) -> float:
    """A JSON number; a margin may be infinite (a single finite logit), a time may not."""
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if is_number and (not finite or math.isfinite(value)):
        return float(value)
    raise InvalidConversation(f"{what}: expected a number, found {str(value)[:40]!r}")


def _number_or_none(value: Any, what: str) -> float | None:
    return None if value is None else _number(value, what, finite=False)


def _stats_or_none(value: Any) -> dict[str, Any] | None:
    """Statistics: a dict whose known fields are numbers (unknown ones are ignored)."""
    if value is None:
        return None
    stats = _check(value, dict, "statistics")
    for name in RunStats.__dataclass_fields__:
        if name in stats:
            _number(stats[name], f"statistic {name}", finite=False)
    return stats


def _stats_fields(stats: RunStats) -> dict[str, Any]:
    return {name: getattr(stats, name) for name in RunStats.__dataclass_fields__}
