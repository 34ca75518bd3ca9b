"""One back-end contract (app.engine.backend): the local engine and a server session both are a
``Backend``, answer through the one ``generate``, and every ``AnswerOptions`` field means the
same on both. This module is checked by ``mypy --strict``: the assignments below are the
static proof that both classes implement the protocol."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
from remote_replay import recording, replay_session

from app.engine.backend import AnswerOptions, Backend, TimedArms
from app.engine.config import GenerationConfig
from app.engine.session import Engine
from app.remote.llamacpp import COMPLETION_PATH
from app.remote.session import ServerSession

ROOT = Path(__file__).resolve().parents[1]


def as_backend(engine: Engine, session: ServerSession) -> tuple[Backend, Backend, TimedArms]:
    """Static: mypy rejects this function if either class stops implementing the protocol."""
    return engine, session, engine


def test_both_back_ends_are_backends_and_only_the_engine_runs_both_arms(load_tiny: Any) -> None:
    engine = Engine(load_tiny("llama"), lookup=True)
    session = replay_session("llamacpp-ngram")
    local, server, arms = as_backend(engine, session)
    assert isinstance(local, Backend) and isinstance(server, Backend)
    assert isinstance(arms, TimedArms) and not isinstance(server, TimedArms)
    assert engine.timed_arms is engine and session.timed_arms is None
    assert engine.drafter_choices and session.drafter_choices == []


def _asked_bodies(name: str) -> tuple[ServerSession, list[dict[str, Any]]]:
    """A replayed llama.cpp session, and the body of every completion request it sends."""
    bodies: list[dict[str, Any]] = []

    def note(request: httpx.Request) -> None:
        if request.url.path == COMPLETION_PATH:
            bodies.append(json.loads(request.content))

    return replay_session(name, handler=note), bodies


def test_a_rerun_on_a_server_does_not_reuse_its_cached_prompt() -> None:
    data = recording("llamacpp-ngram")
    session, bodies = _asked_bodies("llamacpp-ngram")
    config = GenerationConfig(max_new_tokens=data["max_new_tokens"])
    first = session.generate(data["prompt"], config, options=AnswerOptions(history_id="c1"))
    again = session.generate(data["prompt"], config, options=AnswerOptions(history_id="c1", rerun=True))
    assert [body["cache_prompt"] for body in bodies] == [True, False]
    assert again.text == first.text and again.made_by == first.made_by


def test_a_server_continues_from_the_text_whoever_made_the_ids() -> None:
    """``answer_made_by`` and ``answer_ids`` reach the server's stream through the one
    ``generate``; a chat endpoint takes no ids, so the request is the same either way."""
    data = recording("llamacpp-ngram")
    session, bodies = _asked_bodies("llamacpp-ngram")
    chat = [{"role": "user", "content": data["prompt"]}, {"role": "assistant", "content": "The"}]
    config = GenerationConfig(max_new_tokens=data["max_new_tokens"])
    from_text = session.generate(chat, config, options=AnswerOptions(continue_answer=True))
    foreign = AnswerOptions(continue_answer=True, answer_ids=(1, 2, 3), answer_made_by="another model")
    assert session.answer_ids_problem(foreign.answer_ids, foreign.answer_made_by) == ""
    from_ids = session.generate(chat, config, options=foreign)
    assert bodies[0] == bodies[1] and from_ids.text == from_text.text


def test_the_contract_imports_without_torch() -> None:
    code = "import sys, app.engine.backend; assert 'torch' not in sys.modules, 'torch was imported'"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
