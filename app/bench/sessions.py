"""Bench scenarios where earlier conversations matter: the suffix drafter against prompt
lookup alone and the target alone, on the same models, greedy.

- ``repeat``: each prompt asked, then asked again in a new conversation. Reported per arm:
  target passes per token the first and the second time, and whether the text is the same.
- ``edits``: a multi-turn edit session (a function written, then edited three times, each
  answer returning the whole function). Reported per turn and arm: tokens per second, the
  speed-up over the target alone on the same turn, and whether the answer is the same.

Every arm starts from an empty index; only the suffix arm records its answers (so no arm drafts
from another's), and every run starts from fresh KV caches (all arms prefill alike). Within a
round the arms run in an order rotated each round, as in ``bench.run``.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from app.bench.common import ratio, rotated, short, times
from app.engine.backend import AnswerOptions
from app.engine.config import LOOKUP, SUFFIX, GenerationConfig

if TYPE_CHECKING:
    from app.engine import Engine
    from app.engine.events import RunResult

PLAIN = "none"
ARMS = (PLAIN, LOOKUP, SUFFIX)
ARM_LABELS = {PLAIN: "target alone", LOOKUP: "prompt lookup", SUFFIX: "suffix index + prompt lookup"}
SCENARIOS = ("repeat", "edits")
EDIT_SESSION = (
    "Write a Python function parse_duration(text) that turns strings such as '1h30m', '45s' or '2h' "
    "into a number of seconds. Reply with the whole function in one code block.",
    "Change it so that it also accepts days, as in '1d2h'. Reply with the whole function again.",
    "Now make it raise ValueError with a clear message for an empty or malformed string. Reply with "
    "the whole function again.",
    "Add a docstring with two examples. Reply with the whole function again.",
)
Conversation = list[dict[str, str]]


@dataclass(frozen=True)
class Timed:
    run: RunResult
    seconds: float

    @property
    def tokens_per_s(self) -> float:
        return self.run.stats.new_tokens / self.seconds if self.seconds > 0 else 0.0

    @property
    def passes_per_token(self) -> float:
        return self.run.stats.target_passes / max(1, self.run.stats.new_tokens)

    @property
    def draft_ms_per_pass(self) -> float:
        """What proposing cost per target pass (the index's query included): the per-step overhead."""
        return 1000.0 * statistics.fmean(s.draft_s for s in self.run.steps) if self.run.steps else 0.0


def _timed(engine: Engine, messages: Conversation, config: GenerationConfig, arm: str, owner: str) -> Timed:
    engine.reset()
    speculative = arm != PLAIN
    start = time.perf_counter()
    options = AnswerOptions(drafter_choice=arm if speculative else None, history_id=owner, record=arm == SUFFIX)
    run = engine.generate(messages, replace(config, speculative=speculative), options=options)
    return Timed(run, time.perf_counter() - start)


def run_repeat(engine: Engine, prompts: list[str], config: GenerationConfig, repeat: int = 1) -> dict[str, Any]:
    """Each prompt, then the same prompt in a new conversation, per arm."""
    rows: list[dict[str, Any]] = []
    for index, prompt in enumerate(prompts):
        for r in range(repeat):
            engine.history.clear()
            messages = [{"role": "user", "content": prompt}]
            order = rotated(ARMS, index + r)
            first = {arm: _timed(engine, messages, config, arm, f"{arm} first") for arm in order}
            again = {arm: _timed(engine, messages, config, arm, f"{arm} again") for arm in order}
            reference = first[PLAIN].run.token_ids
            rows.append(
                {
                    "prompt_index": index,
                    "prompt": prompt,
                    "repeat": r,
                    "arms": {
                        arm: {
                            "first_passes_per_token": first[arm].passes_per_token,
                            "again_passes_per_token": again[arm].passes_per_token,
                            "fewer_passes_again": first[arm].passes_per_token / again[arm].passes_per_token,
                            "first_tokens_per_s": first[arm].tokens_per_s,
                            "again_tokens_per_s": again[arm].tokens_per_s,
                            "whole_run_speedup_again": ratio(again[arm].tokens_per_s, again[PLAIN].tokens_per_s),
                            "identical": first[arm].run.token_ids == reference == again[arm].run.token_ids,
                            "tokens": again[arm].run.stats.new_tokens,
                            "draft_ms_per_pass": again[arm].draft_ms_per_pass,
                        }
                        for arm in ARMS
                    },
                }
            )
    return {"scenario": "repeat", "rows": rows, "summary": _summary(rows, "fewer_passes_again", engine, config)}


def run_edits(
    engine: Engine, config: GenerationConfig, repeat: int = 1, turns: tuple[str, ...] = EDIT_SESSION
) -> dict[str, Any]:
    """The edit session, per arm; every arm's conversation goes on with its own answers."""
    rows: list[dict[str, Any]] = []
    for r in range(repeat):
        engine.history.clear()
        chats: dict[str, Conversation] = {arm: [] for arm in ARMS}
        for turn, question in enumerate(turns):
            timed: dict[str, Timed] = {}
            for arm in rotated(ARMS, turn + r):
                chats[arm].append({"role": "user", "content": question})
                timed[arm] = _timed(engine, chats[arm], config, arm, f"{arm} session {r}")
                chats[arm].append({"role": "assistant", "content": timed[arm].run.text})
            reference = timed[PLAIN].run.token_ids
            rows.append(
                {
                    "turn": turn + 1,
                    "repeat": r,
                    "prompt": question,
                    "arms": {
                        arm: {
                            "tokens_per_s": timed[arm].tokens_per_s,
                            "whole_run_speedup": ratio(timed[arm].tokens_per_s, timed[PLAIN].tokens_per_s),
                            "passes_per_token": timed[arm].passes_per_token,
                            "drafts_accepted_share": timed[arm].run.stats.drafts_accepted_share,
                            "identical": timed[arm].run.token_ids == reference,
                            "tokens": timed[arm].run.stats.new_tokens,
                            "draft_ms_per_pass": timed[arm].draft_ms_per_pass,
                        }
                        for arm in ARMS
                    },
                }
            )
    return {"scenario": "edits", "rows": rows, "summary": _summary(rows, "whole_run_speedup", engine, config)}


def _summary(rows: list[dict[str, Any]], key: str, engine: Engine, config: GenerationConfig) -> dict[str, Any]:
    def median(arm: str) -> float | None:
        values = [row["arms"][arm][key] for row in rows if row["arms"][arm][key] is not None]
        return statistics.median(values) if values else None

    return {
        "target": engine.target.name,
        "device": str(engine.target.device),
        "max_new_tokens": config.max_new_tokens,
        "k": config.k,
        "auto_k": config.auto_k,
        f"median_{key}": {arm: median(arm) for arm in ARMS},
        "all_identical": all(row["arms"][arm]["identical"] for row in rows for arm in ARMS),
    }


def format_report(report: dict[str, Any]) -> str:
    lines = []
    if report["scenario"] == "repeat":
        lines.append("the same question in a new conversation: target passes per token, first time -> again")
        for row in report["rows"]:
            lines.append(f"#{row['prompt_index'] + 1} {short(row['prompt'], 60)}")
            for arm in ARMS:
                a = row["arms"][arm]
                lines.append(
                    f"   {ARM_LABELS[arm]:<30} {a['first_passes_per_token']:5.2f} -> {a['again_passes_per_token']:5.2f}"
                    f"  ({a['fewer_passes_again']:4.2f}x fewer)  again "
                    f"{times(a['whole_run_speedup_again'])} the target alone's speed  "
                    f"same text: {'yes' if a['identical'] else 'NO'}"
                )
    else:
        lines.append("edit session: tokens per second by turn, speed-up over the target alone on the same turn")
        for row in report["rows"]:
            lines.append(f"turn {row['turn']} (round {row['repeat'] + 1}): {short(row['prompt'], 60)}")
            for arm in ARMS:
                a = row["arms"][arm]
                lines.append(
                    f"   {ARM_LABELS[arm]:<30} {a['tokens_per_s']:6.1f} tok/s  {times(a['whole_run_speedup'])}  "
                    f"{a['passes_per_token']:4.2f} passes/token  drafts accepted {a['drafts_accepted_share']:4.0%}  "
                    f"{a['tokens']} tokens  drafting {a['draft_ms_per_pass']:.2f} ms/pass  "
                    f"same text: {'yes' if a['identical'] else 'NO'}"
                )
    s = report["summary"]
    lines.append(
        f"{s['target']} on {s['device']}, greedy, max {s['max_new_tokens']} new tokens, "
        f"{'auto k <= ' if s['auto_k'] else 'k='}{s['k']}; answers identical: {'yes' if s['all_identical'] else 'NO'}"
    )
    return "\n".join(lines) + "\n"
