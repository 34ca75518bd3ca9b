"""HTTP and server-sent events to one server, over httpx (the SSE lines through httpx-sse's
decoders, with a bound on their length). Every failure is one ``ServerError`` sentence.

Safe by default: only the base URL the person gave (``urls.server_url``) is contacted; no
redirect is followed and no proxy or ``.netrc`` is taken from the environment
(``trust_env=False``); the API key goes in the ``Authorization`` header and nowhere else.
JSON is strict: ``NaN`` and ``Infinity`` are refused, and so is any line or body over
``MAX_LINE_BYTES``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Generator, Iterator
from typing import Any

import httpx
from httpx_sse import SSEError
from httpx_sse._decoders import SSEDecoder, SSELineDecoder  # the library's own SSE parsing

from app.remote.errors import ServerError, ServerResponseError

MAX_LINE_BYTES = 8 * 1024 * 1024  # one JSON body or one event: far above any real chunk
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 120.0  # a silent server this long is gone (a first token on a big model included)


def strict_json(text: str, what: str) -> Any:
    """``text`` as JSON, refusing non-finite numbers (``NaN``, ``Infinity``)."""

    def refuse(name: str) -> Any:
        raise ServerResponseError(f"The server sent {name} in {what}: SpecChat shows no such number.")

    try:
        return json.loads(text, parse_constant=refuse)
    except ValueError as exc:
        if isinstance(exc, ServerResponseError):
            raise
        raise ServerResponseError(f"The server sent malformed JSON in {what} ({exc}).") from None
    except RecursionError:
        raise ServerResponseError(f"The server sent JSON nested too deep in {what}.") from None


class ServerClient:
    """One server at ``base_url`` (http(s)://host:port[/prefix], without ``/v1``)."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        read_timeout_s: float = READ_TIMEOUT_S,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(
            base_url=base_url,
            headers=headers,
            timeout=httpx.Timeout(read_timeout_s, connect=CONNECT_TIMEOUT_S),
            follow_redirects=False,
            trust_env=False,
            transport=transport,
            # a fresh connection per request: a kept-alive one the server has closed meanwhile
            # would fail the next request
            limits=httpx.Limits(max_keepalive_connections=0),
        )
        self.read_timeout_s = read_timeout_s

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ServerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- requests ---------------------------------------------------------------------
    def get_json(self, path: str, *, missing_ok: bool = False) -> Any:
        """The JSON at ``path``; None when ``missing_ok`` and the server has no such path."""
        with self._request("GET", path, None, missing_ok=missing_ok) as response:
            if response is None:
                return None
            return strict_json(self._body(response), f"the answer to {path}")

    def post_json(self, path: str, body: dict[str, Any]) -> Any:
        with self._request("POST", path, body) as response:
            assert response is not None
            return strict_json(self._body(response), f"the answer to {path}")

    def stream(
        self, path: str, body: dict[str, Any], cancel: threading.Event | None = None
    ) -> Generator[dict[str, Any], None, None]:
        """POST ``body`` and yield each server-sent event's JSON until ``[DONE]`` or the end;
        stops quietly (closing the connection, so the server stops too) once ``cancel`` is set.
        A caller that has read the answer's last chunk closes the generator: what the server
        does with the connection after it is no failure."""
        with self._request("POST", path, body, accept="text/event-stream") as response:
            assert response is not None
            kind = response.headers.get("content-type", "").partition(";")[0].strip()
            if kind != "text/event-stream":
                yield strict_json(self._body(response), f"the answer to {path}")  # an error object, or no stream
                return
            for data in self._events(response):
                if data == "[DONE]":
                    return
                chunk = strict_json(data, "a streamed chunk")
                if not isinstance(chunk, dict):
                    raise ServerResponseError("The server streamed a chunk that is not a JSON object.")
                yield chunk
                if cancel is not None and cancel.is_set():
                    return

    # ---- the wire ---------------------------------------------------------------------
    def _request(
        self, method: str, path: str, body: dict[str, Any] | None, *, missing_ok: bool = False, accept: str = ""
    ) -> _Response:
        return _Response(self, method, path, body, missing_ok, accept)

    def _body(self, response: httpx.Response) -> str:
        data = bytearray()
        try:
            for part in response.iter_bytes():
                data += part
                if len(data) > MAX_LINE_BYTES:
                    raise ServerResponseError(
                        f"The server's answer is over {MAX_LINE_BYTES // 2**20} MiB: SpecChat does not read it."
                    )
        except httpx.HTTPError as exc:
            raise self.failure(exc) from None
        return data.decode("utf-8", "replace")

    def _events(self, response: httpx.Response) -> Iterator[str]:
        lines, events = SSELineDecoder(), SSEDecoder()
        try:
            for text in response.iter_text():
                if sum(map(len, lines.buffer)) + len(text) > MAX_LINE_BYTES:
                    raise ServerResponseError(
                        f"The server streamed a line over {MAX_LINE_BYTES // 2**20} MiB: SpecChat stopped reading."
                    )
                for line in lines.decode(text):
                    event = events.decode(line)
                    if event is not None and event.data:
                        yield event.data
            for line in lines.flush():
                event = events.decode(line)
                if event is not None and event.data:
                    yield event.data
        except (httpx.HTTPError, SSEError) as exc:
            raise self.failure(exc) from None

    def failure(self, exc: Exception) -> ServerError:
        """One sentence for a transport failure."""
        where = self.base_url
        if isinstance(exc, httpx.ConnectTimeout):
            return ServerError(f"The server at {where} did not accept the connection within {CONNECT_TIMEOUT_S:g} s.")
        if isinstance(exc, httpx.ConnectError):
            return ServerError(f"Could not connect to {where}: is the server running there? ({_reason(exc)})")
        if isinstance(exc, httpx.TimeoutException):
            return ServerError(f"The server at {where} stopped answering for {self.read_timeout_s:g} s.")
        if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError)):
            return ServerError(f"The server at {where} dropped the connection before the answer ended.")
        return ServerError(f"Talking to the server at {where} failed: {_reason(exc)}")


class _Response:
    """A request as a context manager: the response (None for a missing path when allowed),
    closed afterwards; HTTP errors become ``ServerError`` with the server's own message."""

    def __init__(
        self, client: ServerClient, method: str, path: str, body: dict[str, Any] | None, missing_ok: bool, accept: str
    ) -> None:
        self.client, self.method, self.path, self.body = client, method, path, body
        self.missing_ok, self.accept = missing_ok, accept
        self._context: Any = None

    def __enter__(self) -> httpx.Response | None:
        headers = {"Accept": self.accept} if self.accept else {}
        http = self.client._http
        try:
            self._context = http.stream(self.method, self.path, json=self.body, headers=headers)
            response: httpx.Response = self._context.__enter__()
        except httpx.HTTPError as exc:
            raise self.client.failure(exc) from None
        if response.status_code < 300:
            return response
        if response.status_code in (404, 405, 501) and self.missing_ok:
            return None  # closed on exit
        error = self._refusal(response)
        self.__exit__()
        raise error

    def __exit__(self, *exc: object) -> None:
        if self._context is not None:
            self._context.__exit__(None, None, None)

    def _refusal(self, response: httpx.Response) -> ServerError:
        where = self.client.base_url
        if response.is_redirect:
            return ServerError(
                f"The server at {where} redirects {self.path} elsewhere "
                f"({response.headers.get('location', '?')}): SpecChat only talks to the URL you gave."
            )
        status = response.status_code
        if status in (401, 403):
            return ServerError(
                f"The server at {where} refused the request ({status}): it wants an API key "
                "(name the environment variable that holds it with --api-key-env) or refused the one sent."
            )
        try:
            detail = server_message(strict_json(self.client._body(response), "an error"))
        except ServerError:
            detail = ""
        return ServerError(f"The server at {where} refused {self.path} ({status}){': ' + detail if detail else '.'}")


def server_message(data: Any) -> str:
    """The message of an OpenAI-style error object ({"error": {"message": …}}), as plain
    text of at most 300 characters; "" when there is none."""
    error = data.get("error") if isinstance(data, dict) else None
    message = error.get("message") if isinstance(error, dict) else error if isinstance(error, str) else None
    if message is None and isinstance(data, dict):
        message = data.get("message") or data.get("detail")
    if not isinstance(message, str):
        return ""
    message = " ".join(message.split())
    return message if len(message) <= 300 else message[:299] + "…"


def _reason(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return text[:200] if text else type(exc).__name__
