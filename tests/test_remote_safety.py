"""Safe by default against a server: only http(s) URLs, the API key from a named environment
variable and nowhere else, and every misbehaviour — a response that contradicts itself, a
malformed or endless line, NaN, a refused connection, a wrong model, a server error, a dropped
stream, a timeout — one clear message (exit 2 from the CLI), with what came before kept."""

from __future__ import annotations

import json
import socket

import httpx
import pytest
from remote_replay import URL, edit_json, recording, replay_session, replay_transport, sse_chunks

from app.cli.main import main
from app.cli.servers import printable
from app.engine.backend import AnswerOptions
from app.engine.config import GenerationConfig
from app.remote.client import MAX_LINE_BYTES, ServerClient
from app.remote.detect import ServerInfo, choose_model
from app.remote.errors import ServerError, ServerResponseError, UnsafeURLError
from app.remote.session import ServerSession
from app.remote.urls import api_key_from_env, server_url

CONFIG = GenerationConfig(max_new_tokens=40)


def run(name: str, edit=None, **kwargs):
    session = replay_session(name, edit, **kwargs)
    steps = []
    try:
        for step in session.stream(recording(name)["prompt"], CONFIG):
            steps.append(step)
    except ServerError as error:
        return steps, error
    return steps, None


# --- what may be contacted ------------------------------------------------------------------


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "ftp://host/", "javascript:alert(1)", "127.0.0.1:8080", "http://", "",
            "http://user:secret@host:8080", "http://host:99999", "http://host/?next=http://evil"],
)  # fmt: skip
def test_only_plain_http_and_https_urls_are_contacted(url):
    with pytest.raises(UnsafeURLError):
        server_url(url)


def test_a_url_is_kept_as_typed_without_its_v1():
    assert server_url(" https://Example.org:8443/llm/v1/ ") == "https://Example.org:8443/llm"


def test_no_redirect_is_followed_and_no_proxy_taken_from_the_environment(monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:1")
    seen = []

    def handler(request):
        seen.append(str(request.url))
        return httpx.Response(302, headers={"location": "http://elsewhere.invalid/v1/models"})

    client = ServerClient(URL, transport=httpx.MockTransport(handler))
    with pytest.raises(ServerError, match="only talks to the URL you gave"):
        client.get_json("/v1/models")
    assert seen == [f"{URL}/v1/models"]
    assert client._http._trust_env is False


def test_the_api_key_comes_from_the_named_variable_and_only_goes_in_the_header(monkeypatch, caplog):
    monkeypatch.setenv("MY_SERVER_KEY", "s3cret-value")
    headers = []

    def handler(request):
        headers.append(dict(request.headers))
        assert "s3cret-value" not in str(request.url) and b"s3cret-value" not in request.content
        return httpx.Response(200, json={"data": [{"id": "m"}]})

    client = ServerClient(URL, api_key_from_env("MY_SERVER_KEY"), transport=httpx.MockTransport(handler))
    client.get_json("/v1/models")
    assert headers[0]["authorization"] == "Bearer s3cret-value"
    assert "s3cret-value" not in caplog.text


def test_a_missing_or_malformed_key_variable_is_named():
    with pytest.raises(ServerError, match="NOT_SET_ANYWHERE"):
        api_key_from_env("NOT_SET_ANYWHERE")
    with pytest.raises(ServerError, match="not an environment variable name"):
        api_key_from_env("$(rm -rf)")


def test_a_servers_text_reaches_the_terminal_as_text():
    assert printable("ok\x1b]0;owned\x07\x1b[2J\nnext\tcol\x9b") == "ok\\x1b]0;owned\\x07\\x1b[2J\nnext\tcol\\x9b"


# --- answers that contradict themselves -------------------------------------------------------


def _timings(chunks, change):
    """Apply ``change`` to the timings of every chunk that has draft counts."""
    out = []
    for c in chunks:
        if c != "[DONE]":
            data = json.loads(c)
            if "draft_n" in (data.get("timings") or {}):
                change(data["timings"])
            c = json.dumps(data)
        out.append(c)
    return out


def test_more_drafts_accepted_than_proposed_is_refused():
    def more(t):
        t["draft_n_accepted"] = t["draft_n"] + 1

    steps, error = run("llamacpp-ngram", lambda c: _timings(c, more))
    assert isinstance(error, ServerResponseError) and "cannot be" in str(error)
    assert steps and all(not s.drafted for s in steps)  # the tokens before it were kept


def test_draft_counts_that_go_down_are_refused():
    def down(chunks):
        out, n = [], 0
        for c in chunks:
            data = json.loads(c) if c != "[DONE]" else None
            if data and "draft_n" in (data.get("timings") or {}):
                n += 1
                if n == 2:
                    data["timings"]["draft_n"] = 0
                    data["timings"]["draft_n_accepted"] = 0
            out.append(json.dumps(data) if data else c)
        return out

    _steps, error = run("llamacpp-ngram", down)
    assert isinstance(error, ServerResponseError) and "went down" in str(error)


def test_vllm_figures_that_do_not_add_up_are_refused():
    def wrong(chunks):
        last = len([c for c in chunks if c != "[DONE]"]) - 1
        return edit_json(chunks, last, lambda d: d["metrics"]["speculative_decoding"].update(num_draft_tokens=5))

    _steps, error = run("vllm-ngram", wrong)
    assert isinstance(error, ServerResponseError)


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
def test_a_number_that_is_not_finite_is_refused(value):
    def nan(chunks):
        return [c.replace('"predicted_ms":', f'"predicted_ms":{value},"x":', 1) if i == 3 else c
                for i, c in enumerate(chunks)]  # fmt: skip

    _steps, error = run("llamacpp-plain", nan)
    assert isinstance(error, ServerResponseError) and value in str(error)


def test_malformed_json_is_refused():
    _steps, error = run("llamacpp-plain", lambda c: c[:3] + ['{"content": "x", '] + c[3:])
    assert isinstance(error, ServerResponseError) and "malformed JSON" in str(error)


def test_a_huge_line_is_refused_without_reading_it_all():
    sent = 0

    def stream(request):
        if request.url.path != "/completion":
            return None

        def body():
            nonlocal sent
            yield b'data: {"content": "'
            piece = b"x" * 2**20
            for _ in range(100):  # 100 MiB, never ending its line
                sent += len(piece)
                yield piece

        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    _steps, error = run("llamacpp-plain", handler=stream)
    assert isinstance(error, ServerResponseError) and "MiB" in str(error)
    assert sent <= MAX_LINE_BYTES + 2**20


# --- failures of the server or the network ----------------------------------------------------


def test_a_refused_connection_is_one_sentence_and_exit_2(capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = main(["generate", "--server", f"http://127.0.0.1:{port}", "--prompt", "hi"])
    err = capsys.readouterr().err
    assert code == 2 and "Could not connect" in err and err.count("\n") == 1


def test_a_url_that_is_not_http_is_refused_by_the_cli(capsys):
    code = main(["generate", "--server", "file:///etc/passwd", "--prompt", "hi"])
    assert code == 2 and "http:// or https://" in capsys.readouterr().err


def test_a_wrong_model_name_names_the_models_served():
    info = ServerInfo("vllm", URL, "0.32.0", ("smollm2",))
    with pytest.raises(ServerError, match="serves no model 'gpt-5'.*smollm2"):
        choose_model(info, "gpt-5")


def test_a_server_error_carries_the_servers_message_as_plain_text():
    def fail(request):
        if request.url.path == "/completion":
            return httpx.Response(500, json={"error": {"message": "out of\n KV \x1b[31mcache"}})
        return None

    _steps, error = run("llamacpp-plain", handler=fail)
    assert "(500)" in str(error) and "out of KV" in str(error) and "\n" not in str(error)


def test_a_dropped_stream_keeps_what_came_and_says_so():
    def drop(request):
        if request.url.path != "/completion":
            return None
        text = recording("llamacpp-plain")["exchanges"][-1]["text"]

        def body():
            yield text[: len(text) // 2].encode()
            raise httpx.RemoteProtocolError("peer closed connection")

        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    steps, error = run("llamacpp-plain", handler=drop)
    assert "dropped the connection" in str(error)
    assert sum(len(s.tokens) for s in steps) > 5  # shown as they came, not lost


def test_a_silent_server_times_out_with_a_message():
    def slow(request):
        if request.url.path == "/completion":
            raise httpx.ReadTimeout("timed out", request=request)
        return None

    _steps, error = run("llamacpp-plain", handler=slow)
    assert "stopped answering" in str(error)


def test_an_error_inside_the_stream_is_the_servers_message():
    def error_chunk(chunks):
        return chunks[:4] + [json.dumps({"error": {"code": 500, "message": "slot failed"}})]

    steps, error = run("llamacpp-plain", error_chunk)
    assert "slot failed" in str(error) and steps


def test_the_cli_reports_a_server_failure_in_one_line_exit_2(capsys, monkeypatch):
    transport = replay_transport("llamacpp-plain", lambda c: c[:3] + ["{bad json"])
    real = ServerClient.__init__

    def with_replay(self, base_url, api_key=None, **kwargs):
        real(self, base_url, api_key, read_timeout_s=kwargs.get("read_timeout_s", 120), transport=transport)

    monkeypatch.setattr(ServerClient, "__init__", with_replay)
    code = main(["generate", "--server", "http://server", "--prompt", "hi"])
    captured = capsys.readouterr()
    assert code == 2 and "malformed JSON" in captured.err and captured.err.count("specchat: error") == 1


def test_a_cancelled_answer_keeps_its_tokens():
    import threading

    session = replay_session("llamacpp-plain")
    cancel = threading.Event()
    seen = []
    for step in session.stream(recording("llamacpp-plain")["prompt"], CONFIG, cancel):
        seen.append(step)
        if len(seen) == 5:
            cancel.set()
    assert seen[-1].stop_reason == "cancelled" and sum(len(s.tokens) for s in seen) >= 4


def test_sse_chunks_of_a_recording_parse():
    chunks = sse_chunks(recording("vllm-ngram")["exchanges"][-1]["text"])
    assert chunks[-1] == "[DONE]" and all(json.loads(c) for c in chunks[:-1])


def test_a_session_refuses_to_pick_a_drafter():
    session = ServerSession(ServerClient(URL, transport=replay_transport("llamacpp-plain")),
                            ServerInfo("llama.cpp", URL, None, ("m",)), "m")  # fmt: skip
    with pytest.raises(Exception, match="chooses its own drafter"):
        next(session.stream("hi", CONFIG, options=AnswerOptions(drafter_choice="lookup")))


def test_a_connection_cut_after_the_last_chunk_is_no_failure():
    """llama.cpp's /completion sends no [DONE]: once its chunk with "stop": true has come, the
    answer is complete, whatever happens to the connection after it (seen on a loaded machine)."""

    def cut_after_the_end(request):
        if request.url.path != "/completion":
            return None
        text = recording("llamacpp-plain")["exchanges"][-1]["text"]

        def body():
            yield text.encode()
            raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")

        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    steps, error = run("llamacpp-plain", handler=cut_after_the_end)
    assert error is None
    assert steps[-1].stop_reason == "max_new_tokens" and sum(len(s.tokens) for s in steps) == 40
