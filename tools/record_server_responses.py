"""Record a real server's answers for the unit tests to replay (tests/data/servers/*.json).

    python tools/record_server_responses.py --server http://127.0.0.1:8080 --name llamacpp-ngram \
        [--model NAME] [--prompt TEXT] [--max-new-tokens 48] [--fixed-length]

Everything SpecChat's client says to the server and hears back goes into the file, byte for
byte: the detection requests (``/v1/models``, ``/props``, ``/version``) and one streamed chat
answer. The replay (tests/test_remote_replay.py) serves them through ``httpx.MockTransport``,
so the whole client — SSE decoding, the dialect, the step builder — runs on a real answer.
The server's URL is written as ``http://server`` and the home folder as ``~``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

from app.engine.config import GenerationConfig
from app.remote.chat import RequestOptions
from app.remote.client import ServerClient
from app.remote.detect import choose_model, detect
from app.remote.session import ServerSession
from app.remote.urls import server_url

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "servers"
PROMPT = "List the days of the week, one per line, then list them again in the same order."


class RecordingTransport(httpx.BaseTransport):
    """Passes every request on and keeps it with its whole response."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.exchanges: list[dict[str, Any]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        content = response.read()
        body = json.loads(request.content) if request.content else None
        self.exchanges.append(
            {
                "method": request.method,
                "path": request.url.path,
                "request": body,
                "status": response.status_code,
                "content_type": response.headers.get("content-type", ""),
                "text": content.decode("utf-8"),
            }
        )
        return httpx.Response(response.status_code, headers=response.headers, content=content)


def record(url: str, name: str, model: str | None, prompt: str, max_new_tokens: int, fixed: bool) -> Path:
    transport = RecordingTransport()
    client = ServerClient(server_url(url), transport=transport)
    info = detect(client)
    options = RequestOptions(fixed_length=fixed, prompt_cache=not fixed)
    session = ServerSession(client, info, choose_model(info, model), options)
    result = session.generate(prompt, GenerationConfig(max_new_tokens=max_new_tokens))
    figures = session.last_figures
    path = DATA / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "recorded_with": "tools/record_server_responses.py",
        "server": info.describe().replace(info.url, "http://server"),
        "prompt": prompt,
        "max_new_tokens": max_new_tokens,
        "fixed_length": fixed,
        "expected": {
            "text": result.text,
            "drafted": None if figures is None else figures.drafted,
            "accepted": None if figures is None else figures.accepted,
        },
        "exchanges": transport.exchanges,
    }
    text = json.dumps(data, ensure_ascii=False, indent=1).replace(info.url, "http://server")
    text = text.replace(str(Path.home()), "~")  # vLLM names its model folder
    path.write_text(text + "\n", encoding="utf-8")
    client.close()
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", required=True)
    parser.add_argument("--name", required=True, help="the file name under tests/data/servers")
    parser.add_argument("--model")
    parser.add_argument("--prompt", default=PROMPT)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--fixed-length", action="store_true", help="ignore_eos and no prompt cache, as compare asks")
    args = parser.parse_args()
    path = record(args.server, args.name, args.model, args.prompt, args.max_new_tokens, args.fixed_length)
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
