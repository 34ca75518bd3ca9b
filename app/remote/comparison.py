"""With and without speculation against servers: one conversation on a speculative endpoint
and on a plain one, fairly, compared by the engine's own comparison (``compare_runs``).

Neither llama.cpp nor vLLM can turn speculation off for one request, so a comparison names two
endpoints (two URLs, or one llama.cpp router with two model names). Fair: the same messages
and settings (greedy, the same seed), a fixed number of new tokens (``ignore_eos``), llama.cpp's
prompt cache off, a warm-up request on each, then rounds in the order A B B A (so a drift in
the machine's load falls on both). Each arm's run with the median decode speed (the slower
middle one for an even count) is the one compared; every round is kept in the report. Which
endpoint really drafted is read from the answers, and said when it is not what was asked.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import Any

from app.engine.analysis.compare import ComparisonReport, Phrase, compare_runs
from app.engine.analysis.explanation import decode_tokens_per_s
from app.engine.backend import Conversation
from app.engine.config import GenerationConfig
from app.engine.events import RunResult
from app.engine.i18n import QT_TRANSLATE_NOOP
from app.remote.chat import RequestOptions
from app.remote.session import ServerSession
from app.remote.steps import ServerFigures
from app.remote.vllm import DETAILED_METRICS_FLAG

ARMS = ("speculative", "baseline")
ROUND_ORDER = ("speculative", "baseline", "baseline", "speculative")  # A B B A
FAIR = RequestOptions(fixed_length=True, prompt_cache=False)
CACHE_POLICY = "servers: warm-up request each, prompt cache off, fixed length, rounds A B B A"

CHECKS = {
    "spec_drafted_nothing": QT_TRANSLATE_NOOP(
        "CompareDialog",
        "The speculative endpoint ({server}) drafted nothing for this conversation: it may not be "
        "started with speculation, or its drafter found nothing to propose.",
    ),
    "spec_no_figures_vllm": QT_TRANSLATE_NOOP(
        "CompareDialog",
        "The speculative endpoint ({server}) sent no speculation figures: start vLLM with "
        "--speculative-config and {flag} to see what it drafted.",
    ),
    "plain_drafts": QT_TRANSLATE_NOOP(
        "CompareDialog",
        "The plain endpoint ({server}) drafted too ({accepted} of {drafted} drafts accepted): this "
        "compares two speculative servers, not with and without.",
    ),
    "no_figures": QT_TRANSLATE_NOOP(
        "CompareDialog",
        "{server} reports no speculation figures: SpecChat cannot tell whether it drafted.",
    ),
    "same_endpoint": QT_TRANSLATE_NOOP(
        "CompareDialog",
        "Both arms name the same server and model: nothing tells them apart.",
    ),
}


@dataclass(frozen=True)
class ServerRound:
    """One request of the comparison, in the order it ran."""

    arm: str  # "speculative" or "baseline"
    result: RunResult
    figures: ServerFigures

    def to_dict(self) -> dict[str, Any]:
        stats = self.result.stats
        return {
            "arm": self.arm,
            "new_tokens": stats.new_tokens,
            "time_to_first_token_s": stats.time_to_first_token_s,
            "decode_tokens_per_s": decode_tokens_per_s(self.result),
            "server_decode_tokens_per_s": self.figures.decode_tokens_per_s,
            "wall_s": stats.wall_s,
            "figures": self.figures.to_dict(),
        }


@dataclass(frozen=True)
class ServerComparisonReport(ComparisonReport):
    """A ``ComparisonReport`` (so Compare and Why show it as any other) with what the servers
    said: who they are, every round, each arm's compared figures, and the checks."""

    servers: tuple[dict[str, Any], ...] = ()  # ServerInfo.to_dict of the speculative, then the plain endpoint
    rounds: tuple[ServerRound, ...] = ()
    figures: tuple[ServerFigures, ...] = ()  # of the compared runs: speculative, baseline
    checks: tuple[Phrase, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        data.update(
            servers=list(self.servers),
            rounds=[r.to_dict() for r in self.rounds],
            server_figures={arm: f.to_dict() for arm, f in zip(ARMS, self.figures)},
            checks=[p.render() for p in self.checks],
        )
        return data


def run_server_comparison(
    speculative: ServerSession,
    plain: ServerSession,
    conversation: Conversation,
    config: GenerationConfig,
    *,
    repeats: int = 1,
    cancel: threading.Event | None = None,
    warm_up: bool = True,
) -> ServerComparisonReport:
    """Both endpoints, ``repeats`` times A B B A (each arm 2 × ``repeats`` requests)."""
    arms = {"speculative": speculative.with_options(FAIR), "baseline": plain.with_options(FAIR)}
    if warm_up:
        for session in arms.values():
            session.warm_up()
    rounds: list[ServerRound] = []
    for arm in ROUND_ORDER * max(1, repeats):
        session = arms[arm]
        result = session.generate(conversation, config, cancel)
        figures = session.last_figures
        assert figures is not None
        rounds.append(ServerRound(arm, result, figures))
        if cancel is not None and cancel.is_set():
            break
    spec_round = _median_round([r for r in rounds if r.arm == "speculative"])
    base_round = _median_round([r for r in rounds if r.arm == "baseline"] or [spec_round])
    spec_run = with_plain_probabilities(spec_round.result, base_round.result)
    return ServerComparisonReport(
        speculative=spec_run,
        baseline=base_round.result,
        comparison=compare_runs(spec_run, base_round.result),
        order=("speculative", "baseline"),
        cache_policy=CACHE_POLICY,
        servers=(speculative.info.to_dict(), plain.info.to_dict()),
        rounds=tuple(rounds),
        figures=(spec_round.figures, base_round.figures),
        checks=endpoint_checks(speculative, plain, rounds),
    )


def _median_round(rounds: list[ServerRound]) -> ServerRound:
    ranked = sorted(rounds, key=lambda r: decode_tokens_per_s(r.result) or 0.0)
    return ranked[(len(ranked) - 1) // 2]


def with_plain_probabilities(speculative: RunResult, plain: RunResult) -> RunResult:
    """The speculative run with the plain run's probabilities and margins on the tokens the
    server gave none for (llama.cpp's verified blocks), up to where the answers part: the same
    token after the same context on the same model, so the same number — not a guess."""
    tokens, changed = list(speculative.tokens), False
    for i, (mine, theirs) in enumerate(zip(speculative.tokens, plain.tokens)):
        if mine.id != theirs.id:
            break
        if mine.p_target is None and theirs.p_target is not None:
            tokens[i] = replace(mine, p_target=theirs.p_target, margin=theirs.margin)
            changed = True
    if not changed:
        return speculative
    by_old = iter(tokens)
    steps = []
    for step in speculative.steps:
        accepted = tuple(next(by_old) for _ in step.accepted)
        target = next(by_old) if step.target is not None else None
        unattributed = tuple(next(by_old) for _ in step.unattributed)
        steps.append(replace(step, accepted=accepted, target=target, unattributed=unattributed))
    return replace(speculative, tokens=tuple(tokens), steps=tuple(steps))


def endpoint_checks(speculative: ServerSession, plain: ServerSession, rounds: list[ServerRound]) -> tuple[Phrase, ...]:
    """What the answers say about which endpoint really speculates."""
    checks: list[Phrase] = []
    if speculative.info.url == plain.info.url and speculative.model == plain.model:
        checks.append(Phrase(CHECKS["same_endpoint"]))
    spec = [r.figures for r in rounds if r.arm == "speculative"]
    base = [r.figures for r in rounds if r.arm == "baseline"]
    for session in (speculative, plain):
        if session.info.kind == "openai":
            checks.append(Phrase(CHECKS["no_figures"], (("server", session.server_name),)))
    if speculative.info.kind == "vllm" and spec and all(f.drafted is None for f in spec):
        values = (("server", speculative.server_name), ("flag", DETAILED_METRICS_FLAG))
        checks.append(Phrase(CHECKS["spec_no_figures_vllm"], values))
    elif speculative.info.kind != "openai" and spec and not any(f.speculated for f in spec):
        checks.append(Phrase(CHECKS["spec_drafted_nothing"], (("server", speculative.server_name),)))
    drafting = next((f for f in base if f.speculated), None)
    if drafting is not None:  # its first answer that drafted
        counts = (("server", plain.server_name), ("drafted", drafting.drafted), ("accepted", drafting.accepted))
        checks.append(Phrase(CHECKS["plain_drafts"], counts))
    return tuple(checks)
