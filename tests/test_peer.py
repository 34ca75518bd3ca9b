"""``bench --peer``: llama.cpp's tools run beside ours on the same GGUF files, their output read
as llama.cpp prints it. The tools here are stand-in scripts printing llama.cpp's formats (the
real ones are built from llama.cpp's source; see the README's performance section)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from app import cli
from app.bench import peer
from app.engine import Engine, GenerationConfig

BENCH_JSON = '[{"model_filename": "t.gguf", "n_gen": 8, "avg_ts": 40.5, "stddev_ts": 0.3}]'
SPEC_LOG = """
encoded   12 tokens in    0.100 seconds, speed:  120.000 t/s
decoded    8 tokens in    0.250 seconds, speed:   32.000 t/s

n_draft   = 4
n_predict = 8
n_drafted = 10
n_accept  = 6
accept    = 60.000%
"""


def _tool(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text(f"#!/bin/sh\necho \"$@\" >> {folder / 'calls.txt'}\ncat <<'EOF' >&2\n{body}\nEOF\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


@pytest.fixture
def tools(tmp_path) -> Path:
    folder = tmp_path / "llama.cpp" / "build" / "bin"
    folder.mkdir(parents=True)
    _tool(folder, peer.BENCH_TOOL, BENCH_JSON)
    _tool(folder, peer.SPEC_TOOL, SPEC_LOG)
    return folder


def test_the_tools_are_found_in_a_build_folder_and_their_figures_read(tools, tmp_path):
    found = peer.PeerTools.find(tmp_path / "llama.cpp")
    gguf = tmp_path / "t.gguf"
    gguf.write_bytes(b"GGUF")
    files = peer.PeerFiles(gguf, None)
    plain = peer.llama_plain(found, files, 8, 1, peer.run_tool)
    spec = peer.llama_speculative(found, files, "hi", 8, 1, 4, peer.run_tool)
    assert plain.decode_tps == 40.5
    assert spec.decode_tps == pytest.approx(8 / 0.25) and (spec.drafted, spec.accepted) == (10, 6)
    calls = (tools / "calls.txt").read_text().splitlines()
    assert "-t 1" in calls[0] and "-n 8" in calls[0]
    assert "--spec-type ngram-simple" in calls[1] and "--spec-draft-n-max 4" in calls[1] and "--temp 0" in calls[1]


def test_a_prompt_longer_than_llama_cpps_default_batch_gets_a_context_and_batch_that_hold_it(tools, tmp_path):
    """llama-speculative-simple evaluates the prompt in one batch (default 2048): the 3.7k-token
    document of bench_prompts.txt failed with "the prompt exceeds the batch size"."""
    assert peer.peer_context(40, 96) == peer.PEER_CONTEXT
    assert peer.peer_context(3748, 96) == 4096 and peer.peer_context(4000, 96) == 5120
    gguf = tmp_path / "t.gguf"
    gguf.write_bytes(b"GGUF")
    found, files = peer.PeerTools.find(tools), peer.PeerFiles(gguf, None)
    peer.llama_speculative(found, files, "hi", 8, 1, 4, peer.run_tool, context=peer.peer_context(4000, 96))
    assert "-c 5120 -b 5120" in (tools / "calls.txt").read_text()


def test_a_folder_without_the_tools_or_a_target_that_is_not_gguf_is_refused_in_one_sentence(tmp_path):
    with pytest.raises(peer.PeerError, match="does not hold llama-bench"):
        peer.PeerTools.find(tmp_path)
    with pytest.raises(peer.PeerError, match="must be a .gguf file"):
        peer.PeerFiles.of(str(tmp_path), None, None)


def test_a_failing_tool_is_a_message_not_a_traceback(tmp_path):
    broken = tmp_path / "llama-bench"
    broken.write_text("#!/bin/sh\necho 'error: failed to load model' >&2\nexit 3\n")
    broken.chmod(0o755)
    with pytest.raises(peer.PeerError, match=r"llama-bench failed \(exit 3\): error: failed to load model"):
        peer.run_tool([str(broken)])


def test_the_peer_report_interleaves_all_four_kinds_and_checks_ours_is_identical(load_tiny, tools, tmp_path):
    engine = Engine(load_tiny("llama"), lookup=True)
    gguf = tmp_path / "t.gguf"
    gguf.write_bytes(b"GGUF")
    config = GenerationConfig(max_new_tokens=12, k=3)
    report = peer.run(
        engine, peer.PeerTools.find(tools), peer.PeerFiles(gguf, None),
        [{"role": "user", "content": "def add(a, b):\n    return a + b\n"}], config, 1, rounds=4,
    )  # fmt: skip
    assert len(report["rounds"]) == 4 and all(set(row) == set(peer.KINDS) for row in report["rounds"])
    assert report["medians"][peer.LLAMA_PLAIN] == 40.5
    assert report["summary"]["identical"] is True
    ours_spec = report["medians"][peer.OURS_SPEC]
    assert report["summary"]["ours_speculative_vs_llama_speculative"] == pytest.approx(ours_spec / 32.0)
    assert "SpecChat speculative ÷ llama.cpp speculative" in peer.format_report(report)
    json.dumps(report)  # the --json form
    calls = (tools / "calls.txt").read_text()
    assert calls.count(f"-c {peer.PEER_CONTEXT} -b {peer.PEER_CONTEXT}") == 4  # sized to the prompt
    depth = len(engine.prompt_ids([{"role": "user", "content": "def add(a, b):\n    return a + b\n"}]))
    assert calls.count(f"-p 0 -n 12 -d {depth} ") == 4  # llama.cpp's plain decodes after as long a context


def test_the_peer_report_says_how_many_passes_drafted_and_with_which_forms(load_tiny, tools, tmp_path):
    """A figure on a real pair names the draft's form and how many steps drafted at all: the
    rounds count the target passes that verified drafts and the draft model's passes."""
    engine = Engine(load_tiny("llama"), load_tiny("llama"))
    gguf = tmp_path / "t.gguf"
    gguf.write_bytes(b"GGUF")
    messages = [{"role": "user", "content": "def add(a, b):\n    return a + b\n"}]
    fixed = peer.run(
        engine, peer.PeerTools.find(tools), peer.PeerFiles(gguf, gguf), messages,
        GenerationConfig(max_new_tokens=12, k=3, auto_k=False), 1, rounds=2,
    )  # fmt: skip
    for row in fixed["rounds"]:
        ours = row[peer.OURS_SPEC]
        passes = ours["target_passes"]
        assert passes >= ours["passes_with_drafts"] >= passes - 1 > 0  # every pass drafts, the last may not
        assert ours["draft_model_passes"] >= ours["drafted"] > 0
        assert "target_passes" not in row[peer.OURS_PLAIN]
    summary = fixed["summary"]
    assert summary["ours_passes_with_drafts"] == sum(r[peer.OURS_SPEC]["passes_with_drafts"] for r in fixed["rounds"])
    text = peer.format_report(fixed)
    drafted, passes = summary["ours_passes_with_drafts"], summary["ours_target_passes"]
    assert f"{drafted} of {passes} target passes verified drafts" in text
    assert f"SpecChat's weights: {fixed['weights']}; draft: {fixed['draft_form']}" in text


def test_bench_peer_through_the_cli_refuses_a_non_gguf_target(tools, tiny_models, capsys):
    code = cli.main(["bench", "--peer", str(tools), "--target", str(tiny_models["llama"]), "--prompt", "hi"])
    assert code == 2
    assert "must be a .gguf file" in capsys.readouterr().err


def test_no_run_of_ours_drafts_from_another_runs_answer(load_tiny, tools, tmp_path, monkeypatch):
    """The suffix index holds every answer the engine gave; a peer bench answers one prompt over
    and over, so without clearing it the speculative arm copied the target-only arm's answer
    (every draft accepted) where llama.cpp drafts afresh."""
    engine = Engine(load_tiny("llama"), suffix=True)
    gguf = tmp_path / "t.gguf"
    gguf.write_bytes(b"GGUF")
    seen: list[set[str]] = []
    generate = engine.generate

    def spying(*args, **kwargs):
        seen.append(set(engine.history.owners))
        return generate(*args, **kwargs)

    monkeypatch.setattr(engine, "generate", spying)
    messages = [{"role": "user", "content": "the cat sat on the mat and the cat sat on the"}]
    report = peer.run(
        engine, peer.PeerTools.find(tools), peer.PeerFiles(gguf, None), messages,
        GenerationConfig(max_new_tokens=16, k=3), 1, rounds=3,
    )  # fmt: skip
    assert len(seen) == 1 + 3 * 2  # the warm-up, then both of ours each round
    assert all(owners == set() for owners in seen)
    assert report["summary"]["identical"] is True
